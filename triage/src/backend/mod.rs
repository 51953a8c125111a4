//! Where jobs live: the `JobBackend` trait and its implementations.
//!
//! A backend answers questions about a workflow's jobs (list, get, where a log is) and performs the
//! two moves triage exists for, retry and fail, each guarded by compare-and-set: the caller
//! says which status, attempt and run it saw, and a job that has moved on since is reported as
//! [`MoveOutcome::Stale`], never touched. Everything with side effects on jobs goes through here.
//!
//! - [`dir`]: the directory store, format v1 (the embedded default; no server needed).
//! - [`torc`]: a Torc 1.0 server's REST API (`torc:URL`), proven against a real server.
//! - [`slurm`]: a Slurm cluster through its client commands (`slurm:`), with triage's ledger.
//! - Others fit the same trait: each needs only list/get/log/retry/fail.
//!
//! [`BackendSpec`] parses and resolves `--backend` (DESIGN.md, "Backend selection").

pub mod dir;
mod error;
pub mod slurm;
mod spec;
pub mod torc;
mod types;

use async_trait::async_trait;

pub use error::BackendError;
pub use spec::{BackendOptions, BackendSpec, SpecSource, open_backend};
pub use types::{
    AuditEvent, FailMove, Guard, JobPage, LogFile, LogStream, MoveOutcome, PageRequest, ResourceChange, RetryMove,
    WorkflowInfo,
};

use crate::model::{Job, JobStatus};

/// A place where workflows and their jobs live.
///
/// Implementations must make `retry_job` and `fail_job` atomic with respect to their guard:
/// two callers racing on one job move it at most once.
#[async_trait]
pub trait JobBackend: Send + Sync {
    /// The spec this backend was opened from, e.g. `dir:/data/store` (for messages and audit).
    fn describe(&self) -> String;

    /// The workflow's own fields.
    async fn workflow(&self, workflow_id: i64) -> Result<WorkflowInfo, BackendError>;

    /// A page of the workflow's jobs, ordered by id, optionally only those with `status`.
    /// Jobs come with their attempt history.
    async fn list_jobs(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        page: PageRequest,
    ) -> Result<JobPage, BackendError>;

    /// One job with its attempt history.
    async fn job(&self, workflow_id: i64, job_id: i64) -> Result<Job, BackendError>;

    /// Which file holds one attempt's stderr or stdout (`attempt` defaults to the latest
    /// finished attempt). The backend says where; reading it is the logs layer's job
    /// ([`crate::logs::LogTail::read`], through [`crate::engine::Engine::tail`]).
    async fn log_file(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
    ) -> Result<LogFile, BackendError>;

    /// Move a pending_failed job to `ready` with attempt_id + 1 and the new resources, if it is
    /// still as `guard` describes; `audit` is recorded with the change.
    async fn retry_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError>;

    /// Retry several jobs of one workflow, each as [`JobBackend::retry_job`] would, with one
    /// outcome per move in order. A backend that can move many jobs with one request overrides
    /// it (Slurm: an array's tasks go back with one `scontrol requeuehold` or one `sbatch
    /// --array=3,17,42`); the default moves them one by one.
    async fn retry_jobs(&self, workflow_id: i64, moves: &[RetryMove]) -> Vec<Result<MoveOutcome, BackendError>> {
        let mut out = Vec::with_capacity(moves.len());
        for m in moves {
            out.push(self.retry_job(workflow_id, m.job_id, &m.guard, &m.change, &m.audit).await);
        }
        out
    }

    /// Move a pending_failed job to `failed` (its not-yet-run dependents are canceled), if it
    /// is still as `guard` describes; `audit` is recorded with the change.
    async fn fail_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError>;

    /// Fail several jobs of one workflow, each as [`JobBackend::fail_job`] would, with one
    /// outcome per move in order. A backend whose every move re-reads the workflow overrides
    /// it (Slurm: one fresh listing under one lock for the whole batch, instead of one per
    /// job); the default moves them one by one.
    async fn fail_jobs(&self, workflow_id: i64, moves: &[FailMove]) -> Vec<Result<MoveOutcome, BackendError>> {
        let mut out = Vec::with_capacity(moves.len());
        for m in moves {
            out.push(self.fail_job(workflow_id, m.job_id, &m.guard, &m.audit).await);
        }
        out
    }

    /// Retry `retries` and fail `fails`, jobs of one workflow, each as [`JobBackend::retry_jobs`]
    /// and [`JobBackend::fail_jobs`] would: (the retries' outcomes, the fails'), one per move
    /// in order. The default makes the two batches one after the other, the retries first
    /// when `retries_first`, and skips an empty one. A backend whose batches each begin with a
    /// fresh read of the workflow may make both on one read, in the order that suits it
    /// (Slurm: the fails first, then the retries, whose releases leave the cluster busy).
    async fn move_jobs(
        &self,
        workflow_id: i64,
        retries: &[RetryMove],
        fails: &[FailMove],
        retries_first: bool,
    ) -> (Vec<Result<MoveOutcome, BackendError>>, Vec<Result<MoveOutcome, BackendError>>) {
        let (mut retried, mut failed) = (Vec::new(), Vec::new());
        if retries_first && !retries.is_empty() {
            retried = self.retry_jobs(workflow_id, retries).await;
        }
        if !fails.is_empty() {
            failed = self.fail_jobs(workflow_id, fails).await;
        }
        if !retries_first && !retries.is_empty() {
            retried = self.retry_jobs(workflow_id, retries).await;
        }
        (retried, failed)
    }

    /// Record an event in the workflow's audit trail (who, what, why, when).
    async fn append_event(&self, workflow_id: i64, event: &AuditEvent) -> Result<(), BackendError>;

    /// The workflow's audit trail as triage wrote it, oldest first: every move (`retry`,
    /// `fail`), cascade (`cancel`) and recorded event, with who, why and the details the
    /// engine attached (attempt, signature, catalog entry, source, authority). What `triage
    /// outcomes` reads decisions from.
    async fn audit_trail(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError>;
    /// Resolve moves an earlier process began and did not end (it crashed, or the server
    /// died mid-move): each is completed or undone, never applied twice. Returns what was
    /// done, one event per job. Called before applying anything. A backend whose moves are
    /// atomic (the directory store) has nothing to recover.
    async fn recover(&self, _workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        Ok(Vec::new())
    }

    /// Every job of the workflow with `status`, all pages.
    async fn all_jobs(&self, workflow_id: i64, status: Option<JobStatus>) -> Result<Vec<Job>, BackendError> {
        let mut jobs = Vec::new();
        let mut offset = 0;
        loop {
            let page =
                self.list_jobs(workflow_id, status, PageRequest { offset, limit: PageRequest::MAX_LIMIT }).await?;
            jobs.extend(page.jobs);
            match page.next_offset {
                Some(next) if next > offset => offset = next,
                _ => return Ok(jobs),
            }
        }
    }
}
