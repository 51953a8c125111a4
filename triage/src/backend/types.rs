//! The values that cross the `JobBackend` boundary: pages, guards, log tails, moves, events.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
}

/// New resources for a retry; `None` keeps the current value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
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

/// Which output stream of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    #[default]
    Stderr,
    Stdout,
}

impl LogStream {
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Stderr => "stderr",
            LogStream::Stdout => "stdout",
        }
    }
}

/// How much of the end of a log to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailSize {
    Lines(usize),
    Bytes(u64),
}

/// The end of one attempt's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogTail {
    pub job_id: i64,
    pub attempt_id: u32,
    pub stream: LogStream,
    /// Where the log was read from.
    pub path: String,
    /// The tail, decoded lossily as UTF-8.
    pub text: String,
    /// Lines in `text`.
    pub lines: usize,
    /// Size of the whole file when it was read.
    pub file_len: u64,
    /// Whether the tail was capped (a line or the start was cut).
    pub truncated: bool,
}

impl LogTail {
    /// Read the end of `file` (shown as `shown`), from the end of the file (see
    /// [`crate::logs::tail_lines`]). Backends map the error to their own.
    pub fn read(
        file: &std::path::Path,
        shown: String,
        job_id: i64,
        attempt_id: u32,
        stream: LogStream,
        size: TailSize,
    ) -> Result<LogTail, crate::logs::TailError> {
        let opts = crate::logs::TailOptions::default();
        let tail = match size {
            TailSize::Lines(n) => crate::logs::tail_lines(file, n, &opts),
            TailSize::Bytes(n) => crate::logs::tail_bytes(file, n, &opts),
        }?;
        Ok(LogTail {
            job_id,
            attempt_id,
            stream,
            path: shown,
            text: tail.text().into_owned(),
            lines: tail.lines,
            file_len: tail.file_len,
            truncated: tail.truncated,
        })
    }
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
