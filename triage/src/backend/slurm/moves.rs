//! The Slurm backend's moves: retry (requeue, or resubmit), fail (record, cancel the
//! dependents), and the recovery of a move a dead process left begun. Each holds the ledger's
//! lock from its guard check to its last entry.

use jiff::Timestamp;

use super::SlurmBackend;
use super::ledger::{Decision, Entry, Incarnation, Ledger, decision_id};
use super::view::{self, JobView, RunInfo};
use crate::backend::{AuditEvent, BackendError, Guard, MoveOutcome, ResourceChange};
use crate::model::{Action, Attempt, JobStatus};

/// The bytes of each log a decided run keeps a copy of.
const LOG_COPY_BYTES: u64 = 256 * 1024;

impl SlurmBackend {
    /// The job as Slurm shows it now, and whether the guard still holds for it.
    async fn guarded(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
    ) -> Result<Result<JobView, MoveOutcome>, BackendError> {
        self.forget(workflow_id);
        let views = self.load(workflow_id).await?;
        let v = views
            .iter()
            .find(|v| v.job.id == job_id)
            .cloned()
            .ok_or(BackendError::JobNotFound { workflow_id, job_id })?;
        let stale = MoveOutcome::Stale { status: v.job.status, attempt_id: v.job.attempt_id, run_id: 1 };
        if !guard.holds(v.job.status, v.job.attempt_id, 1) {
            return Ok(Err(stale));
        }
        Ok(Ok(v))
    }

    pub(super) async fn retry(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let ledger = self.ledger().await?.clone();
        let _lock = ledger.lock()?;
        let v = match self.guarded(workflow_id, job_id, guard).await? {
            Ok(v) => v,
            Err(stale) => return Ok(stale),
        };
        let Some(run) = v.runs.last().cloned() else {
            return Err(BackendError::Internal(format!("job {job_id} has no run to retry")));
        };
        let attempt = keep_logs(&ledger, &run, &v)?;
        let id = decision_id(workflow_id, job_id, &run.key);
        ledger.append(&Entry::Begin {
            id: id.clone(),
            workflow_id,
            job_id,
            run: run.key,
            action: Action::Retry,
            attempt: Box::new(attempt),
            change: *change,
            audit: audit.clone(),
        })?;
        let held = self.records(&run.target).await?.into_iter().any(|r| r.submit_time() == run.run.job.submit);
        let resubmitted = if held {
            self.requeue(&run, change).await?;
            None
        } else {
            Some(self.resubmit(&run, change).await?)
        };
        ledger.append(&Entry::Done { id, resubmitted, canceled: vec![], when: Timestamp::now() })?;
        Ok(MoveOutcome::Moved { status: JobStatus::Ready, attempt_id: v.job.attempt_id + 1, canceled: vec![] })
    }

    /// Requeue held, change resources, release: the job keeps its id.
    async fn requeue(&self, run: &RunInfo, change: &ResourceChange) -> Result<(), BackendError> {
        let t = run.target.as_str();
        self.cli.check("scontrol", &["requeuehold", t]).await?;
        self.update_resources(t, change).await?;
        self.cli.check("scontrol", &["release", t]).await?;
        Ok(())
    }

    async fn update_resources(&self, target: &str, change: &ResourceChange) -> Result<(), BackendError> {
        let mut args = vec!["update".to_string(), format!("JobId={target}")];
        if let Some(m) = change.memory {
            // Megabytes, as a bare number: scontrol refuses a unit here.
            args.push(format!("MinMemoryNode={}", m.bytes().div_ceil(1 << 20)));
        }
        if let Some(r) = change.runtime {
            args.push(format!("TimeLimit={}", r.seconds().div_ceil(60)));
        }
        if args.len() > 2 {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.cli.check("scontrol", &args).await?;
        }
        Ok(())
    }

    /// Submit the same batch script again, with the same name, directory and partition, the
    /// new resources, and (for an array task) `--array=TASK`; point the dependents at it.
    async fn resubmit(&self, run: &RunInfo, change: &ResourceChange) -> Result<Incarnation, BackendError> {
        let inc = run.incarnation;
        self.script(inc.job_id).await?.ok_or_else(|| BackendError::Command {
            command: format!("scontrol write batch_script {}", inc.job_id),
            why: format!(
                "the controller no longer holds job {} and its batch script was never saved (set AccountingStoreFlags=job_script in slurm.conf so `sacct --batch-script` keeps scripts); resubmit it by hand",
                inc.job_id
            ),
            transient: false,
        })?;
        let ledger = self.ledger().await?;
        let path = ledger.script(inc.job_id);
        let job = &run.run.job;
        let mut args: Vec<String> = vec!["--parsable".into(), format!("--job-name={}", job.name)];
        if let Some(dir) = &job.work_dir {
            args.push(format!("--chdir={dir}"));
        }
        if let Some(p) = self.seen_partition(run).await {
            args.push(format!("--partition={p}"));
        }
        let memory = change.memory.map(|m| m.bytes()).or(job.req_mem_bytes);
        if let Some(bytes) = memory {
            args.push(format!("--mem={}M", bytes.div_ceil(1 << 20)));
        }
        let runtime = change.runtime.map(|r| r.seconds()).or(job.timelimit_secs);
        if let Some(secs) = runtime {
            args.push(format!("--time={}", secs.div_ceil(60)));
        }
        if let Some(task) = inc.task {
            args.push(format!("--array={task}"));
        }
        args.push(path.display().to_string());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.cli.check("sbatch", &argv).await?;
        let new_id: u64 = out.stdout.trim().split(';').next().and_then(|s| s.trim().parse().ok()).ok_or_else(|| {
            BackendError::Command {
                command: "sbatch --parsable".into(),
                why: format!("printed `{}`, not a job id", out.stdout.trim()),
                transient: false,
            }
        })?;
        // Pending jobs that waited on the old id now wait on the new one.
        let old = match inc.task {
            Some(t) => format!("{}_{t}", inc.job_id),
            None => inc.job_id.to_string(),
        };
        let new = match inc.task {
            Some(t) => format!("{new_id}_{t}"),
            None => new_id.to_string(),
        };
        let squeue = self.cli.check("squeue", &["-h", "-t", "PD", "-o", "%i|%E"]).await?;
        for line in squeue.stdout.lines() {
            let Some((id, dep)) = line.trim().split_once('|') else { continue };
            if !view::dependency_ids(dep).contains(&inc.job_id) {
                continue;
            }
            let repointed = repoint(dep, &old, &new);
            self.cli
                .check("scontrol", &["update", &format!("JobId={}", id.trim()), &format!("Dependency={repointed}")])
                .await?;
        }
        Ok(Incarnation { job_id: new_id, task: inc.task })
    }

    async fn seen_partition(&self, run: &RunInfo) -> Option<String> {
        let ledger = self.ledger().await.ok()?;
        let seen: view::Seen = serde_json::from_slice(&std::fs::read(ledger.seen(&run.key)).ok()?).ok()?;
        seen.partition
    }

    pub(super) async fn fail(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let ledger = self.ledger().await?.clone();
        let _lock = ledger.lock()?;
        let v = match self.guarded(workflow_id, job_id, guard).await? {
            Ok(v) => v,
            Err(stale) => return Ok(stale),
        };
        let Some(run) = v.runs.last().cloned() else {
            return Err(BackendError::Internal(format!("job {job_id} has no run to fail")));
        };
        let attempt = keep_logs(&ledger, &run, &v)?;
        let id = decision_id(workflow_id, job_id, &run.key);
        ledger.append(&Entry::Begin {
            id: id.clone(),
            workflow_id,
            job_id,
            run: run.key,
            action: Action::Fail,
            attempt: Box::new(attempt),
            change: ResourceChange::default(),
            audit: audit.clone(),
        })?;
        let canceled = self.cancel_dependents(workflow_id, job_id, &audit.who, &ledger).await?;
        ledger.append(&Entry::Done { id, resubmitted: None, canceled: canceled.clone(), when: Timestamp::now() })?;
        Ok(MoveOutcome::Moved { status: JobStatus::Failed, attempt_id: v.job.attempt_id, canceled })
    }

    /// Cancel the chain's jobs that depend on `job_id`, transitively, and have not run.
    async fn cancel_dependents(
        &self,
        workflow_id: i64,
        job_id: i64,
        who: &str,
        ledger: &Ledger,
    ) -> Result<Vec<i64>, BackendError> {
        let views = self.load(workflow_id).await?;
        let mut doomed = vec![job_id];
        let mut canceled = Vec::new();
        while let Some(up) = doomed.pop() {
            for v in views.iter().filter(|v| v.job.depends_on.contains(&up)) {
                if canceled.contains(&v.job.id)
                    || !matches!(v.job.status, JobStatus::Blocked | JobStatus::Pending | JobStatus::Uninitialized)
                {
                    continue;
                }
                let target = v.runs.last().map(|r| r.target.clone()).unwrap_or_else(|| v.job.id.to_string());
                self.cli.check("scancel", &[&target]).await?;
                ledger.append(&Entry::Event {
                    workflow_id,
                    event: AuditEvent::now(who, "cancel", Some(v.job.id), format!("upstream job {up} failed")),
                })?;
                canceled.push(v.job.id);
                doomed.push(v.job.id);
            }
        }
        Ok(canceled)
    }

    /// Finish or drop the decisions a dead process began (see the module docs).
    pub(super) async fn recover_moves(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        let ledger = self.ledger().await?.clone();
        let _lock = ledger.lock()?;
        let book = ledger.read()?;
        let open: Vec<Decision> = book.unfinished(workflow_id).into_iter().cloned().collect();
        if open.is_empty() {
            return Ok(vec![]);
        }
        self.forget(workflow_id);
        let views = self.load(workflow_id).await?;
        let mut done = Vec::new();
        for d in open {
            let Some(v) = views.iter().find(|v| v.job.id == d.job_id) else { continue };
            let decided = v.runs.iter().find(|r| r.key == d.run);
            let newer = v.runs.last().is_some_and(|r| r.key.submit > d.run.submit);
            let (resolution, end) = match (d.action, decided) {
                (Action::Retry, _) if newer => (
                    "completed",
                    Entry::Done { id: d.id.clone(), resubmitted: None, canceled: vec![], when: Timestamp::now() },
                ),
                (Action::Retry, Some(r)) if r.run.job.state == "REQUEUED" || r.run.job.state == "PENDING" => {
                    // Held by `requeuehold`: finish the move.
                    self.update_resources(&r.target, &d.change).await?;
                    self.cli.check("scontrol", &["release", &r.target]).await?;
                    (
                        "completed",
                        Entry::Done { id: d.id.clone(), resubmitted: None, canceled: vec![], when: Timestamp::now() },
                    )
                }
                (Action::Retry, _) => (
                    "dropped",
                    Entry::Abandoned {
                        id: d.id.clone(),
                        why: "the job was not requeued or resubmitted before the process died".into(),
                        when: Timestamp::now(),
                    },
                ),
                (Action::Fail, _) => {
                    let canceled = self.cancel_dependents(workflow_id, d.job_id, &d.audit.who, &ledger).await?;
                    ("completed", Entry::Done { id: d.id.clone(), resubmitted: None, canceled, when: Timestamp::now() })
                }
            };
            ledger.append(&end)?;
            let mut e = AuditEvent::now(
                "triage (recovery)",
                "recover",
                Some(d.job_id),
                format!("an interrupted {} of job {} was {resolution}", d.action, d.job_id),
            );
            e.details = serde_json::json!({"resolution": resolution, "decision": d.id});
            ledger.append(&Entry::Event { workflow_id, event: e.clone() })?;
            done.push(e);
        }
        Ok(done)
    }
}

/// Copy the end of the run's stderr and stdout beside the ledger, and return the attempt as
/// it is now with those copies as its logs.
fn keep_logs(ledger: &Ledger, run: &RunInfo, v: &JobView) -> Result<Attempt, BackendError> {
    let mut attempt = v
        .job
        .attempts
        .last()
        .cloned()
        .ok_or_else(|| BackendError::Internal(format!("job {} has no finished attempt to decide on", v.job.id)))?;
    for (src, ext) in [(&run.stderr, "err"), (&run.stdout, "out")] {
        let Some(src) = src else { continue };
        let dst = ledger.log_copy(&run.key, ext);
        let tail = crate::logs::tail_bytes(src, LOG_COPY_BYTES, &Default::default());
        if let Ok(t) = tail {
            crate::fsutil::write_atomic(&dst, t.text().as_bytes()).map_err(|e| BackendError::io(&dst, e))?;
            let shown = dst.display().to_string();
            match ext {
                "err" => attempt.stderr = Some(shown),
                _ => attempt.stdout = Some(shown),
            }
        }
    }
    Ok(attempt)
}

/// A dependency list with `old` replaced by `new`, and Slurm's state notes dropped
/// (`afterok:20(failed)` -> `afterok:40`).
fn repoint(dep: &str, old: &str, new: &str) -> String {
    let mut out = Vec::new();
    for part in dep.split(',') {
        let (kind, ids) = part.split_once(':').unwrap_or((part, ""));
        let ids: Vec<String> = ids
            .split(':')
            .filter(|s| !s.is_empty())
            .map(|id| {
                let bare: String = id.chars().take_while(|c| *c != '(').collect();
                if bare == old || bare.split('_').next() == Some(old) && !old.contains('_') {
                    bare.replacen(old, new, 1)
                } else {
                    bare
                }
            })
            .collect();
        out.push(format!("{kind}:{}", ids.join(":")));
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn repointing_keeps_the_kind_and_drops_state_notes() {
        assert_eq!(super::repoint("afterok:20(failed)", "20", "40"), "afterok:40");
        assert_eq!(super::repoint("afterok:20(failed),afterany:21(unfulfilled)", "20", "40"), "afterok:40,afterany:21");
        assert_eq!(super::repoint("afterok:16_2(failed)", "16_2", "50_2"), "afterok:50_2");
    }
}
