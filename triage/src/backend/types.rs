//! The values that cross the `JobBackend` boundary: pages, guards, log tails, moves, events.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::model::LogStream;
use crate::model::{Job, JobStatus, Memory, Runtime};

/// Which page of a job list to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub offset: u64,
    pub limit: u64,
}

impl PageRequest {
    /// The largest page a backend is asked for (Torc's own maximum).
    pub const MAX_LIMIT: u64 = 10_000;
}

/// One page of jobs.
#[derive(Debug, Clone)]
pub struct JobPage {
    pub jobs: Vec<Job>,
    /// How many jobs match in all pages.
    pub total: u64,
    /// Offset of the next page, while more remain.
    pub next_offset: Option<u64>,
}

/// A workflow's own fields, without its jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowInfo {
    pub id: i64,
    pub name: String,
    pub use_pending_failed: bool,
    pub run_id: u32,
}

/// What the caller saw before deciding: the move happens only if the job is still like this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Guard {
    pub status: JobStatus,
    pub attempt_id: u32,
    pub run_id: u32,
}

impl Guard {
    /// The guard for a pending_failed job as it is now.
    pub fn pending_failed(job: &Job, run_id: u32) -> Guard {
        Guard { status: JobStatus::PendingFailed, attempt_id: job.attempt_id, run_id }
    }

    /// The one guard check: whether a job now at (`status`, `attempt_id`, `run_id`) is still
    /// as the caller saw it, and still pending_failed (only those jobs move).
    pub fn holds(&self, status: JobStatus, attempt_id: u32, run_id: u32) -> bool {
        self.status == JobStatus::PendingFailed
            && status == self.status
            && attempt_id == self.attempt_id
            && run_id == self.run_id
    }
}

/// New resources for a retry; `None` keeps the current value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
}

/// One retry of a batch ([`super::JobBackend::retry_jobs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryMove {
    pub job_id: i64,
    pub guard: Guard,
    pub change: ResourceChange,
    pub audit: AuditEvent,
}

/// One fail of a batch ([`super::JobBackend::fail_jobs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FailMove {
    pub job_id: i64,
    pub guard: Guard,
    pub audit: AuditEvent,
}

/// The result of a guarded move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum MoveOutcome {
    /// The job moved; `canceled` lists dependents canceled by a fail cascade.
    Moved { status: JobStatus, attempt_id: u32, canceled: Vec<i64> },
    /// The job had moved on since the caller looked; nothing was changed.
    Stale { status: JobStatus, attempt_id: u32, run_id: u32 },
}

/// Where one attempt's stderr or stdout is: the backend's answer to "which file", so the
/// logs layer can read its end ([`crate::logs::LogTail::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub job_id: i64,
    pub attempt_id: u32,
    pub stream: LogStream,
    /// The file to read.
    pub path: std::path::PathBuf,
    /// The path as shown to people (relative to a store's workflow folder, say).
    pub shown: String,
    /// What to do when the file is not there (appended to the error).
    pub hint: Option<String>,
}

/// One entry of a workflow's audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEvent {
    /// When it happened.
    #[schemars(with = "String")]
    pub when: Timestamp,
    /// Who did it: the program and the proposer, e.g. `triage run (agent: claude)`.
    pub who: String,
    /// What: `retry`, `fail`, `cancel`, or another verb.
    pub what: String,
    /// The job it concerns, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    /// Why: the classification's reason, or the cause of a cascade.
    pub why: String,
    /// Before/after values and anything else worth keeping.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

impl AuditEvent {
    /// An event stamped now.
    pub fn now(
        who: impl Into<String>,
        what: impl Into<String>,
        job_id: Option<i64>,
        why: impl Into<String>,
    ) -> AuditEvent {
        AuditEvent {
            when: Timestamp::now(),
            who: who.into(),
            what: what.into(),
            job_id,
            why: why.into(),
            details: serde_json::Value::Null,
        }
    }
}
