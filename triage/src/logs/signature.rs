//! Failure signatures: a stable fingerprint of a stderr tail, so that the thousands of jobs that
//! died the same way share one signature (and one explanation by the agent).
//!
//! How a tail becomes a signature:
//! 1. each line is normalized ([`normalize_line`]: times, ranks, hosts, ids, per-job paths,
//!    sizes folded); empty lines and progress bars are dropped, and a line seen again is kept
//!    once, at its last place (eight ranks printing the same error count once);
//! 2. the **region** is the last [`REGION_LINES`] lines left, scanning from the end;
//! 3. the **key lines** are the region's lines that carry the failure: errors, exceptions,
//!    resource and scheduler verdicts, launcher trailers, and traceback frames (which say where
//!    the error was raised). Other lines (progress, chatter, warnings) vary between jobs that
//!    died the same way, so they are left out, unless the region has no key line at all: then
//!    the whole region is hashed, with the exit code, since the output says little and the exit
//!    code (1, 137, 143) says more (an empty tail is just that case: `no stderr` + exit code);
//! 4. the key lines, joined, are hashed with 64-bit FNV-1a (a fixed, documented algorithm, so a
//!    signature is the same across runs, machines and Rust versions) behind a version tag.
//!
//! Each thread remembers what the lines it met normalized to (by a key in which digits are
//! alike, or by the line itself when a digit's value may matter) and the kind of each
//! normalized line, up to [`CACHED_LINES`] of each: the jobs of a workflow print the same lines
//! with other numbers, so most lines of a tail were met in an earlier tail. The cache holds results of pure functions
//! of its keys, so it changes the time a signature takes, never the signature.
//!
//! The **summary** (a group's title) is the most telling key line: a resource or scheduler
//! verdict (OOM, time limit, cancellation) first, then an exception, then any error, and a
//! launcher trailer (`srun: error: … Exited with exit code 1`) only when nothing else is there.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::rc::Rc;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::normalize::{digit_key, fold_noise, may_keep_a_number, shape_key, terminal_text};
use super::rule::{Rule, rule};

/// How many distinct normalized lines, from the end, a signature looks at.
pub const REGION_LINES: usize = 8;
/// At most this many lines are read back from the end of a tail to fill the region.
const MAX_SCANNED_LINES: usize = 5000;
/// Hashed before the lines: change it when the rules change, so old and new signatures differ.
const VERSION_TAG: &str = "triage-signature-v1";
/// The summary is cut to this many characters.
const SUMMARY_CHARS: usize = 200;

/// A failure signature, `sig-` and 16 lowercase hex digits, e.g. `sig-1a2b3c4d5e6f7a8b`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Signature(String);

impl Signature {
    /// The signature as text, e.g. `sig-1a2b3c4d5e6f7a8b`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_hash(hash: u64) -> Self {
        Signature(format!("sig-{hash:016x}"))
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A text that is not a signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid failure signature {0:?}: expected `sig-` and 16 lowercase hex digits, e.g. \
     `sig-1a2b3c4d5e6f7a8b`; use a signature exactly as list_pending_failed_jobs printed it"
)]
pub struct SignatureError(pub String);

impl FromStr for Signature {
    type Err = SignatureError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s.strip_prefix("sig-").unwrap_or("");
        if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(Signature(s.to_owned()))
        } else {
            Err(SignatureError(s.to_owned()))
        }
    }
}

impl Serialize for Signature {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Signature {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Signature {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Signature".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A failure signature: jobs whose stderr tails differ only in noise share it.",
            "pattern": "^sig-[0-9a-f]{16}$"
        })
    }
}

/// A tail's signature, with what it was computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Fingerprint {
    /// The signature.
    pub signature: Signature,
    /// The most telling normalized line, a title for the group (`no stderr` for an empty tail).
    pub summary: String,
    /// The normalized lines that were hashed, oldest first.
    pub key_lines: Vec<String>,
}

/// The signature of a stderr tail (see the module documentation).
pub fn signature(tail: &str) -> Signature {
    fingerprint(tail, None).signature
}

/// The signature of a stderr tail, with the exit code mixed in when the tail has no error line
/// (an empty tail included): a silent exit 137 is not a silent exit 1.
pub fn signature_with(tail: &str, exit_code: Option<i64>) -> Signature {
    fingerprint(tail, exit_code).signature
}

/// The most telling normalized line of a tail, e.g. `ModuleNotFoundError: No module named <str>`,
/// to title a group of jobs; `no stderr` for an empty tail.
pub fn signature_summary(tail: &str) -> String {
    fingerprint(tail, None).summary
}

/// Signature, summary and key lines in one pass (what grouping needs).
pub fn fingerprint(tail: &str, exit_code: Option<i64>) -> Fingerprint {
    let region = region(tail);
    let kinds: Vec<Kind> = region.iter().map(|l| cached_kind(l)).collect();
    let has_key = kinds.iter().any(|&k| k >= Kind::Context);
    let key_lines: Vec<String> =
        region.iter().zip(&kinds).filter(|&(_, &k)| !has_key || k >= Kind::Context).map(|(l, _)| l.clone()).collect();
    let mut hash = Fnv1a::new();
    hash.write(VERSION_TAG);
    for line in &key_lines {
        hash.write("\n");
        hash.write(line);
    }
    if !has_key {
        match exit_code {
            Some(code) => hash.write(&format!("\nexit={code}")),
            None => hash.write("\nexit=unknown"),
        }
    }
    let summary = match region.iter().zip(&kinds).max_by_key(|&(_, &k)| k) {
        None => "no stderr".to_owned(),
        Some((line, _)) => cut_chars(line, SUMMARY_CHARS),
    };
    Fingerprint { signature: Signature::from_hash(hash.0), summary, key_lines }
}

/// The last [`REGION_LINES`] distinct normalized lines, oldest first, without progress bars.
fn region(tail: &str) -> Vec<String> {
    // The region's lines so far (a few: a list beats a hash set).
    let mut seen: Vec<Rc<str>> = Vec::with_capacity(REGION_LINES);
    // Lines that differ only in digit values normalize alike: skip the normalization of a
    // shape already met (a log's counters and timestamps make most of its lines such repeats).
    // A line with a `cache_key` needs no such skip: a line of its shape has its key, so it
    // would normalize to a line already met, and the per-thread cache answers it anyway.
    let mut seen_shapes = HashSet::new();
    let mut region = Vec::with_capacity(REGION_LINES);
    FOLDED.with_borrow_mut(|folded| {
        for raw in tail.lines().rev().take(MAX_SCANNED_LINES) {
            let text = terminal_text(raw);
            let digits = if text.len() > CACHED_LINE_BYTES { None } else { digit_key(&text) };
            let known = digits.as_ref().and_then(|key| folded.by_key.get(key).cloned());
            // Whether the line has a `cache_key`: a known key was checked when it was stored.
            let keyed = known.is_some() || digits.as_ref().is_some_and(|key| !may_keep_a_number(key));
            if !keyed
                && let Some(shape) = shape_key(raw)
                && !seen_shapes.insert(shape)
            {
                continue;
            }
            let folded_line = match known {
                Some(line) => line,
                None => folded.fold(text, digits.filter(|_| keyed)),
            };
            let Some(line) = folded_line else { continue };
            if seen.iter().any(|s| Rc::ptr_eq(s, &line) || **s == *line) {
                continue;
            }
            region.push(line.to_string());
            seen.push(line);
            if region.len() == REGION_LINES {
                break;
            }
        }
    });
    region.reverse();
    region
}

/// At most this many lines (or their keys) and normalized lines are remembered per thread.
const CACHED_LINES: usize = 8192;
/// Longer lines are not remembered (a tail's one line can be megabytes long).
const CACHED_LINE_BYTES: usize = 2048;

thread_local! {
    /// What lines normalized to, across the tails this thread fingerprinted.
    static FOLDED: RefCell<FoldedLines> = RefCell::new(FoldedLines::default());
    /// The kind of normalized lines, across the tails this thread fingerprinted.
    static KINDS: RefCell<HashMap<String, Kind>> = RefCell::new(HashMap::new());
}

/// Normalized lines by the cache key ([`digit_key`], checked with [`may_keep_a_number`]) of
/// their [`terminal_text`] (texts with one key normalize alike), or by that text for those
/// without one: the jobs of a workflow print the same lines with other numbers, tail after
/// tail.
#[derive(Default)]
struct FoldedLines {
    by_key: HashMap<Vec<u8>, Option<Rc<str>>>,
    by_text: HashMap<String, Option<Rc<str>>>,
}

impl FoldedLines {
    /// The normalized line of `text` (a line's [`terminal_text`], `key` its `cache_key`), now
    /// remembered; `None` for a line the region leaves out (empty, a progress bar).
    fn fold(&mut self, text: Cow<'_, str>, key: Option<Vec<u8>>) -> Option<Rc<str>> {
        let fold = |text: String| {
            let line = fold_noise(text);
            (!(line.is_empty() || PROGRESS.is_match(&line))).then(|| Rc::from(line))
        };
        if text.len() > CACHED_LINE_BYTES {
            return fold(text.into_owned());
        }
        if key.is_none()
            && let Some(folded) = self.by_text.get(text.as_ref())
        {
            return folded.clone();
        }
        if self.by_key.len() + self.by_text.len() >= CACHED_LINES {
            self.by_key.clear();
            self.by_text.clear();
        }
        match key {
            Some(key) => {
                let folded = fold(text.into_owned());
                self.by_key.insert(key, folded.clone());
                folded
            }
            None => {
                let folded = fold(text.to_string());
                self.by_text.insert(text.into_owned(), folded.clone());
                folded
            }
        }
    }
}

/// [`kind`], remembered per thread.
fn cached_kind(line: &str) -> Kind {
    KINDS.with_borrow_mut(|kinds| {
        if let Some(&k) = kinds.get(line) {
            return k;
        }
        let k = kind(line);
        if kinds.len() >= CACHED_LINES {
            kinds.clear();
        }
        kinds.insert(line.to_owned(), k);
        k
    })
}

/// What a normalized line says about the failure, least telling first. The summary is the last
/// line of the highest kind; lines of kind `Context` and above are hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Chatter,
    Context,
    Launcher,
    Error,
    Exception,
    Resource,
}

fn kind(line: &str) -> Kind {
    if STEP_CANCELLED.is_match(line) {
        // srun cancels the other tasks of a step when one fails: an echo, not the cause.
        Kind::Launcher
    } else if RESOURCE.is_match(line) {
        Kind::Resource
    } else if LAUNCHER.is_match(line) {
        Kind::Launcher
    } else if EXCEPTION.is_match(line) {
        Kind::Exception
    } else if ERROR.is_match(line) {
        Kind::Error
    } else if CONTEXT.is_match(line) {
        Kind::Context
    } else {
        Kind::Chatter
    }
}

static PROGRESS: Rule = rule!(r"<n>%\s*\||\[[=#>\-. ]{4,}\]|<n>(?:\.<n>)?\s*(?:it|s)/s\b");
static STEP_CANCELLED: Rule = rule!(r"(?i)\*\*\* step \S+ on \S+ cancelled at <ts> \*\*\*");
static LAUNCHER: Rule = rule!(
    r"(?i)exited with exit code|job step aborted|terminating job step|mpirun noticed|primary job\s+terminated|force terminated|one or more processes|has exited due to|^srun: error: .*(?:task|step)",
);
static RESOURCE: Rule = rule!(
    r"(?i)oom[-_ ]?kill|out[-_ ]of[-_ ]memory|\boom\b|\bcancell?ed\b|time limit|preempt|node[-_ ]fail|\bkilled\b|memory limit|exceeded .*memory|bus error|sigkill|sigbus|no space left",
);
static EXCEPTION: Rule = rule!(
    r"(?i)^(?:\S+\s)?[a-z_][\w.]*(?:error|exception|exit|interrupt|fault|failure)(?::|$)|panicked at|segmentation fault|core dumped|\bfatal\b|terminate called|\baborted\b|assertion .*failed|^error\b|\berror:",
);
static ERROR: Rule = rule!(
    r"(?i)\berrors?\b|[a-z](?:error|exception)s?\b|\bexceptions?\b|\bfail(?:ed|ures?|s)?\b|denied|refused|unreachable|timed? ?out|timeout|not found|no such|cannot|can't|unable|invalid|illegal|\babort|panic|signal",
);
static CONTEXT: Rule = rule!(r"^File <str>, line <n>, in |^Traceback \(most recent call last\)");

/// Compile every rule that sorts a line into its kind now (see [`crate::logs::warm_up`]).
pub(super) fn warm_up() {
    for rule in [&PROGRESS, &STEP_CANCELLED, &LAUNCHER, &RESOURCE, &EXCEPTION, &ERROR, &CONTEXT] {
        rule.warm_up();
    }
}

fn cut_chars(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// 64-bit FNV-1a: fixed constants, stable everywhere (unlike std's `DefaultHasher`).
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, text: &str) {
        for &b in text.as_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
