//! Recovery of interrupted moves: every intent still in the journal whose mover is gone
//! (its process ended, or it ran on another host more than 15 minutes ago) is resolved.
//!
//! - The move went through (a retry: the job is at a later attempt; a fail: the job is
//!   complete): the recovery is recorded; a job a rival's race left `running` with no
//!   runner at the later attempt is put back to `ready`.
//! - Otherwise the move is undone ([`TorcBackend::undo`], also run at once by a move whose
//!   own step fails): the job is pending_failed again at the same attempt, with its result
//!   row and its old resource requirements, and the next run decides it anew. So an
//!   interrupted move happens either once or not at all, never twice.
//!
//! Intents of live movers (a concurrent `triage apply`, this very process) are left alone.

use jiff::Timestamp;
use reqwest::Method;
use serde_json::json;

use super::TorcBackend;
use super::client::{Answer, Safety};
use super::journal::{Intent, MoveKind, OpenIntent};
use super::moves::Changed;
use crate::backend::{AuditEvent, BackendError};
use crate::model::JobStatus;

impl TorcBackend {
    pub(super) async fn recover_impl(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        let now = Timestamp::now().as_millisecond();
        let mut out = Vec::new();
        for oi in self.open_intents(workflow_id).await? {
            if !oi.intent.owner.is_gone(oi.timestamp_ms, now) {
                continue;
            }
            let ev = self.resolve(workflow_id, &oi).await?;
            if let Err(e) = self.audit(workflow_id, &ev).await {
                tracing::warn!("job {}: recovered, but the audit event failed: {e}", oi.intent.job_id);
            }
            self.close_intent(oi.event_id).await?;
            out.push(ev);
        }
        Ok(out)
    }

    async fn resolve(&self, workflow_id: i64, oi: &OpenIntent) -> Result<AuditEvent, BackendError> {
        let intent = &oi.intent;
        let who = format!("triage recovery (interrupted move by {})", intent.audit.who);
        let mut ev = AuditEvent::now(who, "recover", Some(intent.job_id), String::new());
        let base = json!({
            "intent_event": oi.event_id,
            "move": intent.kind,
            "attempt_id": intent.attempt_id,
            "run_id": intent.run_id,
            "owner": intent.owner,
            "decision": {"what": intent.audit.what, "why": intent.audit.why},
        });
        let seen = match self.look(workflow_id, intent.job_id).await {
            Ok(s) => s,
            Err(BackendError::JobNotFound { .. }) => {
                ev.why = format!("job {} no longer exists; nothing to recover", intent.job_id);
                ev.details = base;
                return Ok(ev);
            }
            Err(e) => return Err(e),
        };
        let status = seen.job.status.unwrap_or(JobStatus::Uninitialized);
        let moved = match intent.kind {
            MoveKind::Retry => seen.job.attempt() > intent.attempt_id,
            MoveKind::Fail => status.is_complete(),
        };
        let changed = Changed {
            resources: seen.job.resource_requirements_id.filter(|rr| Some(*rr) != intent.resource_requirements_id),
            deleted_result: seen.result.as_ref().is_none_or(|r| r.status != JobStatus::PendingFailed),
            // A job left running with no runner at the intent's attempt is the dead mover's.
            set_running: true,
        };
        if moved {
            // `undo` only repairs a job left running at the later attempt; it leaves the move.
            self.undo(workflow_id, intent, Changed::default()).await?;
            ev.why = format!(
                "the {} had gone through before the interruption (now {status} at attempt {}); recorded",
                intent.audit.what,
                seen.job.attempt()
            );
            ev.details = json!({"resolution": "completed", "intent": base});
        } else {
            self.undo(workflow_id, intent, changed).await?;
            ev.why = format!(
                "the {} was interrupted (job found {status} at attempt {}); undone: the job is pending_failed again for the next run to decide",
                intent.audit.what,
                seen.job.attempt()
            );
            ev.details = json!({"resolution": "rolled_back", "found": status, "intent": base});
        }
        Ok(ev)
    }

    /// Revert what a move changed, as far as the job still shows it: a job this move set
    /// `running` that has no runner goes back to pending_failed at the intent's attempt (at a
    /// later attempt, a rival retried it: it goes to ready, whoever set it running); the
    /// deleted result row comes back; the job gets its old resource requirements row back
    /// if it still names the one the move created. A rival's changes are left alone.
    pub(super) async fn undo(&self, workflow_id: i64, intent: &Intent, changed: Changed) -> Result<(), BackendError> {
        let seen = self.look(workflow_id, intent.job_id).await?;
        let (job, run) = (&seen.job, seen.run_id);
        let idle_running = job.status == Some(JobStatus::Running) && job.compute_node_id.is_none();
        if job.attempt() > intent.attempt_id {
            if idle_running {
                self.expect_ok(self.set_status(intent.job_id, JobStatus::Ready, run).await?, "repairing")?;
            }
            return Ok(());
        }
        if job.attempt() != intent.attempt_id || run != intent.run_id {
            return Ok(()); // reset by someone else (e.g. `torc recover`): nothing of ours to undo
        }
        if changed.deleted_result && !idle_running && job.status != Some(JobStatus::PendingFailed) {
            return Ok(()); // completed since: the move went through after all
        }
        if changed.deleted_result && seen.result.as_ref().is_none_or(|r| r.status != JobStatus::PendingFailed) {
            if let Some(r) = &seen.result
                && let Some(id) = r.id
            {
                let what = format!("removing the partial result {id} of job {}", intent.job_id);
                let a =
                    self.client.call(Method::DELETE, &format!("/results/{id}"), &[], None, Safety::Once, &what).await?;
                if !a.ok() && a.status != 404 {
                    return Err(self.client.unexpected(&a, &what));
                }
            }
            let body = serde_json::to_value(&intent.result).map_err(|e| BackendError::Unsupported(e.to_string()))?;
            let what = format!("restoring the pending_failed result of job {}", intent.job_id);
            let a = self.client.call(Method::POST, "/results", &[], Some(&body), Safety::Once, &what).await?;
            // 500 with a UNIQUE violation: a rival restored it first; that is as good.
            if !a.ok() && a.status < 500 {
                return Err(self.client.unexpected(&a, &what));
            }
        }
        if idle_running && changed.set_running {
            self.expect_ok(self.set_status(intent.job_id, JobStatus::PendingFailed, run).await?, "undoing")?;
        }
        if let (Some(ours), Some(old)) = (changed.resources, intent.resource_requirements_id)
            && job.resource_requirements_id == Some(ours)
        {
            self.point_resources(job, old).await?;
        }
        Ok(())
    }

    fn expect_ok(&self, a: Answer, what: &str) -> Result<(), BackendError> {
        if a.ok() { Ok(()) } else { Err(self.client.unexpected(&a, what)) }
    }
}
