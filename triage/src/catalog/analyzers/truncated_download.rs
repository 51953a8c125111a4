//! A hash or size check that failed on a download the text shows was cut short.
//!
//! A bare hash mismatch (`THESE PACKAGES DO NOT MATCH THE HASHES`) is ambiguous: a transfer cut
//! short passes on a fresh download, a wrong pinned hash or a mirror serving another file fails
//! every time (the `corrupt-or-truncated-file` context entry). The numbers can settle it:
//!
//! - pip's progress bar just above the error stopped short of the file's size (`13.4/49.4 MB
//!   ... eta 0:00:03`): the file pip hashed is a truncated transfer. Transient.
//! - Hugging Face's `file should be of size N but has size M` with `0 < M < N`: the same.
//!
//! A bar that reached the full size, or a size check whose expected size is 0 or below what
//! arrived (wrong metadata, not a cut transfer), gives no finding.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const CUT: &str = "truncated-download/cut-short";

static OUTCOMES: &[Outcome] = &[Outcome {
    id: CUT,
    class: EntryClass::Transient,
    category: "download_truncated",
    action: SuggestedAction::Retry,
    strategy: Strategy::RetryExponential,
    priority: 20,
    hint: "The hash or size check failed on a download that the log shows stopped short of the file's \
           full size: a transfer cut mid-way, not a tampered or wrong file. Retry with a fresh download \
           (no cache, e.g. pip --no-cache-dir or force_download=True), with more retries for large files.",
}];

const HASH_RE: &str = r"(?i)\bDO NOT MATCH THE HASHES\b";
const PROGRESS_RE: &str = r"\b(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) (?:kB|MB|GB)\b[ -~]*\beta \d";
const SIZE_RE: &str = r"(?i)\bfile should be of size (\d+) but has size (\d+)";

/// The analyzer wakes on the lines its own regexes read.
static TRIGGERS: &[&str] = &[HASH_RE, PROGRESS_RE, SIZE_RE];

static HASH: Lazy = Lazy::new(|| re(HASH_RE));
static PROGRESS: Lazy = Lazy::new(|| re(PROGRESS_RE));
static SIZE: Lazy = Lazy::new(|| re(SIZE_RE));

/// How far above the hash error pip's last progress line may be.
const PROGRESS_WITHIN: usize = 10;

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let &f = input.woken.iter().rev().find(|&&i| HASH.is_match(input.line(i)) || SIZE.is_match(input.line(i)))?;
    let cut = if let Some(c) = SIZE.captures(input.line(f)) {
        let expected: u64 = c.get(1)?.as_str().parse().ok()?;
        let got: u64 = c.get(2)?.as_str().parse().ok()?;
        expected > 0 && got < expected
    } else {
        let &p = input
            .woken
            .iter()
            .rev()
            .find(|&&i| i < f && f - i <= PROGRESS_WITHIN && PROGRESS.is_match(input.line(i)))?;
        let c = PROGRESS.captures(input.line(p))?;
        let done: f64 = c.get(1)?.as_str().parse().ok()?;
        let total: f64 = c.get(2)?.as_str().parse().ok()?;
        done < total
    };
    cut.then(|| Finding::text(OUTCOMES, CUT, f))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&HASH, &PROGRESS, &SIZE],
    analyze,
    examples: &[
        Example {
            text: "Downloading timezonefinder-6.5.2.tar.gz (49.4 MB)\n   13.4/49.4 MB 12.0 MB/s eta 0:00:03\n\
                   ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n\
                   Expected sha256 3279e67d\n     Got        7087087d",
            exit_code: Some(1),
            expect: Some(CUT),
        },
        Example {
            text: "OSError: Consistency check failed: file should be of size 492265168 but has size 447786685 (model.safetensors).",
            exit_code: None,
            expect: Some(CUT),
        },
        // The bar reached the full size: the file itself differs.
        Example {
            text: "   49.4/49.4 MB 12.0 MB/s eta 0:00:00\nERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
            exit_code: Some(1),
            expect: None,
        },
        // No progress shown: the entries decide (unknown).
        Example {
            text: "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
            exit_code: None,
            expect: None,
        },
        // Expected size 0: wrong metadata, not a cut transfer.
        Example {
            text: "OSError: Consistency check failed: file should be of size 0 but has size 6226 (x.py).",
            exit_code: None,
            expect: None,
        },
    ],
};
