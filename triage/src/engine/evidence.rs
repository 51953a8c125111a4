//! Evidence: everything the engine knows about one pending_failed job before deciding.
//!
//! One read of the latest attempt's tail (and of the previous attempt's, for the repeat
//! check), one catalog scan, one signature. Both surfaces show this to the agent or person,
//! and validation decides on it, so what is shown is what is checked.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use super::tail::read_tail;
use crate::backend::{BackendError, JobBackend, LogStream};
use crate::catalog::{Catalog, Hints, ScanContext};
use crate::logs::{AttemptDiff, Signature, TailSize, attempt_diff, fingerprint};
use crate::model::{Attempt, Job, JobStatus, SchedulerState};

/// Catalog categories that mean the infrastructure, not the job, ended the attempt.
const INFRASTRUCTURE_CATEGORIES: [&str; 2] = ["preemption", "node_failure"];

/// The catalog category of a missing file or object.
const MISSING_FILE_CATEGORY: &str = "not_found";

/// Why the latest attempt ended, for budgeting (seed 003: separate budgets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The job's own failure: counts against `max_retries`.
    Failure,
    /// Preemption or node failure: counts against the larger preemption budget.
    Infrastructure,
}

/// Retries already spent, by cause, counting the latest attempt's failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub struct RetriesUsed {
    pub failures: u32,
    pub preemptions: u32,
}

/// What is known about one job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Evidence {
    #[serde(skip)]
    pub job: Job,
    pub run_id: u32,
    pub return_code: Option<i64>,
    pub scheduler_state: Option<SchedulerState>,
    /// The end of the latest attempt's stderr (untrusted text). Shared, not copied, by the
    /// engine's evidence cache and every clone: a listing holds one copy per job.
    pub tail: Arc<str>,
    /// Why the tail could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_error: Option<String>,
    pub hints: Hints,
    pub signature: Signature,
    /// The normalized line that names the failure (a group title).
    pub summary: String,
    /// How the last two attempts compare, when there are two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<AttemptDiff>,
    pub cause: Cause,
    pub retries_used: RetriesUsed,
    /// The jobs this one depends on, with their current status.
    pub upstream: Vec<Upstream>,
}

/// A job this one depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Upstream {
    pub job_id: i64,
    pub status: JobStatus,
}

impl Evidence {
    /// Upstream jobs that have not completed (still pending_failed, being retried, ...).
    pub fn unfinished_upstream(&self) -> Vec<Upstream> {
        self.upstream.iter().copied().filter(|u| u.status != JobStatus::Completed).collect()
    }

    /// Whether the failure is a missing file in a job that has upstream producers: the file
    /// may be an upstream output, so the text alone does not decide (seed 000).
    pub fn missing_input_with_upstream(&self) -> bool {
        !self.upstream.is_empty() && self.hints.category.as_deref() == Some(MISSING_FILE_CATEGORY)
    }

    /// Whether the last two attempts failed the same way.
    pub fn failed_identically_twice(&self) -> bool {
        self.repeat.as_ref().is_some_and(|d| d.identical)
    }
}

/// Gather the evidence for `job` (which should be pending_failed) from `backend`.
pub async fn gather(
    backend: &dyn JobBackend,
    catalog: &Catalog,
    workflow_id: i64,
    run_id: u32,
    job: Job,
    upstream: Vec<Upstream>,
    tail_lines: usize,
) -> Result<Evidence, BackendError> {
    let latest = job.last_attempt().cloned();
    let lines = TailSize::Lines(tail_lines);
    let (tail, tail_error) = match &latest {
        Some(a) => match read_tail(backend, workflow_id, job.id, Some(a.attempt_id), LogStream::Stderr, lines).await {
            Ok(t) => (Arc::from(t.text), None),
            Err(e) => (Arc::from(""), Some(e.to_string())),
        },
        None => (Arc::from(""), Some(format!("job {} has no finished attempt on record", job.id))),
    };
    let hints = catalog.scan(&tail, &scan_context(latest.as_ref()));
    let previous = previous_attempt(&job, latest.as_ref());
    let mut repeat = None;
    let mut previous_infra = false;
    if let Some(prev) = previous
        && let Ok(t) = read_tail(backend, workflow_id, job.id, Some(prev.attempt_id), LogStream::Stderr, lines).await
    {
        let prev_hints = catalog.scan(&t.text, &scan_context(Some(prev)));
        previous_infra = is_infrastructure(Some(prev), &prev_hints);
        repeat = Some(attempt_diff(&t.text, &tail));
    }
    let cause = if is_infrastructure(latest.as_ref(), &hints) { Cause::Infrastructure } else { Cause::Failure };
    let fp = fingerprint(&tail, latest.as_ref().map(Attempt::exit_status));
    let retries_used = count_retries(&job, latest.as_ref(), previous, cause, previous_infra);
    Ok(Evidence {
        run_id,
        return_code: latest.as_ref().map(Attempt::exit_status),
        scheduler_state: latest.as_ref().and_then(|a| a.scheduler_state),
        signature: fp.signature,
        summary: fp.summary,
        tail,
        tail_error,
        hints,
        repeat,
        cause,
        retries_used,
        upstream,
        job,
    })
}

fn scan_context(attempt: Option<&Attempt>) -> ScanContext {
    attempt.map(ScanContext::from_attempt).unwrap_or_default()
}

fn previous_attempt<'a>(job: &'a Job, latest: Option<&Attempt>) -> Option<&'a Attempt> {
    let latest = latest?;
    job.attempts
        .iter()
        .filter(|a| (a.run_id, a.attempt_id) < (latest.run_id, latest.attempt_id))
        .max_by_key(|a| (a.run_id, a.attempt_id))
}

fn is_infrastructure(attempt: Option<&Attempt>, hints: &Hints) -> bool {
    attempt.and_then(|a| a.scheduler_state).is_some_and(SchedulerState::is_infrastructure)
        || hints.category.as_deref().is_some_and(|c| INFRASTRUCTURE_CATEGORIES.contains(&c))
}

/// Each finished attempt of the current run was followed (or, for the latest, would be
/// followed) by one retry, charged to the budget of its cause. Older attempts are judged by
/// their scheduler state; the latest two also by the catalog.
fn count_retries(
    job: &Job,
    latest: Option<&Attempt>,
    previous: Option<&Attempt>,
    cause: Cause,
    previous_infra: bool,
) -> RetriesUsed {
    let mut used = RetriesUsed::default();
    let Some(latest) = latest else { return used };
    for a in job.attempts.iter().filter(|a| a.run_id == latest.run_id) {
        let infra = if a.attempt_id == latest.attempt_id {
            cause == Cause::Infrastructure
        } else if previous.is_some_and(|p| p.attempt_id == a.attempt_id) {
            previous_infra
        } else {
            a.scheduler_state.is_some_and(SchedulerState::is_infrastructure)
        };
        if infra {
            used.preemptions += 1;
        } else {
            used.failures += 1;
        }
    }
    used
}
