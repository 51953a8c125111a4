//! From a validated proposal to a moved job: judging, the guarded move, and applying a plan.
//!
//! A move is validated once, on evidence read once, and then made with the backend's
//! compare-and-set guard (status, attempt, run as the evidence saw them): a job that moved on
//! in between is `skipped`, never moved twice. Where the evidence was read decides who reads
//! it:
//! - `triage run` and the MCP tool judge on the evidence they just gathered and move at once
//!   ([`Engine::judge`] then [`Engine::execute`]);
//! - `triage apply` holds a plan that may be hours old: it reads the workflow once, skips each
//!   entry whose job moved on, else gathers fresh evidence, validates under the current policy,
//!   and moves the applicable ones as batches ([`Engine::apply_plan`]).

use std::collections::HashMap;

use super::plan::{Outcome, Plan, PlanJob, RunEvent};
use super::proposal::Proposal;
use super::rules;
use super::validate::{Validation, ValidationStatus, validate};
use super::{Engine, Evidence, Mode, Upstream};
use crate::backend::{AuditEvent, BackendError, FailMove, Guard, MoveOutcome, RetryMove, WorkflowInfo};
use crate::model::{Action, Job, JobStatus};

impl Engine {
    /// Validate `proposal` (or, with none, fall back to the rules when `rules_fallback`) and
    /// give the outcome for `mode` without touching the backend. In [`Mode::Apply`] the
    /// outcome of an applicable job is `WouldApply` until [`Engine::execute`] runs it.
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

    /// Make the move `entry` describes, guarded by the state it was judged against. Call it
    /// only for an entry [`Engine::judge`] (or a plan's re-check) found applicable: it does
    /// not validate again.
    pub async fn execute(&self, workflow_id: i64, entry: &PlanJob, who: &str) -> PlanJob {
        let mut out = [entry.clone()];
        self.apply_ready(workflow_id, &mut out, who).await;
        let [out] = out;
        out
    }

    /// Make the move of every entry whose outcome is `would_apply` (judged applicable, not
    /// validated again): the fails go to the backend as one batch
    /// ([`crate::backend::JobBackend::fail_jobs`]), then the retries as another
    /// ([`crate::backend::JobBackend::retry_jobs`]), both through
    /// [`crate::backend::JobBackend::move_jobs`] (a backend may make them on one read).
    pub async fn apply_ready(&self, workflow_id: i64, entries: &mut [PlanJob], who: &str) {
        self.apply_batches(workflow_id, entries, who, false).await;
    }

    /// [`Engine::apply_ready`], with the retries first when `retries_first` (how `triage
    /// apply` moves a plan; a backend that makes both batches on one read chooses its order).
    async fn apply_batches(&self, workflow_id: i64, entries: &mut [PlanJob], who: &str, retries_first: bool) {
        let mut retries: Vec<(&mut PlanJob, RetryMove)> = Vec::new();
        let mut fails: Vec<(&mut PlanJob, FailMove)> = Vec::new();
        for entry in entries.iter_mut().filter(|e| e.outcome == Outcome::WouldApply) {
            let Some(proposal) = entry.proposed.clone() else { continue };
            let guard = Guard { status: JobStatus::PendingFailed, attempt_id: entry.attempt_id, run_id: entry.run_id };
            let mut audit = AuditEvent::now(who, proposal.action.as_str(), Some(entry.job_id), proposal.reason.clone());
            // What `triage outcomes` needs later: the attempt decided on and its failure's
            // signature (to tell "failed again the same way" from "failed differently"), and
            // the catalog's view (outcomes per entry and category).
            audit.details = serde_json::json!({
                "source": proposal.source,
                "authority": proposal.authority(),
                "validation": entry.validation.status,
                "attempt_id": entry.attempt_id,
                "signature": entry.signature,
                "catalog": {
                    "verdict": entry.catalog.verdict,
                    "category": entry.catalog.category,
                    "entry": entry.catalog.evidence.as_ref().map(|m| m.id.clone()),
                },
            });
            if let Some(approval) = &entry.approved_by {
                audit.details["approved_by"] = serde_json::json!(approval);
            }
            match proposal.action {
                Action::Retry => {
                    let m =
                        RetryMove { job_id: entry.job_id, guard, change: entry.validation.resources.change(), audit };
                    retries.push((entry, m));
                }
                Action::Fail => {
                    let m = FailMove { job_id: entry.job_id, guard, audit };
                    fails.push((entry, m));
                }
            }
        }
        let retry_moves: Vec<RetryMove> = retries.iter().map(|(_, m)| m.clone()).collect();
        let fail_moves: Vec<FailMove> = fails.iter().map(|(_, m)| m.clone()).collect();
        let (retried, failed) = self.backend.move_jobs(workflow_id, &retry_moves, &fail_moves, retries_first).await;
        for ((entry, _), result) in retries.into_iter().zip(retried) {
            settle(entry, result);
        }
        for ((entry, _), result) in fails.into_iter().zip(failed) {
            settle(entry, result);
        }
    }

    /// Re-check a plan entry against `job` as it is now (`None`: the workflow no longer has
    /// it) and the workflow's current statuses: skipped if it moved on, else validated on
    /// fresh evidence under the current policy: `would_apply` if it may be applied.
    async fn recheck(
        &self,
        info: &WorkflowInfo,
        job: Option<Job>,
        statuses: &HashMap<i64, JobStatus>,
        entry: &PlanJob,
    ) -> PlanJob {
        let mut out = entry.clone();
        let Some(proposal) = entry.proposed.clone() else {
            out.outcome = Outcome::NeedsReview;
            return out;
        };
        let Some(job) = job else {
            return errored(out, BackendError::JobNotFound { workflow_id: info.id, job_id: entry.job_id });
        };
        let guard = Guard { status: JobStatus::PendingFailed, attempt_id: entry.attempt_id, run_id: entry.run_id };
        if !guard.holds(job.status, job.attempt_id, info.run_id) {
            out.outcome = Outcome::Skipped;
            out.notes.push(format!(
                "moved on since the plan was made: now {} at attempt {} of run {} (the plan saw pending_failed at attempt {} of run {})",
                job.status, job.attempt_id, info.run_id, entry.attempt_id, entry.run_id
            ));
            return out;
        }
        let upstream = job
            .depends_on
            .iter()
            .filter_map(|d| statuses.get(d).map(|&status| Upstream { job_id: *d, status }))
            .collect();
        let ev = match self.gather(info, job, upstream).await {
            Ok(ev) => ev,
            Err(e) => return errored(out, e),
        };
        let mut proposal = proposal;
        proposal.attempt_id = Some(entry.attempt_id);
        let v = validate(&ev, &proposal, &self.policy);
        out.validation = v.clone();
        out.outcome = if v.stale {
            Outcome::Skipped
        } else if !v.applicable() {
            Outcome::NeedsReview
        } else {
            Outcome::WouldApply
        };
        out
    }

    /// Apply a plan (a person's, from `triage run --plan-out`, maybe reviewed): every entry
    /// awaiting apply is re-checked and, with [`Mode::Apply`], moved. Interrupted moves of an
    /// earlier process are resolved first. The workflow is read once for all the entries
    /// (one listing, not one per entry), and the moves go to the backend as batches, the
    /// retries then the fails, each move still guarded by the state the re-check saw.
    /// `on_event` sees progress and errors as they happen. Running the same plan twice
    /// changes nothing the second time.
    pub async fn apply_plan(&self, plan: &mut Plan, mode: Mode, who: &str, on_event: &(dyn Fn(&RunEvent) + Sync)) {
        let mut events = Vec::new();
        let mut emit = |e: RunEvent| {
            on_event(&e);
            events.push(e);
        };
        if mode == Mode::Apply {
            for e in self.recover(plan.workflow_id).await {
                emit(e);
            }
        }
        let wanted: Vec<usize> = (0..plan.jobs.len()).filter(|&i| plan.jobs[i].awaiting_apply()).collect();
        if !wanted.is_empty() {
            let entries: Vec<PlanJob> = wanted.iter().map(|&i| plan.jobs[i].clone()).collect();
            let updated = self.recheck_and_move(plan.workflow_id, entries, mode, who, true, &mut emit).await;
            for (&i, u) in wanted.iter().zip(updated) {
                plan.jobs[i] = u;
            }
        }
        plan.dry_run = mode != Mode::Apply;
        plan.events.extend(events.into_iter().filter(|e| e.kind != "progress"));
        plan.summarize();
    }

    /// Re-check `entries` (each awaiting apply) against one fresh read of the workflow and,
    /// with [`Mode::Apply`], move the ones still applicable as batches (`retries_first`: how
    /// `triage apply` orders them). Returns the entries with their new outcomes.
    pub(super) async fn recheck_and_move(
        &self,
        workflow_id: i64,
        mut entries: Vec<PlanJob>,
        mode: Mode,
        who: &str,
        retries_first: bool,
        emit: &mut (dyn FnMut(RunEvent) + Send),
    ) -> Vec<PlanJob> {
        let subject = self.backend.describe();
        let fresh = async {
            let info = self.backend.workflow(workflow_id).await?;
            let jobs = self.backend.all_jobs(workflow_id, None).await?;
            Ok::<_, BackendError>((info, jobs))
        };
        let (info, jobs) = match fresh.await {
            Ok(fresh) => fresh,
            Err(e) => {
                let why = e.to_string();
                for entry in &mut entries {
                    entry.outcome = Outcome::Error;
                    entry.notes.push(why.clone());
                }
                emit(RunEvent::now("error", &subject, format!("workflow {workflow_id}: {why}")));
                return entries;
            }
        };
        let statuses: HashMap<i64, JobStatus> = jobs.iter().map(|j| (j.id, j.status)).collect();
        let mut jobs: HashMap<i64, Job> = jobs.into_iter().map(|j| (j.id, j)).collect();
        let mut ready = Vec::with_capacity(entries.len());
        for entry in &entries {
            emit(RunEvent::now("progress", "triage", format!("job {}", entry.job_id)));
            let job = jobs.remove(&entry.job_id);
            ready.push(self.recheck(&info, job, &statuses, entry).await);
        }
        if mode == Mode::Apply {
            self.apply_batches(workflow_id, &mut ready, who, retries_first).await;
        }
        for updated in &ready {
            if updated.outcome == Outcome::Error {
                emit(RunEvent::now("error", &subject, format!("job {}: {}", updated.job_id, updated.notes.join("; "))));
            }
        }
        ready
    }
}

/// Record a move's result in its entry.
fn settle(out: &mut PlanJob, result: Result<MoveOutcome, BackendError>) {
    match result {
        Ok(MoveOutcome::Moved { canceled, .. }) => {
            out.outcome = Outcome::Applied;
            out.canceled = canceled;
        }
        Ok(MoveOutcome::Stale { status, attempt_id, run_id }) => {
            out.outcome = Outcome::Skipped;
            out.notes.push(format!("moved on while applying: now {status} at attempt {attempt_id} of run {run_id}"));
        }
        Err(e) => {
            out.outcome = Outcome::Error;
            out.notes.push(e.to_string());
        }
    }
}

fn errored(mut out: PlanJob, e: BackendError) -> PlanJob {
    out.outcome = Outcome::Error;
    out.notes.push(e.to_string());
    out
}
