//! The Torc backend (`torc:URL`): a Torc 1.0 server's REST API, over `reqwest` (rustls).
//!
//! Why this shape: Torc is where `pending_failed` comes from, but its API has no single call
//! for either move (its retry endpoint refuses pending_failed jobs; `manage_status_change`
//! refuses `failed` and leaves the attempt alone; `complete_job` refuses a pending_failed job
//! and a second result for one attempt), and its own MCP server reads every stderr whole and
//! makes one request per job. So:
//!
//! - [`listing`](listing.rs): jobs by status with Torc's paging; attempts (result rows of
//!   every run), upstream ids and resources in three workflow-wide requests; stderr read from
//!   the end of `OUTPUT_DIR/job_stdio/job_wf{W}_j{J}_r{R}_a{A}.e` (`--torc-output-dir`).
//! - [`moves`](moves.rs): retry and fail as guarded REST sequences; [`journal`](journal.rs):
//!   an intent event before a move's first change, audit events after; and
//!   [`recover`](recover.rs): moves a dead process left half done are undone or recorded.
//! - [`client`](client.rs): credentials and TLS from Torc's environment, a timeout on every
//!   request, retries only where safe, errors naming the URL and what to check.
//!
//! # The windows, and what closes each
//!
//! Retry (`check, intent, [own resources row], re-check, → running, retry?max_retries=A+1`):
//! 1. after the resources step: the job is pending_failed with a resources row of its own;
//!    undo points it back at the old row (the new row stays, unused).
//! 2. after `→ running`: the job is `running` with no runner (`compute_node_id` null) at
//!    attempt A; undo sets it back to pending_failed. No Torc job runner claims it meanwhile
//!    (runners claim `ready` jobs only).
//! 3. after the retry endpoint: the move is done (ready, attempt A + 1); only the audit
//!    event and the intent's deletion remain, which recovery completes.
//!
//! Fail (`check, intent, DELETE result, re-check, → running, complete_job/failed`):
//! 1. after the `DELETE`: pending_failed with no result for the attempt; every other mover's
//!    guard fails on that (it needs the pending_failed result), so the job is ours; undo puts
//!    the result row back.
//! 2. after `→ running`: as retry's window 2, plus the missing result.
//! 3. inside `complete_job`, which inserts the result before it updates the status: a failed
//!    result on a running job; undo deletes it and restores the pending_failed one.
//!
//! Within a process, an error in any step runs the undo at once. If the process dies (or the
//! server does) the intent stays, and the next `triage run`/`triage apply`/classify with
//! `dry_run: false` calls [`JobBackend::recover`] first: it resolves each intent whose owner
//! is gone (same host: the pid no longer runs, checked with its start time; other host:
//! after 15 minutes) and never touches a live mover's job.
//!
//! # Two movers at once
//!
//! `manage_status_change` is not a lock: it reads the status, then updates with
//! `WHERE status = <read>`, and a job already in the target status answers 200 unchanged, so
//! two racers can both "pass" it. The steps only one racer can pass are Torc's retry endpoint
//! with `max_retries = A + 1` (one `BEGIN IMMEDIATE` transaction checking `running` and
//! `attempt_id < A + 1`) and the `DELETE` of the attempt's result row. The loser gets 422 (or
//! 404/500), undoes its own changes and reports `Stale`. One race remains: a loser whose
//! re-check ran just before the winner's two last requests sets the now-ready job (attempt
//! A + 1) to `running`; its retry call is then refused on the attempt and it puts the job
//! back to `ready` (undo's "later attempt" rule). Failing a job cancels its not-yet-run
//! dependents in Torc's background task (every `--completion-check-interval-secs`), so the
//! `canceled` list of a Torc move is empty: read the dependents from Torc afterwards.

mod client;
mod convert;
mod journal;
mod listing;
mod moves;
mod recover;
mod resources;
mod wire;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    AuditEvent, BackendError, Guard, JobBackend, JobPage, LogFile, LogStream, MoveOutcome, PageRequest, ResourceChange,
    WorkflowInfo,
};
use crate::model::{Job, JobStatus};
use crate::resilience::Backoff;
use client::{Client, ClientEnv};
use convert::small;
use journal::Owner;

/// Which run each known attempt of a job belonged to: `(workflow, job) -> [(attempt, run)]`.
type AttemptRuns = HashMap<(i64, i64), Vec<(u32, u32)>>;

/// How to reach a Torc server and where its runner wrote job output.
#[derive(Debug, Clone)]
pub struct TorcOptions {
    /// Torc's output directory (`torc run -o DIR`), holding `job_stdio/`.
    pub output_dir: PathBuf,
    /// Timeout of every request.
    pub timeout: Duration,
    /// Delays between attempts of a retried request.
    pub backoff: Backoff,
}

impl Default for TorcOptions {
    fn default() -> Self {
        TorcOptions {
            output_dir: PathBuf::from("torc_output"),
            timeout: Duration::from_secs(30),
            backoff: Backoff::none(),
        }
    }
}

/// A Torc server's REST API (URL up to and including `/torc-service/v1`).
#[derive(Debug)]
pub struct TorcBackend {
    client: Client,
    output_dir: PathBuf,
    /// `(workflow, job) -> [(attempt, run)]` seen by the last listing, for `log_file`.
    runs: Mutex<AttemptRuns>,
    owner: Owner,
}

impl TorcBackend {
    /// A backend for the API at `url`, configured from Torc's environment variables.
    pub fn open(url: &str, opts: TorcOptions) -> Result<TorcBackend, BackendError> {
        let client = Client::new(url, ClientEnv::from_env(), opts.timeout, opts.backoff)?;
        Ok(TorcBackend { client, output_dir: opts.output_dir, runs: Mutex::default(), owner: Owner::this_process() })
    }

    fn describe_url(&self) -> String {
        format!("torc:{}", self.client.base())
    }
}

#[async_trait]
impl JobBackend for TorcBackend {
    fn describe(&self) -> String {
        self.describe_url()
    }

    async fn workflow(&self, workflow_id: i64) -> Result<WorkflowInfo, BackendError> {
        let wf = self.fetch_workflow(workflow_id).await?;
        Ok(WorkflowInfo {
            id: wf.id.unwrap_or(workflow_id),
            name: wf.name,
            use_pending_failed: wf.use_pending_failed.unwrap_or(false),
            run_id: small(wf.run_id.unwrap_or(0), "run_id", self.client.base())?,
        })
    }

    async fn list_jobs(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        page: PageRequest,
    ) -> Result<JobPage, BackendError> {
        self.list_page(workflow_id, status, page).await
    }

    async fn all_jobs(&self, workflow_id: i64, status: Option<JobStatus>) -> Result<Vec<Job>, BackendError> {
        self.list_all(workflow_id, status).await
    }

    async fn job(&self, workflow_id: i64, job_id: i64) -> Result<Job, BackendError> {
        Ok(self.one_job(workflow_id, job_id).await?.1)
    }

    async fn log_file(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
    ) -> Result<LogFile, BackendError> {
        self.log_file_impl(workflow_id, job_id, attempt, stream).await
    }

    async fn retry_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        self.retry_impl(workflow_id, job_id, guard, change, audit).await
    }

    async fn fail_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        self.fail_impl(workflow_id, job_id, guard, audit).await
    }

    async fn append_event(&self, workflow_id: i64, event: &AuditEvent) -> Result<(), BackendError> {
        self.audit(workflow_id, event).await
    }

    async fn audit_trail(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        self.audit_events(workflow_id).await
    }

    async fn recover(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        self.recover_impl(workflow_id).await
    }
}
