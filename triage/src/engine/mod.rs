//! The engine: evidence → proposal → validation → apply. One implementation; the `triage` CLI
//! and `triage-mcp` both call it, so a rule written here holds on both surfaces.
//!
//! - [`evidence`] gathers what is known about a pending_failed job (tail, hints, signature,
//!   attempt history, budget use);
//! - [`rules`] turns the catalog's verdict into a proposal (no agent needed);
//! - [`validate`] decides whether a proposal may be applied;
//! - [`plan`] is the document a run produces and `triage apply` consumes;
//! - [`policy`] holds the budgets, lists, caps and resilience settings.

mod cache;
pub mod classify;
pub mod evidence;
pub mod group;
pub mod plan;
pub mod policy;
pub mod report;
pub mod rules;
pub mod validate;

#[cfg(test)]
mod validate_tests;

use std::collections::HashMap;
use std::sync::Arc;

pub use evidence::{Cause, Evidence, RetriesUsed, Upstream};
pub use plan::{Outcome, PLAN_FORMAT_VERSION, Plan, PlanJob, RunEvent, Summary};
pub use policy::{Policy, PolicyError, Resilience};
pub use validate::{Proposal, REVIEWED, Validation, ValidationStatus, validate};

use crate::backend::{AuditEvent, BackendError, Guard, JobBackend, MoveOutcome, WorkflowInfo};
use crate::catalog::Catalog;
use crate::model::{Action, Job, JobStatus};

/// Stderr lines read per job by default (as in Torc).
pub const DEFAULT_TAIL_LINES: usize = 50;

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

    /// The workflow and the evidence for each of its pending_failed jobs, by job id.
    pub async fn pending(&self, workflow_id: i64) -> Result<(WorkflowInfo, Vec<Evidence>), BackendError> {
        let info = self.backend.workflow(workflow_id).await?;
        let jobs = self.backend.all_jobs(workflow_id, Some(JobStatus::PendingFailed)).await?;
        // Upstream statuses come from one listing of the workflow, not one request per job.
        let statuses: HashMap<i64, JobStatus> = if jobs.iter().any(|j| !j.depends_on.is_empty()) {
            self.backend.all_jobs(workflow_id, None).await?.into_iter().map(|j| (j.id, j.status)).collect()
        } else {
            HashMap::new()
        };
        // Reading tails, scanning and fingerprinting is CPU work: spread it over the cores, in
        // contiguous chunks so the order (by job id) is kept.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().div_ceil(64)).max(1);
        let chunk_len = jobs.len().div_ceil(workers).max(1);
        let statuses = Arc::new(statuses);
        let mut tasks = Vec::with_capacity(workers);
        let mut jobs = jobs.into_iter();
        loop {
            let chunk: Vec<Job> = jobs.by_ref().take(chunk_len).collect();
            if chunk.is_empty() {
                break;
            }
            let (engine, info, statuses) = (self.clone(), info.clone(), statuses.clone());
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::with_capacity(chunk.len());
                for job in chunk {
                    let upstream = job
                        .depends_on
                        .iter()
                        .filter_map(|d| statuses.get(d).map(|&status| Upstream { job_id: *d, status }))
                        .collect();
                    out.push(engine.gather(&info, job, upstream).await?);
                }
                Ok::<_, BackendError>(out)
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            let part = t.await.map_err(|e| BackendError::Internal(format!("evidence task failed: {e}")))??;
            out.extend(part);
        }
        Ok((info, out))
    }

    /// Resolve the moves an interrupted earlier process left half done (a crash, a server
    /// that died mid-move; see [`JobBackend::recover`]) before applying anything: one
    /// `recovered` event per job, or a `warning` when recovery itself failed.
    pub async fn recover(&self, workflow_id: i64) -> Vec<RunEvent> {
        let subject = self.backend.describe();
        match self.backend.recover(workflow_id).await {
            Ok(done) => done
                .into_iter()
                .map(|e| {
                    RunEvent::now("recovered", &subject, format!("job {}: {}", e.job_id.unwrap_or_default(), e.why))
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

    /// Validate `proposal` (or, with none, fall back to the rules when `rules_fallback`) and
    /// give the outcome for `mode` without touching the backend. In [`Mode::Apply`] the
    /// outcome of an applicable job is `WouldApply` until [`Engine::apply`] runs it.
    pub fn judge(&self, ev: &Evidence, proposal: Option<Proposal>, rules_fallback: bool, mode: Mode) -> PlanJob {
        let (proposal, why_none) = match proposal {
            Some(p) => (Some(p), String::new()),
            None if rules_fallback => match rules::propose(ev, &self.policy) {
                Ok(p) => (Some(p), String::new()),
                Err(why) => (None, why),
            },
            None => (None, "no agent classified this job".to_string()),
        };
        let Some(proposal) = proposal else {
            let v = Validation {
                status: ValidationStatus::AgentOnly,
                messages: vec![format!("no proposal: {why_none}; a person decides")],
                needs_review: true,
                stale: false,
                evidence: ev.hints.evidence.clone(),
                resources: Default::default(),
            };
            return PlanJob::from_evidence(ev, None, v, Outcome::NeedsReview);
        };
        let v = validate(ev, &proposal, &self.policy);
        let outcome = if v.stale {
            Outcome::Skipped
        } else if !v.applicable() {
            Outcome::NeedsReview
        } else {
            match mode {
                Mode::ProposeOnly => Outcome::Recorded,
                Mode::DryRun | Mode::Apply => Outcome::WouldApply,
            }
        };
        PlanJob::from_evidence(ev, Some(proposal), v, outcome)
    }

    /// Re-check `entry` against the job's current state and apply it if it still holds.
    /// Compare-and-set: a job that moved on is `Skipped`, never moved twice.
    pub async fn apply(&self, workflow_id: i64, entry: &PlanJob, who: &str) -> PlanJob {
        self.recheck(workflow_id, entry, who, Mode::Apply).await
    }

    /// [`Engine::apply`], or with [`Mode::DryRun`] every check of it but the move itself.
    pub async fn recheck(&self, workflow_id: i64, entry: &PlanJob, who: &str, mode: Mode) -> PlanJob {
        let mut out = entry.clone();
        let Some(proposal) = entry.proposed.clone() else {
            out.outcome = Outcome::NeedsReview;
            return out;
        };
        let fresh = async {
            let info = self.backend.workflow(workflow_id).await?;
            let job = self.backend.job(workflow_id, entry.job_id).await?;
            Ok::<_, BackendError>((info, job))
        };
        let (info, job) = match fresh.await {
            Ok(x) => x,
            Err(e) => return errored(out, e),
        };
        if job.status != JobStatus::PendingFailed || job.attempt_id != entry.attempt_id || info.run_id != entry.run_id {
            out.outcome = Outcome::Skipped;
            out.notes.push(format!(
                "moved on since the plan was made: now {} at attempt {} of run {} (the plan saw pending_failed at attempt {} of run {})",
                job.status, job.attempt_id, info.run_id, entry.attempt_id, entry.run_id
            ));
            return out;
        }
        let ev = match self.evidence(&info, job).await {
            Ok(ev) => ev,
            Err(e) => return errored(out, e),
        };
        let mut proposal = proposal;
        proposal.attempt_id = Some(entry.attempt_id);
        let v = validate(&ev, &proposal, &self.policy);
        out.validation = v.clone();
        if v.stale {
            out.outcome = Outcome::Skipped;
            return out;
        }
        if !v.applicable() {
            out.outcome = Outcome::NeedsReview;
            return out;
        }
        if mode != Mode::Apply {
            out.outcome = Outcome::WouldApply;
            return out;
        }
        let guard = Guard { status: JobStatus::PendingFailed, attempt_id: entry.attempt_id, run_id: entry.run_id };
        let mut audit = AuditEvent::now(who, proposal.action.as_str(), Some(entry.job_id), proposal.reason.clone());
        audit.details = serde_json::json!({"source": proposal.source, "validation": v.status});
        let result = match proposal.action {
            Action::Retry => {
                self.backend.retry_job(workflow_id, entry.job_id, &guard, &v.resources.change(), &audit).await
            }
            Action::Fail => self.backend.fail_job(workflow_id, entry.job_id, &guard, &audit).await,
        };
        match result {
            Ok(MoveOutcome::Moved { canceled, .. }) => {
                out.outcome = Outcome::Applied;
                out.canceled = canceled;
            }
            Ok(MoveOutcome::Stale { status, attempt_id, run_id }) => {
                out.outcome = Outcome::Skipped;
                out.notes
                    .push(format!("moved on while applying: now {status} at attempt {attempt_id} of run {run_id}"));
            }
            Err(e) => return errored(out, e),
        }
        out
    }
}

fn errored(mut out: PlanJob, e: BackendError) -> PlanJob {
    out.outcome = Outcome::Error;
    out.notes.push(e.to_string());
    out
}
