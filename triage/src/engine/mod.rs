//! The engine: evidence → proposal → validation → apply. One implementation; the `triage` CLI
//! and `triage-mcp` both call it, so a rule written here holds on both surfaces.
//!
//! - [`evidence`] gathers what is known about a pending_failed job (tail, hints, signature,
//!   attempt history, budget use);
//! - [`rules`] turns the catalog's verdict into a proposal (no agent needed);
//! - [`proposal`] is a proposal and its [`Authority`] (agent, rules, a person's review);
//! - [`validate`](mod@validate) decides whether a proposal may be applied;
//! - `apply` judges a proposal and makes the guarded move; it also applies a whole plan;
//! - [`approval`] is a person's approval of an agent's moves, asked through their MCP client;
//! - [`classify`] takes an agent's classifications (the MCP tool);
//! - [`propose_log`] is the propose-only contract between `triage run` and its agent's server;
//! - [`review`] turns a person's answers into reviewed decisions;
//! - `tail` reads an attempt's log (the backend names the file, the logs layer reads it);
//! - [`plan`] is the document a run produces and `triage apply` consumes;
//! - [`policy`] holds the budgets, lists, caps (and the resilience settings' table).

mod apply;
pub mod approval;
mod cache;
pub mod classify;
pub mod evidence;
pub mod group;
pub mod outcomes;
pub mod plan;
pub mod policy;
pub mod proposal;
pub mod propose_log;
pub mod report;
pub mod review;
pub mod rules;
pub mod suggest;
mod tail;
pub mod validate;

#[cfg(test)]
mod validate_tests;

use std::collections::HashMap;
use std::sync::Arc;

pub use evidence::{Cause, Evidence, RetriesUsed, Upstream};
pub use plan::{Outcome, PLAN_FORMAT_VERSION, Plan, PlanJob, RunEvent, Summary};
pub use policy::{Confirm, Policy, PolicyError};
pub use proposal::{Authority, Proposal};
pub use tail::read_tail;
pub use validate::{Validation, ValidationStatus, validate};

use crate::backend::{BackendError, JobBackend, WorkflowInfo};
use crate::catalog::Catalog;
use crate::model::{Job, JobStatus};

/// Told `(done, total)` as a long gathering goes (see [`Engine::pending_with_progress`]).
pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// Stderr lines read per job by default (as in Torc).
pub const DEFAULT_TAIL_LINES: usize = 50;

/// Jobs per thread below which [`Engine::pending`] does not spread the work. Each thread that
/// scans builds its own caches for every regex it runs (2 to 3 MB for the catalog and the
/// signature rules) and may need an allocator arena: about a tenth of what the evidence of
/// 2,048 jobs holds, and a listing that small takes a few tenths of a second on one core.
const MIN_JOBS_PER_THREAD: usize = 2048;

/// How far a gathering is, shared by its tasks, and whom to tell.
struct Counter {
    progress: Option<Progress>,
    done: std::sync::atomic::AtomicUsize,
    step: usize,
    total: usize,
}

impl Counter {
    /// One more job done; tell `progress` every `step` jobs and at the end.
    fn one_done(&self) {
        let now = self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if let Some(p) = &self.progress
            && (now.is_multiple_of(self.step) || now == self.total)
        {
            p(now, self.total);
        }
    }
}

/// What to do with a proposal that passes validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Report what would happen; change nothing.
    DryRun,
    /// Validate and record; change nothing (the mode `triage run` gives its agent).
    ProposeOnly,
    /// Apply to the backend.
    Apply,
}

/// The engine over one backend, catalog and policy.
#[derive(Clone)]
pub struct Engine {
    pub backend: Arc<dyn JobBackend>,
    pub catalog: Arc<Catalog>,
    pub policy: Policy,
    pub tail_lines: usize,
    cache: cache::EvidenceCache,
}

impl Engine {
    pub fn new(backend: Arc<dyn JobBackend>, catalog: Arc<Catalog>, policy: Policy) -> Engine {
        Engine { backend, catalog, policy, tail_lines: DEFAULT_TAIL_LINES, cache: Default::default() }
    }

    /// Compile what every gathering of evidence uses (the catalog's patterns that run on every
    /// line, the fingerprint's rules), which the first one would otherwise compile. For a
    /// long-running process, once at start (off the path of any request).
    pub fn warm_up(&self) {
        self.catalog.warm_up();
        crate::logs::warm_up();
    }

    /// The workflow and the evidence for each of its pending_failed jobs, by job id.
    pub async fn pending(&self, workflow_id: i64) -> Result<(WorkflowInfo, Vec<Evidence>), BackendError> {
        self.pending_with_progress(workflow_id, None).await
    }

    /// [`Engine::pending`], telling `progress` how far it is: `(jobs done, jobs in all)`,
    /// called once the listing is in (`(0, total)`) and then at most about a hundred times
    /// as the tails are read and scanned, the last time with `done == total`.
    pub async fn pending_with_progress(
        &self,
        workflow_id: i64,
        progress: Option<Progress>,
    ) -> Result<(WorkflowInfo, Vec<Evidence>), BackendError> {
        let info = self.backend.workflow(workflow_id).await?;
        let jobs = self.backend.all_jobs(workflow_id, Some(JobStatus::PendingFailed)).await?;
        // Upstream statuses come from one listing of the workflow, not one request per job.
        let statuses: HashMap<i64, JobStatus> = if jobs.iter().any(|j| !j.depends_on.is_empty()) {
            self.backend.all_jobs(workflow_id, None).await?.into_iter().map(|j| (j.id, j.status)).collect()
        } else {
            HashMap::new()
        };
        // Reading tails, scanning and fingerprinting is CPU work: spread it over the cores, in
        // contiguous chunks so the order (by job id) is kept. Only a listing big enough to
        // repay it is split: every thread that scans builds its own caches for each regex it
        // uses, so a small listing runs on this task alone.
        let total = jobs.len();
        let step = total.div_ceil(100).max(1);
        if let Some(p) = &progress {
            p(0, total);
        }
        let workers =
            std::thread::available_parallelism().map_or(1, |n| n.get()).min(total.div_ceil(MIN_JOBS_PER_THREAD)).max(1);
        let chunk_len = total.div_ceil(workers).max(1);
        let statuses = Arc::new(statuses);
        let counter = Counter { progress, done: Default::default(), step, total };
        if workers == 1 {
            let out = self.gather_chunk(&info, &statuses, jobs, &counter).await?;
            return Ok((info, out));
        }
        let counter = Arc::new(counter);
        let mut tasks = Vec::with_capacity(workers);
        let mut jobs = jobs.into_iter();
        loop {
            let chunk: Vec<Job> = jobs.by_ref().take(chunk_len).collect();
            if chunk.is_empty() {
                break;
            }
            let (engine, info, statuses, counter) = (self.clone(), info.clone(), statuses.clone(), counter.clone());
            tasks.push(tokio::spawn(async move { engine.gather_chunk(&info, &statuses, chunk, &counter).await }));
        }
        let mut out = Vec::with_capacity(total);
        for t in tasks {
            let part = t.await.map_err(|e| BackendError::Internal(format!("evidence task failed: {e}")))??;
            out.extend(part);
        }
        Ok((info, out))
    }

    /// The evidence for `chunk`, in order, counting each job done on `counter`.
    async fn gather_chunk(
        &self,
        info: &WorkflowInfo,
        statuses: &HashMap<i64, JobStatus>,
        chunk: Vec<Job>,
        counter: &Counter,
    ) -> Result<Vec<Evidence>, BackendError> {
        let mut out = Vec::with_capacity(chunk.len());
        for job in chunk {
            let upstream = job
                .depends_on
                .iter()
                .filter_map(|d| statuses.get(d).map(|&status| Upstream { job_id: *d, status }))
                .collect();
            out.push(self.gather(info, job, upstream).await?);
            counter.one_done();
        }
        Ok(out)
    }

    /// Resolve the moves an interrupted earlier process left half done (a crash, a server
    /// that died mid-move; see [`JobBackend::recover`]) before applying anything: one
    /// `repaired` event per job, or a `warning` when the check itself failed.
    pub async fn recover(&self, workflow_id: i64) -> Vec<RunEvent> {
        let subject = self.backend.describe();
        match self.backend.recover(workflow_id).await {
            Ok(done) => done
                .into_iter()
                .map(|e| {
                    RunEvent::now("repaired", &subject, format!("job {}: {}", e.job_id.unwrap_or_default(), e.why))
                })
                .collect(),
            Err(e) => vec![RunEvent::now(
                "warning",
                &subject,
                format!("could not check for interrupted moves in workflow {workflow_id}: {e}"),
            )],
        }
    }

    /// The evidence for one job (its upstream statuses fetched one by one).
    pub async fn evidence(&self, info: &WorkflowInfo, job: Job) -> Result<Evidence, BackendError> {
        let mut upstream = Vec::with_capacity(job.depends_on.len());
        for d in &job.depends_on {
            let dep = self.backend.job(info.id, *d).await?;
            upstream.push(Upstream { job_id: dep.id, status: dep.status });
        }
        self.gather(info, job, upstream).await
    }

    /// [`evidence::gather`] through the engine's cache.
    async fn gather(&self, info: &WorkflowInfo, job: Job, upstream: Vec<Upstream>) -> Result<Evidence, BackendError> {
        if let Some(ev) = self.cache.get(info.id, &job, info.run_id, self.tail_lines, &upstream) {
            return Ok(ev);
        }
        let ev = evidence::gather(
            self.backend.as_ref(),
            &self.catalog,
            info.id,
            info.run_id,
            job,
            upstream,
            self.tail_lines,
        )
        .await?;
        self.cache.put(info.id, &ev, self.tail_lines);
        Ok(ev)
    }
}
