//! A workflow rule's missing output weighed by how long the engine waited for it.
//!
//! Snakemake reports `MissingOutputException ... Missing files after N seconds. This might be
//! due to filesystem latency.` The wait is the evidence:
//!
//! - After a short wait (up to [`SHORT_WAIT_SECS`], the default is 5 s) a shared filesystem
//!   may simply not have shown the file yet, or the command wrote nothing: the wait is too
//!   short to tell them apart. Context (unknown), with the test that does: retry once with a
//!   longer `--latency-wait`.
//! - After a long wait (at least [`LONG_WAIT_SECS`]) latency is ruled out: the rule's command
//!   did not write what the rule declares (a wrong path or name, a tool that silently did
//!   nothing). Permanent, despite the latency hint in the message.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const SHORT: &str = "missing-output/short-latency-wait";
const LONG: &str = "missing-output/not-written";

const SHORT_WAIT_SECS: u64 = 10;
const LONG_WAIT_SECS: u64 = 60;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: SHORT,
        class: EntryClass::Context,
        category: "filesystem_latency",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 10,
        hint: "The workflow engine waited only a few seconds for the rule's output: a shared filesystem may \
               not have shown it yet, or the command wrote nothing, and a wait this short cannot tell them \
               apart. Retry once with a longer latency wait (--latency-wait 60); if the file is still \
               missing, the command did not write it (fix the rule or the command).",
    },
    Outcome {
        id: LONG,
        class: EntryClass::Permanent,
        category: "workflow_bug",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 10,
        hint: "The workflow engine waited a minute or more and the rule's declared output never appeared: \
               not latency, but a command that writes elsewhere, under another name, or nothing at all. \
               Fix the rule or the command; a retry ends the same way.",
    },
];

static TRIGGERS: &[&str] = &[r"(?i)\bMissing files after \d+ seconds\b"];

static WAIT: Lazy = Lazy::new(|| re(r"(?i)\bMissing files after (\d+) seconds\b"));

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let &i = input.woken.last()?;
    let secs: u64 = WAIT.captures(input.lines.get(i)?)?.get(1)?.as_str().parse().ok()?;
    let id = if secs <= SHORT_WAIT_SECS {
        SHORT
    } else if secs >= LONG_WAIT_SECS {
        LONG
    } else {
        return None;
    };
    Some(Finding::text(OUTCOMES, id, i))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&WAIT],
    analyze,
    examples: &[
        Example {
            text: "MissingOutputException in rule make_image:\nJob 8 completed successfully, but some output files are missing.\nMissing files after 5 seconds:\noutput/venv.squashfs",
            exit_code: None,
            expect: Some(SHORT),
        },
        Example {
            text: "Job 0 completed successfully, but some output files are missing. Missing files after 600 seconds. This might be due to filesystem latency.",
            exit_code: Some(1),
            expect: Some(LONG),
        },
        Example { text: "Missing files after 30 seconds:", exit_code: None, expect: None },
    ],
};
