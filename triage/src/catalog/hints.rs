//! What a scan returns: [`Hints`], the catalog's verdict with its evidence, and what it gets:
//! [`ScanContext`], the exit code and scheduler state beside the text.
//!
//! The JSON is DESIGN.md's `hints` shape (`verdict`, `category`, `action`, `matches` with `id`,
//! `class`, `category`, `line`, `text`), extended with `strategy`, `hint` and `evidence` (the
//! match that decided). Consumers must ignore fields they do not know.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Attempt, EntryClass, SchedulerState, Strategy, SuggestedAction, Verdict};

/// What is known about the attempt besides its stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ScanContext {
    /// The process exit status (128+N for signal N as a shell reports it; negative -N where
    /// a runtime reports the signal that way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// What the batch scheduler said about the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_state: Option<SchedulerState>,
}

impl ScanContext {
    /// A context with only an exit code.
    pub fn exit_code(code: i64) -> ScanContext {
        ScanContext { exit_code: Some(code), scheduler_state: None }
    }

    /// The context of a finished attempt: its scheduler state, and its exit code, as 128+N
    /// when the attempt records that signal N killed it (the shell's convention, which the
    /// catalog's exit-code entries use).
    pub fn from_attempt(attempt: &Attempt) -> ScanContext {
        ScanContext { exit_code: Some(attempt.exit_status()), scheduler_state: attempt.scheduler_state }
    }

    /// A context with only a scheduler state.
    pub fn scheduler_state(state: SchedulerState) -> ScanContext {
        ScanContext { exit_code: None, scheduler_state: Some(state) }
    }
}

/// One catalog entry that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HintMatch {
    /// The entry's id (shared with the entry, as is the category: a scan lists up to
    /// [`Hints::MAX_MATCHES`] matches, and copying two strings for each was a few per cent of
    /// a short tail's scan).
    pub id: Arc<str>,
    /// The entry's class (`context` entries inform, they do not decide).
    pub class: EntryClass,
    /// The entry's category.
    pub category: Arc<str>,
    /// 1-based line of the text that matched; 0 for a match on exit code or scheduler state
    /// alone.
    pub line: usize,
    /// The matching line, trimmed and cut to about 300 characters; for a line-0 match, what
    /// matched (e.g. `exit code 137`).
    pub text: String,
    /// Set when the exit code or scheduler state agreed with a text match (e.g.
    /// `exit code 127`): such a match is specific and outranks text-only ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<String>,
}

/// The catalog's reading of one failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hints {
    /// `transient`, `permanent`, or `unknown` (no match, or only `context` entries decided).
    pub verdict: Verdict,
    /// The deciding entry's category (also set for `unknown` when a context entry decided).
    pub category: Option<String>,
    /// The deciding entry's suggested action.
    pub action: Option<SuggestedAction>,
    /// The deciding entry's recovery strategy (seed 002 names).
    pub strategy: Option<Strategy>,
    /// The deciding entry's hint for the agent: what it means and what to check.
    pub hint: Option<String>,
    /// The match that decided, or null when nothing matched.
    pub evidence: Option<HintMatch>,
    /// The matches, in line order (line-0 matches first): per entry its last
    /// [`Hints::MAX_LINES_PER_ENTRY`] lines, at most [`Hints::MAX_MATCHES`] in all (the
    /// latest kept); the deciding match is always kept.
    pub matches: Vec<HintMatch>,
}

impl Hints {
    /// At most this many matches are listed.
    pub const MAX_MATCHES: usize = 50;
    /// At most this many lines are listed per entry (its last ones).
    pub const MAX_LINES_PER_ENTRY: usize = 5;
    /// A listed line is cut to this many characters.
    pub const MAX_TEXT_CHARS: usize = 300;

    /// Nothing matched.
    pub fn unknown() -> Hints {
        Hints {
            verdict: Verdict::Unknown,
            category: None,
            action: None,
            strategy: None,
            hint: None,
            evidence: None,
            matches: Vec::new(),
        }
    }
}

/// Trim a line and cut it to [`Hints::MAX_TEXT_CHARS`] characters (marking the cut).
pub(crate) fn excerpt(line: &str) -> String {
    let t = line.trim();
    if t.len() <= Hints::MAX_TEXT_CHARS {
        // No more characters than bytes: nothing to cut, and no need to count them.
        return t.to_string();
    }
    match t.char_indices().nth(Hints::MAX_TEXT_CHARS) {
        None => t.to_string(),
        Some((cut, _)) => format!("{}…", &t[..cut]),
    }
}
