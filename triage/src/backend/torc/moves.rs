//! The two moves as REST sequences on a Torc 1.0 server, each guarded step by step.
//!
//! Torc has no single call for either move (see the module docs of `torc` for why):
//!
//! retry: check guard, intent, [new resource requirements row + `PUT /jobs/{id}`], re-check,
//!        `manage_status_change/running`, `POST /jobs/{id}/retry/{run}?max_retries=A+1`.
//! fail:  check guard, intent, `DELETE /results/{id}` of the attempt's pending_failed result,
//!        re-check, `manage_status_change/running`, `complete_job/failed` with that result.
//!
//! The step only one racer can pass: for retry, Torc's retry endpoint (one `BEGIN IMMEDIATE`
//! transaction that checks `status = running` and `attempt_id < max_retries`; with
//! `max_retries = A + 1` it is a compare-and-set on the attempt: after one racer's retry the
//! job is at A + 1 and every other call is refused). For fail, the `DELETE` of the result
//! row (a second `DELETE` of the same id gets 404 or 500): whoever deleted it owns the job
//! until the move ends. A refused racer undoes whatever it changed and reports `Stale`.
//!
//! Any failure after a change undoes the change ([`TorcBackend::undo`], in `recover.rs`): the job goes back to
//! pending_failed at the same attempt, with its result row and its resource requirements,
//! so an error never leaves a job `running` without a runner.

use reqwest::Method;
use serde_json::json;

use super::TorcBackend;
use super::client::{Answer, Safety};
use super::convert::small;
use super::journal::{INTENT_CATEGORY, Intent, MoveKind};
use super::wire::{TorcJob, TorcResult};
use crate::backend::{AuditEvent, BackendError, Guard, MoveOutcome, ResourceChange};
use crate::model::JobStatus;

/// A job as seen at one moment: the workflow's run, the job, and the result of its current
/// attempt in that run.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub run_id: i64,
    pub job: TorcJob,
    pub result: Option<TorcResult>,
}

impl Seen {
    fn status(&self) -> JobStatus {
        self.job.status.unwrap_or(JobStatus::Uninitialized)
    }

    pub fn stale(&self, url: &str) -> Result<MoveOutcome, BackendError> {
        Ok(MoveOutcome::Stale {
            status: self.status(),
            attempt_id: small(self.job.attempt(), "attempt_id", url)?,
            run_id: small(self.run_id, "run_id", url)?,
        })
    }

    /// Whether the job is still what `guard` describes, with its pending_failed result.
    fn holds(&self, guard: &Guard) -> bool {
        let (Ok(attempt), Ok(run)) = (u32::try_from(self.job.attempt()), u32::try_from(self.run_id)) else {
            return false;
        };
        guard.holds(self.status(), attempt, run)
            && self.result.as_ref().is_some_and(|r| r.status == JobStatus::PendingFailed)
    }
}

/// A move past its guard, or the state that made it stale.
enum Begun {
    Stale(MoveOutcome),
    Go(Box<Seen>, Box<Intent>, i64),
}

/// What a move changed so far, so that [`TorcBackend::undo`] reverts exactly that.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Changed {
    /// The resource requirements row this move gave the job.
    pub resources: Option<i64>,
    /// Whether this move deleted the attempt's result row.
    pub deleted_result: bool,
    /// Whether this move set the job `running` (Torc answered 200 to our status change).
    pub set_running: bool,
}

impl TorcBackend {
    /// The workflow's run, the job, and its result for (run, current attempt).
    pub(super) async fn look(&self, workflow_id: i64, job_id: i64) -> Result<Seen, BackendError> {
        let (wf, job, results) = tokio::join!(
            self.fetch_workflow(workflow_id),
            self.torc_job(workflow_id, job_id),
            self.job_results(workflow_id, job_id)
        );
        let (wf, job) = (wf?, job?);
        let run_id = wf.run_id.unwrap_or(0);
        let result = results?.into_iter().rfind(|r| r.run_id == run_id && r.attempt() == job.attempt());
        Ok(Seen { run_id, job, result })
    }

    /// `PUT /jobs/{id}/manage_status_change/{status}/{run}`.
    pub(super) async fn set_status(&self, job_id: i64, status: JobStatus, run_id: i64) -> Result<Answer, BackendError> {
        let path = format!("/jobs/{job_id}/manage_status_change/{}/{run_id}", status.as_str());
        let what = format!("setting job {job_id} to {status}");
        self.client.call(Method::PUT, &path, &[], None, Safety::Idempotent, &what).await
    }

    pub(super) async fn retry_impl(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let (seen, intent, intent_id) = match self.begin(workflow_id, job_id, guard, audit, MoveKind::Retry).await? {
            Begun::Stale(o) => return Ok(o),
            Begun::Go(seen, intent, id) => (*seen, *intent, id),
        };
        let mut changed = Changed::default();
        let outcome = self.retry_steps(workflow_id, seen, change, &mut changed).await;
        self.conclude(workflow_id, intent_id, &intent, changed, outcome).await
    }

    pub(super) async fn fail_impl(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let (seen, intent, intent_id) = match self.begin(workflow_id, job_id, guard, audit, MoveKind::Fail).await? {
            Begun::Stale(o) => return Ok(o),
            Begun::Go(seen, intent, id) => (*seen, *intent, id),
        };
        let mut changed = Changed::default();
        let outcome = self.fail_steps(workflow_id, seen, &mut changed).await;
        self.conclude(workflow_id, intent_id, &intent, changed, outcome).await
    }

    /// Check the guard and record the intent.
    async fn begin(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
        kind: MoveKind,
    ) -> Result<Begun, BackendError> {
        let seen = self.look(workflow_id, job_id).await?;
        let Some(result) = seen.result.clone().filter(|_| seen.holds(guard)) else {
            return Ok(Begun::Stale(seen.stale(self.client.base())?));
        };
        let mut audit = audit.clone();
        audit.job_id = Some(job_id);
        let intent = Intent {
            category: INTENT_CATEGORY.into(),
            kind,
            job_id,
            run_id: seen.run_id,
            attempt_id: seen.job.attempt(),
            result,
            resource_requirements_id: seen.job.resource_requirements_id,
            audit,
            owner: self.owner.clone(),
        };
        let intent_id = self.open_intent(workflow_id, &intent).await?;
        Ok(Begun::Go(Box::new(seen), Box::new(intent), intent_id))
    }

    /// Audit and close the intent of a move that went through; otherwise undo what the
    /// steps changed, then close the intent (left open if the undo fails, for recovery).
    async fn conclude(
        &self,
        workflow_id: i64,
        intent_id: i64,
        intent: &Intent,
        changed: Changed,
        outcome: Result<MoveOutcome, BackendError>,
    ) -> Result<MoveOutcome, BackendError> {
        if let Ok(MoveOutcome::Moved { status, attempt_id, .. }) = &outcome {
            let mut ev = intent.audit.clone();
            ev.details = json!({
                "decision": intent.audit.details,
                "from": {"status": "pending_failed", "attempt_id": intent.attempt_id, "run_id": intent.run_id,
                         "resource_requirements_id": intent.resource_requirements_id},
                "to": {"status": status, "attempt_id": attempt_id, "resource_requirements_id": changed.resources.or(intent.resource_requirements_id)},
                "return_code": intent.result.return_code,
            });
            // The move happened: a failure to audit leaves the intent open for recovery to
            // write the audit later, and does not turn the move into an error.
            match self.audit(workflow_id, &ev).await {
                Ok(()) => {
                    if let Err(e) = self.close_intent(intent_id).await {
                        tracing::warn!("job {}: moved, but its intent {intent_id} stays open: {e}", intent.job_id);
                    }
                }
                Err(e) => tracing::warn!(
                    "job {}: moved, but the audit event failed ({e}); the next run writes it",
                    intent.job_id
                ),
            }
            return outcome;
        }
        match self.undo(workflow_id, intent, changed).await {
            Ok(()) => {
                if let Err(e) = self.close_intent(intent_id).await {
                    tracing::warn!("job {}: intent {intent_id} stays open: {e}", intent.job_id);
                }
                match outcome {
                    // Report the job as the undo left it (a repair may have changed it).
                    Ok(MoveOutcome::Stale { .. }) => {
                        self.look(workflow_id, intent.job_id).await?.stale(self.client.base())
                    }
                    other => other,
                }
            }
            Err(undo_err) => match outcome {
                Ok(_) => Err(undo_err),
                Err(e) => Err(BackendError::Remote {
                    url: self.client.base().to_string(),
                    what: format!("{:?} of job {}", intent.kind, intent.job_id).to_lowercase(),
                    why: format!(
                        "{e}; undoing the partial move failed too ({undo_err}); the next `triage run` or `triage apply` finishes the undo"
                    ),
                    transient: true,
                }),
            },
        }
    }

    async fn retry_steps(
        &self,
        workflow_id: i64,
        seen: Seen,
        change: &ResourceChange,
        changed: &mut Changed,
    ) -> Result<MoveOutcome, BackendError> {
        let (job_id, attempt, run) = (seen.job.id.unwrap_or_default(), seen.job.attempt(), seen.run_id);
        if change.memory.is_some() || change.runtime.is_some() {
            changed.resources = Some(self.own_resources(workflow_id, &seen.job, change, attempt + 1).await?);
        }
        let now = self.torc_job(workflow_id, job_id).await?;
        if now.status != Some(JobStatus::PendingFailed) || now.attempt() != attempt {
            return self.look(workflow_id, job_id).await?.stale(self.client.base());
        }
        let a = self.set_status(job_id, JobStatus::Running, run).await?;
        if !a.ok() && a.status != 422 {
            return Err(self.client.unexpected(&a, &format!("setting job {job_id} to running")));
        }
        changed.set_running = a.ok();
        // 422 here means a rival changed the status between our read and our write; the
        // retry endpoint below decides who wins either way.
        let path = format!("/jobs/{job_id}/retry/{run}");
        let what = format!("retrying job {job_id}");
        let q = [("max_retries", (attempt + 1).to_string())];
        let a = self.client.call(Method::POST, &path, &q, None, Safety::Once, &what).await?;
        if a.ok() {
            let job: TorcJob = a.json(&what)?;
            return Ok(MoveOutcome::Moved {
                status: job.status.unwrap_or(JobStatus::Ready),
                attempt_id: small(job.attempt(), "attempt_id", self.client.base())?,
                canceled: vec![],
            });
        }
        if a.status == 422 || a.status == 404 {
            tracing::info!("job {job_id}: the retry endpoint refused ({}); another mover was first", a.message());
            return self.look(workflow_id, job_id).await?.stale(self.client.base());
        }
        Err(self.client.unexpected(&a, &what))
    }

    async fn fail_steps(
        &self,
        workflow_id: i64,
        seen: Seen,
        changed: &mut Changed,
    ) -> Result<MoveOutcome, BackendError> {
        let (job_id, attempt, run) = (seen.job.id.unwrap_or_default(), seen.job.attempt(), seen.run_id);
        let Some(result) = seen.result else { return seen.stale(self.client.base()) };
        let rid = result.id.unwrap_or_default();
        let what = format!("deleting the pending_failed result {rid} of job {job_id}");
        let a = self.client.call(Method::DELETE, &format!("/results/{rid}"), &[], None, Safety::Once, &what).await?;
        if !a.ok() {
            if a.status == 404 || a.status >= 500 {
                tracing::info!(
                    "job {job_id}: result {rid} was already gone ({}); another mover was first",
                    a.message()
                );
                return self.look(workflow_id, job_id).await?.stale(self.client.base());
            }
            return Err(self.client.unexpected(&a, &what));
        }
        changed.deleted_result = true;
        let now = self.torc_job(workflow_id, job_id).await?;
        if now.status != Some(JobStatus::PendingFailed) || now.attempt() != attempt {
            return self.look(workflow_id, job_id).await?.stale(self.client.base());
        }
        let a = self.set_status(job_id, JobStatus::Running, run).await?;
        if !a.ok() {
            return Err(self.client.unexpected(&a, &format!("setting job {job_id} to running")));
        }
        changed.set_running = true;
        let mut body = result.clone();
        body.status = JobStatus::Failed;
        let body = serde_json::to_value(&body).map_err(|e| BackendError::Unsupported(e.to_string()))?;
        let path = format!("/jobs/{job_id}/complete_job/failed/{run}");
        let what = format!("completing job {job_id} as failed");
        let a = self.client.call(Method::POST, &path, &[], Some(&body), Safety::Once, &what).await?;
        if !a.ok() {
            return Err(self.client.unexpected(&a, &what));
        }
        let job: TorcJob = a.json(&what)?;
        Ok(MoveOutcome::Moved {
            status: job.status.unwrap_or(JobStatus::Failed),
            attempt_id: small(job.attempt(), "attempt_id", self.client.base())?,
            canceled: vec![],
        })
    }
}
