//! What a classification is: the agent's (or the catalog's) answer about one failed job.
//!
//! `Action` is what may be applied (retry or fail). `Verdict` is what the catalog concludes
//! from the evidence; `SuggestedAction` and `Strategy` are the catalog's advice, shown to the
//! agent and to the person reviewing a plan.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to do with a pending_failed job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Back to `ready` with attempt_id + 1 (optionally with more memory or time).
    Retry,
    /// To `failed`; jobs that depend on it are canceled.
    Fail,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Fail => "fail",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The catalog's conclusion about a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Re-running will very likely succeed (maybe with more memory or time).
    Transient,
    /// Re-running will fail the same way.
    Permanent,
    /// The evidence does not decide; a person (or the agent, with context) must.
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Transient => "transient",
            Verdict::Permanent => "permanent",
            Verdict::Unknown => "unknown",
        }
    }
}

/// What the catalog suggests doing about a failure it recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuggestedAction {
    Retry,
    RetryMoreMemory,
    RetryMoreTime,
    Fail,
    Escalate,
}

impl SuggestedAction {
    /// The applicable action this suggestion maps to, if it maps to one.
    pub fn action(self) -> Option<Action> {
        match self {
            SuggestedAction::Retry | SuggestedAction::RetryMoreMemory | SuggestedAction::RetryMoreTime => {
                Some(Action::Retry)
            }
            SuggestedAction::Fail => Some(Action::Fail),
            SuggestedAction::Escalate => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SuggestedAction::Retry => "retry",
            SuggestedAction::RetryMoreMemory => "retry_more_memory",
            SuggestedAction::RetryMoreTime => "retry_more_time",
            SuggestedAction::Fail => "fail",
            SuggestedAction::Escalate => "escalate",
        }
    }
}

/// A recovery strategy from the taxonomy of seed 002. Advice only: triage applies a retry or a
/// fail, it never sleeps before a retry (no backend has a not-before field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    RetryImmediate,
    RetryExponential,
    RetryWithJitter,
    Fallback,
    CircuitBreaker,
    Skip,
    Abort,
    Escalate,
    CheckpointRestore,
    ManualIntervention,
}

/// How a catalog entry classes the failures it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryClass {
    Transient,
    Permanent,
    /// Worth pointing out, but decides nothing (e.g. "exit 137: killed, often OOM").
    Context,
}

impl EntryClass {
    pub fn verdict(self) -> Verdict {
        match self {
            EntryClass::Transient => Verdict::Transient,
            EntryClass::Permanent => Verdict::Permanent,
            EntryClass::Context => Verdict::Unknown,
        }
    }
}

/// One proposal for one job (or for every job of a failure signature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Classification {
    /// The job to act on. Give this or `signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    /// A failure signature from `list_pending_failed_jobs`: acts on every pending_failed job of
    /// that group. Give this or `job_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// `retry` or `fail`.
    pub action: Action,
    /// New memory for the retry, e.g. `16g`; must be larger than the current request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// New runtime for the retry, ISO-8601 like `PT4H`; must be longer than the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// How sure the proposer is, 0 to 1. Below the policy's minimum the job needs review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why: kept in the audit trail.
    pub reason: String,
    /// The attempt the proposer looked at; a job that has moved past it is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<u32>,
    /// Apply even if the catalog disagrees (honoured only where overrides are allowed).
    #[serde(default, rename = "override", skip_serializing_if = "std::ops::Not::not")]
    pub override_catalog: bool,
}
