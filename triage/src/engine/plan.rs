//! The plan document: what was proposed for each job, what validation said, and what happened.
//!
//! Its JSON is a contract (DESIGN.md, `run --json`): `{"workflow_id", "dry_run", "agent",
//! "catalog_version", "jobs": [...], "events": [...], "summary": {...}}`. `triage run` writes it,
//! a person reviews it, `triage apply` re-checks and applies it.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::evidence::Evidence;
use super::proposal::Proposal;
use super::validate::Validation;
use crate::catalog::HintMatch;
use crate::model::{SuggestedAction, Verdict};

/// The plan format this build writes and reads.
pub const PLAN_FORMAT_VERSION: u32 = 1;

/// What happened (or would happen) to one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Dry run: this would be applied.
    WouldApply,
    /// Applied to the backend.
    Applied,
    /// Propose-only mode: validated and recorded, nothing changed.
    Recorded,
    /// A person must decide; nothing was changed.
    NeedsReview,
    /// The job moved on since it was seen; nothing was changed.
    Skipped,
    /// Something failed; nothing was changed for this job.
    Error,
}

/// What the catalog said about the job, as shown in plans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogView {
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<SuggestedAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<HintMatch>,
}

/// One job's entry in a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanJob {
    pub job_id: i64,
    pub name: String,
    /// The state the plan was made against (the compare-and-set guard).
    pub attempt_id: u32,
    pub run_id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_code: Option<i64>,
    pub signature: String,
    pub summary: String,
    pub catalog: CatalogView,
    /// The proposal, if anyone made one.
    pub proposed: Option<Proposal>,
    pub validation: Validation,
    pub outcome: Outcome,
    /// What happened, in words (errors, cascades, stale states).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Jobs canceled because this one failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canceled: Vec<i64>,
    /// The person who approved this move in their MCP client, when the server asked one.
    /// A record, never a permission: the move is validated as the proposer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<super::approval::Approval>,
}

impl PlanJob {
    /// Whether `triage apply` should try this entry: it has a proposal that either passed
    /// validation (`would_apply`) or is a person's decision from `triage review`.
    pub fn awaiting_apply(&self) -> bool {
        match (&self.proposed, self.outcome) {
            (Some(_), Outcome::WouldApply) => true,
            (Some(p), Outcome::NeedsReview) => p.is_reviewed(),
            _ => false,
        }
    }

    /// A plan entry from evidence, before any proposal or outcome.
    pub fn from_evidence(
        ev: &Evidence,
        proposed: Option<Proposal>,
        validation: Validation,
        outcome: Outcome,
    ) -> PlanJob {
        PlanJob {
            job_id: ev.job.id,
            name: ev.job.name.clone(),
            attempt_id: ev.job.attempt_id,
            run_id: ev.run_id,
            return_code: ev.return_code,
            signature: ev.signature.to_string(),
            summary: ev.summary.clone(),
            catalog: CatalogView {
                verdict: ev.hints.verdict,
                category: ev.hints.category.clone(),
                action: ev.hints.action,
                hint: ev.hints.hint.clone(),
                evidence: ev.hints.evidence.clone(),
            },
            proposed,
            validation,
            outcome,
            notes: Vec::new(),
            canceled: Vec::new(),
            approved_by: None,
        }
    }
}

/// Something that happened to the run itself: a retry, fallback, degradation, circuit change,
/// recovery of the agent or backend, or a warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunEvent {
    #[schemars(with = "String")]
    pub time: Timestamp,
    /// `progress`, `retry`, `fallback`, `degraded`, `circuit_open`, `circuit_half_open`,
    /// `circuit_closed`, `agent_done` (an agent proposed on its first try), `recovered` (an
    /// agent proposed after failing, or as a circuit's probe), `repaired` (a move an earlier
    /// process left half done was completed or undone), `warning`, `error`.
    pub kind: String,
    /// The agent or backend concerned.
    pub subject: String,
    pub reason: String,
    /// How long it took, for events that end something timed (an agent's run, with its
    /// retries: `agent_done`, `recovered`, `fallback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<f64>,
}

impl RunEvent {
    pub fn now(kind: &str, subject: &str, reason: impl Into<String>) -> RunEvent {
        RunEvent {
            time: Timestamp::now(),
            kind: kind.into(),
            subject: subject.into(),
            reason: reason.into(),
            duration_secs: None,
        }
    }

    /// The same event, saying how long it took.
    pub fn took(mut self, d: std::time::Duration) -> RunEvent {
        self.duration_secs = Some(d.as_secs_f64());
        self
    }
}

/// Counts by outcome and action.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    pub jobs: usize,
    pub would_apply: usize,
    pub applied: usize,
    pub recorded: usize,
    pub needs_review: usize,
    pub skipped: usize,
    pub error: usize,
    pub retry: usize,
    pub fail: usize,
}

impl Summary {
    /// Count the outcomes and applied actions of `jobs`.
    pub fn of<'a>(jobs: impl IntoIterator<Item = &'a PlanJob>) -> Summary {
        let mut s = Summary::default();
        for j in jobs {
            s.jobs += 1;
            match j.outcome {
                Outcome::WouldApply => s.would_apply += 1,
                Outcome::Applied => s.applied += 1,
                Outcome::Recorded => s.recorded += 1,
                Outcome::NeedsReview => s.needs_review += 1,
                Outcome::Skipped => s.skipped += 1,
                Outcome::Error => s.error += 1,
            }
            if matches!(j.outcome, Outcome::WouldApply | Outcome::Applied | Outcome::Recorded)
                && let Some(p) = &j.proposed
            {
                match p.action {
                    crate::model::Action::Retry => s.retry += 1,
                    crate::model::Action::Fail => s.fail += 1,
                }
            }
        }
        s
    }
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    pub format: u32,
    pub workflow_id: i64,
    pub backend: String,
    pub dry_run: bool,
    /// Who proposed: an agent's name, or `rules`.
    pub agent: String,
    pub catalog_version: String,
    #[schemars(with = "String")]
    pub created_at: Timestamp,
    pub jobs: Vec<PlanJob>,
    pub events: Vec<RunEvent>,
    pub summary: Summary,
    /// Where the agent's stdout and stderr were saved, if an agent ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_output: Vec<String>,
}

impl Plan {
    /// Recount the summary from the jobs.
    pub fn summarize(&mut self) {
        self.summary = Summary::of(&self.jobs);
    }

    /// Exit status for CI: 0 all handled, 2 some jobs need a person, 1 some job could not be
    /// applied because of an error (the job itself is unchanged).
    pub fn exit_code(&self) -> u8 {
        if self.summary.error > 0 {
            1
        } else if self.summary.needs_review > 0 {
            2
        } else {
            0
        }
    }
}
