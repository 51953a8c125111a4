//! The Slurm backend's moves: retry (requeue, or resubmit), fail (record, cancel the
//! dependents), and the recovery of a move a dead process left begun. Each holds the ledger's
//! lock from its guard check to its last entry.

use std::collections::{BTreeSet, HashMap, HashSet};

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::SlurmBackend;
use super::ledger::{Book, Decision, End, Entry, Incarnation, Ledger, ScriptOwner, decision_id};
use super::sacct;
use super::view::{self, JobView, RunInfo};
use crate::backend::{AuditEvent, BackendError, FailMove, MoveOutcome, ResourceChange, RetryMove};
use crate::model::{Action, Attempt, JobStatus};

/// The bytes of each log a decided run keeps a copy of.
const LOG_COPY_BYTES: u64 = 256 * 1024;

impl SlurmBackend {
    /// Retry a batch of jobs under one lock and one fresh read: the tasks of one array that
    /// the controller still holds go back with one `scontrol requeuehold`, one `update` per
    /// resource change and one `release` (per 256 tasks); those it forgot, with one `sbatch
    /// --array=3,17,40-60:2` per array and change (more only past Slurm's limit on the list). A command that fails for the group is tried job by job, so one
    /// bad job does not hold the others back.
    pub(super) async fn retry_many(
        &self,
        workflow_id: i64,
        moves: &[RetryMove],
    ) -> Vec<Result<MoveOutcome, BackendError>> {
        self.retry_batch(workflow_id, moves).await.unwrap_or_else(|e| each_failed(moves.len(), &e))
    }

    async fn retry_batch(
        &self,
        workflow_id: i64,
        moves: &[RetryMove],
    ) -> Result<Vec<Result<MoveOutcome, BackendError>>, BackendError> {
        let ledger = self.ledger().await?.clone();
        let _lock = ledger.lock()?;
        self.forget(workflow_id);
        let views = self.load(workflow_id).await?;
        self.retry_on(&ledger, &views, workflow_id, moves).await
    }

    /// The retries of [`SlurmBackend::retry_batch`], on `views` read under the lock held.
    async fn retry_on(
        &self,
        ledger: &Ledger,
        views: &[JobView],
        workflow_id: i64,
        moves: &[RetryMove],
    ) -> Result<Vec<Result<MoveOutcome, BackendError>>, BackendError> {
        let by_id: HashMap<i64, &JobView> = views.iter().map(|v| (v.job.id, v)).collect();
        let mut out: Vec<Option<Result<MoveOutcome, BackendError>>> = moves.iter().map(|_| None).collect();
        // The guard of each move, on this fresh read.
        let mut go: Vec<Go> = Vec::new();
        for (i, m) in moves.iter().enumerate() {
            let Some(v) = by_id.get(&m.job_id).copied() else {
                out[i] = Some(Err(BackendError::JobNotFound { workflow_id, job_id: m.job_id }));
                continue;
            };
            if !m.guard.holds(v.job.status, v.job.attempt_id, 1) {
                out[i] = Some(Ok(MoveOutcome::Stale { status: v.job.status, attempt_id: v.job.attempt_id, run_id: 1 }));
                continue;
            }
            let Some(run) = v.runs.last().cloned() else {
                out[i] = Some(Err(BackendError::Internal(format!("job {} has no run to retry", m.job_id))));
                continue;
            };
            go.push(Go { i, next_attempt: v.job.attempt_id + 1, run, id: String::new(), view: v.clone() });
        }
        // What the controller holds (one call per Slurm job or array).
        let mut held = HashMap::new();
        let mut asked = BTreeSet::new();
        for g in &go {
            if asked.insert(g.run.incarnation.job_id) {
                for r in self.records(&g.run.incarnation.job_id.to_string()).await? {
                    if let Some(raw) = r.job_id() {
                        held.insert(raw, r);
                    }
                }
            }
        }
        let mut requeue: Vec<Go> = Vec::new();
        let mut resubmit: Vec<Go> = Vec::new();
        let mut begins = Vec::new();
        let mut copies = crate::fsutil::AtomicBatch::new();
        for mut g in go {
            let m = &moves[g.i];
            let record = held.get(&g.run.key.raw_id).filter(|r| r.submit_time() == g.run.run.job.submit);
            if record.is_some_and(|r| !r.requeue()) {
                out[g.i] = Some(Err(BackendError::Unsupported(format!(
                    "job {} ({}) was submitted with --no-requeue (Requeue=0): Slurm will not run it again, and triage respects that; if it is safe to run twice, resubmit it by hand, or fail it",
                    m.job_id, g.run.target
                ))));
                continue;
            }
            let attempt = match keep_logs(ledger, &g.run, &g.view, &mut copies) {
                Ok(a) => a,
                Err(e) => {
                    out[g.i] = Some(Err(e));
                    continue;
                }
            };
            g.id = decision_id(workflow_id, m.job_id, &g.run.key);
            begins.push(Entry::Begin {
                id: g.id.clone(),
                workflow_id,
                job_id: m.job_id,
                run: g.run.key,
                action: Action::Retry,
                attempt: Box::new(attempt),
                change: m.change,
                audit: m.audit.clone(),
            });
            if record.is_some() { requeue.push(g) } else { resubmit.push(g) }
        }
        // The log copies on disk, then every begin entry in one write, before the first command.
        let logs = ledger.dir().join("logs");
        copies.commit().map_err(|e| BackendError::io(&logs, e))?;
        ledger.append_all(&begins)?;
        let moved =
            |g: &Go| MoveOutcome::Moved { status: JobStatus::Ready, attempt_id: g.next_attempt, canceled: vec![] };
        // Requeue: by resource change, one command per step for the whole group (for at most
        // REQUEUE_AT_ONCE tasks: the controller takes tens of milliseconds per task).
        let requeue = groups(requeue, |g| moves[g.i].change);
        for group in requeue.into_iter().flat_map(|g| chunked(g, REQUEUE_AT_ONCE)) {
            let change = moves[group[0].i].change;
            let results = self.requeue_group(&group, &change).await;
            let mut ends = Vec::new();
            for (g, r) in group.iter().zip(results) {
                out[g.i] = Some(match r {
                    Ok(()) => {
                        ends.push(Entry::Done {
                            id: g.id.clone(),
                            resubmitted: None,
                            canceled: vec![],
                            when: Timestamp::now(),
                        });
                        Ok(moved(g))
                    }
                    Err((e, changed)) => {
                        if !changed {
                            ends.push(Entry::Abandoned {
                                id: g.id.clone(),
                                why: e.to_string(),
                                when: Timestamp::now(),
                            });
                        }
                        Err(e)
                    }
                });
            }
            ledger.append_all(&ends)?;
        }
        // Resubmit: one sbatch per array (and change), one per job of a chain; an array's
        // tasks in as few submissions as Slurm's limit on an `--array` list allows.
        let resubmit = groups(resubmit, |g| {
            (
                moves[g.i].change,
                g.run.incarnation.task.map(|_| g.run.incarnation.job_id),
                if g.run.incarnation.task.is_none() { g.run.key.raw_id } else { 0 },
            )
        });
        for group in resubmit.into_iter().flat_map(sbatch_chunks) {
            let change = moves[group[0].i].change;
            match self.resubmit(&group, &change).await {
                Ok((new_id, since)) => {
                    let mut ends = Vec::new();
                    for g in &group {
                        let inc = Incarnation { job_id: new_id, task: g.run.incarnation.task, since: Some(since) };
                        ends.push(Entry::Done {
                            id: g.id.clone(),
                            resubmitted: Some(inc),
                            canceled: vec![],
                            when: Timestamp::now(),
                        });
                        out[g.i] = Some(Ok(moved(g)));
                    }
                    ledger.append_all(&ends)?;
                    if let Err(e) = self.cli.check_retrying("scontrol", &["release", &new_id.to_string()]).await {
                        // Recorded already: the next recovery releases it (see `release_held`).
                        tracing::warn!("job {new_id} was submitted held and could not be released yet: {e}");
                    }
                }
                Err(e) => {
                    let why = e.to_string();
                    let mut ends = Vec::new();
                    for g in &group {
                        ends.push(Entry::Abandoned { id: g.id.clone(), why: why.clone(), when: Timestamp::now() });
                        out[g.i] = Some(Err(BackendError::Batch(why.clone())));
                    }
                    ledger.append_all(&ends)?;
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err(BackendError::Internal("a move got no outcome".into()))))
            .collect())
    }

    /// `requeuehold`, `update`, `release` for a group sharing one resource change; per job:
    /// `Ok`, or the error and whether the job was already changed (held) when it happened.
    async fn requeue_group(&self, group: &[Go], change: &ResourceChange) -> Vec<Result<(), (BackendError, bool)>> {
        let targets: Vec<&str> = group.iter().map(|g| g.run.target.as_str()).collect();
        let list = targets.join(",");
        if self.cli.check("scontrol", &["requeuehold", &list]).await.is_ok() {
            if let Err(e) = self.update_resources(&list, change).await {
                let why = format!(
                    "{e}; the jobs are requeued and held: the next triage run (or `scontrol release {list}`) finishes the move"
                );
                return group.iter().map(|_| Err((BackendError::Batch(why.clone()), true))).collect();
            }
            if let Err(e) = self.cli.check_retrying("scontrol", &["release", &list]).await {
                let why = format!(
                    "{e}; the jobs are requeued and held: the next triage run (or `scontrol release {list}`) finishes the move"
                );
                return group.iter().map(|_| Err((BackendError::Batch(why.clone()), true))).collect();
            }
            return group.iter().map(|_| Ok(())).collect();
        }
        // One job of the group refused: try each alone.
        let mut out = Vec::with_capacity(group.len());
        for t in targets {
            out.push(match self.cli.check("scontrol", &["requeuehold", t]).await {
                Err(e) => Err((e, false)),
                Ok(_) => match self.update_resources(t, change).await {
                    Err(e) => Err((e, true)),
                    Ok(()) => {
                        self.cli.check_retrying("scontrol", &["release", t]).await.map(|_| ()).map_err(|e| (e, true))
                    }
                },
            });
        }
        out
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
    /// new resources, and for array tasks `--array=3,17,40-60:2` (ranges and steps: one
    /// submission for the group, which [`sbatch_chunks`] keeps within Slurm's limit);
    /// point pending jobs that depended on the old ids at the new ones. Returns the new id and
    /// its submit time (see [`Incarnation::since`]).
    async fn resubmit(&self, group: &[Go], change: &ResourceChange) -> Result<(u64, Timestamp), BackendError> {
        let first = &group[0].run;
        let inc = first.incarnation;
        let owner = ScriptOwner::of(&first.run.job);
        self.script(inc.job_id, &first.target, &owner, None).await?.ok_or_else(|| BackendError::Command {
            command: format!("scontrol write batch_script {}", inc.job_id),
            why: format!(
                "the controller no longer holds job {} and its batch script was never saved, or what was saved under that id is another job's (Slurm reissues the ids of purged jobs); set AccountingStoreFlags=job_script in slurm.conf so `sacct --batch-script` keeps scripts, or resubmit it by hand",
                inc.job_id
            ),
            transient: false,
        })?;
        let ledger = self.ledger().await?;
        let path = ledger.script(inc.job_id);
        let job = &first.run.job;
        let mut args: Vec<String> = vec!["--parsable".into(), format!("--job-name={}", job.name)];
        if let Some(dir) = &job.work_dir {
            args.push(format!("--chdir={dir}"));
        }
        if let Some(p) = self.seen_partition(first).await {
            args.push(format!("--partition={p}"));
        }
        if let Some(bytes) = change.memory.map(|m| m.bytes()).or(job.req_mem_bytes) {
            args.push(format!("--mem={}M", bytes.div_ceil(1 << 20)));
        }
        if let Some(secs) = change.runtime.map(|r| r.seconds()).or(job.timelimit_secs) {
            args.push(format!("--time={}", secs.div_ceil(60)));
        }
        // Submitted held, with a token in its comment: should the process die before the
        // ledger records it, the job waits (held jobs are never purged) until recovery finds it
        // by the token, records it and releases it. The caller releases it after `Done`.
        let token = format!("triage:{}", group[0].id);
        args.push(format!("--comment={token}"));
        args.push("--hold".into());
        let before = Timestamp::now();
        ledger.append(&Entry::Submitting { ids: group.iter().map(|g| g.id.clone()).collect(), token, when: before })?;
        let mut tasks: Vec<u32> = group.iter().filter_map(|g| g.run.incarnation.task).collect();
        if !tasks.is_empty() {
            tasks.sort_unstable();
            tasks.dedup();
            let spec: Vec<String> = array_pieces(&tasks).into_iter().map(|(p, _)| p).collect();
            args.push(format!("--array={}", spec.join(",")));
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
        // The controller's submit time of the new job (it is held, so the controller has it);
        // should that read fail, the time before `sbatch` less a clock-skew allowance.
        let since = self
            .records(&new_id.to_string())
            .await
            .ok()
            .and_then(|records| records.iter().find_map(|r| r.submit_time()))
            .unwrap_or_else(|| before_with_skew(before));
        // Pending jobs that waited on an old id now wait on the new one.
        let squeue = self.cli.check("squeue", &["-h", "-t", "PD", "-o", "%i|%E"]).await?;
        for line in squeue.stdout.lines() {
            let Some((id, dep)) = line.trim().split_once('|') else { continue };
            if !view::dependency_ids(dep).contains(&inc.job_id) {
                continue;
            }
            let mut repointed = dep.to_string();
            for g in group {
                let i = g.run.incarnation;
                let (old, new) = match i.task {
                    Some(t) => (format!("{}_{t}", i.job_id), format!("{new_id}_{t}")),
                    None => (i.job_id.to_string(), new_id.to_string()),
                };
                repointed = repoint(&repointed, &old, &new);
            }
            let (job_arg, dep_arg) = (format!("JobId={}", id.trim()), format!("Dependency={repointed}"));
            self.cli.check("scontrol", &["update", &job_arg, &dep_arg]).await?;
        }
        Ok((new_id, since))
    }

    async fn seen_partition(&self, run: &RunInfo) -> Option<String> {
        let ledger = self.ledger().await.ok()?;
        let seen: view::Seen = serde_json::from_slice(&std::fs::read(ledger.seen(&run.key)).ok()?).ok()?;
        seen.partition
    }

    /// Fail a batch of jobs under one lock and one fresh read, not one per job: each move
    /// past its guard gets its logs kept and a `begin` entry (all in one ledger write), then
    /// the chain's jobs that depend on it and have not run are canceled (one `scancel` each),
    /// then the `done` entries (one write). A process that dies in between leaves begun
    /// fails, which recovery completes (it cancels what is left and records them done).
    pub(super) async fn fail_many(
        &self,
        workflow_id: i64,
        moves: &[FailMove],
    ) -> Vec<Result<MoveOutcome, BackendError>> {
        self.fail_batch(workflow_id, moves).await.unwrap_or_else(|e| each_failed(moves.len(), &e))
    }

    async fn fail_batch(
        &self,
        workflow_id: i64,
        moves: &[FailMove],
    ) -> Result<Vec<Result<MoveOutcome, BackendError>>, BackendError> {
        let ledger = self.ledger().await?.clone();
        let _lock = ledger.lock()?;
        self.forget(workflow_id);
        let views = self.load(workflow_id).await?;
        self.fail_on(&ledger, &views, workflow_id, moves).await
    }

    /// Fail a batch and retry another under one lock and one fresh read, the fails first:
    /// for an array they are ledger entries only, and the retries' releases leave the
    /// cluster busy starting the tasks again (a fresh `sacct` of a 10,000-task array read
    /// right after 1,090 releases took 20 s, against 1.5 s before them).
    pub(super) async fn fail_and_retry(
        &self,
        workflow_id: i64,
        retries: &[RetryMove],
        fails: &[FailMove],
    ) -> (Vec<Result<MoveOutcome, BackendError>>, Vec<Result<MoveOutcome, BackendError>>) {
        let both_failed = |e: BackendError| (each_failed(retries.len(), &e), each_failed(fails.len(), &e));
        let ledger = match self.ledger().await {
            Ok(l) => l.clone(),
            Err(e) => return both_failed(e),
        };
        let read = async {
            let lock = ledger.lock()?;
            self.forget(workflow_id);
            Ok::<_, BackendError>((lock, self.load(workflow_id).await?))
        };
        let (_lock, views) = match read.await {
            Ok(r) => r,
            Err(e) => return both_failed(e),
        };
        let failed =
            self.fail_on(&ledger, &views, workflow_id, fails).await.unwrap_or_else(|e| each_failed(fails.len(), &e));
        let retried = self
            .retry_on(&ledger, &views, workflow_id, retries)
            .await
            .unwrap_or_else(|e| each_failed(retries.len(), &e));
        (retried, failed)
    }

    /// The fails of [`SlurmBackend::fail_batch`], on `views` read under the lock held.
    async fn fail_on(
        &self,
        ledger: &Ledger,
        views: &[JobView],
        workflow_id: i64,
        moves: &[FailMove],
    ) -> Result<Vec<Result<MoveOutcome, BackendError>>, BackendError> {
        let by_id: HashMap<i64, &JobView> = views.iter().map(|v| (v.job.id, v)).collect();
        let mut out: Vec<Option<Result<MoveOutcome, BackendError>>> = moves.iter().map(|_| None).collect();
        // The guard of each move, on this fresh read; then the begin entries.
        let mut begun: Vec<(usize, String, u32)> = Vec::new();
        let mut deciding: HashSet<i64> = HashSet::new();
        let mut begins = Vec::new();
        let mut copies = crate::fsutil::AtomicBatch::new();
        for (i, m) in moves.iter().enumerate() {
            let Some(v) = by_id.get(&m.job_id) else {
                out[i] = Some(Err(BackendError::JobNotFound { workflow_id, job_id: m.job_id }));
                continue;
            };
            let twice = deciding.contains(&m.job_id);
            if twice || !m.guard.holds(v.job.status, v.job.attempt_id, 1) {
                let status = if twice { JobStatus::Failed } else { v.job.status };
                out[i] = Some(Ok(MoveOutcome::Stale { status, attempt_id: v.job.attempt_id, run_id: 1 }));
                continue;
            }
            let Some(run) = v.runs.last() else {
                out[i] = Some(Err(BackendError::Internal(format!("job {} has no run to fail", m.job_id))));
                continue;
            };
            let attempt = match keep_logs(ledger, run, v, &mut copies) {
                Ok(a) => a,
                Err(e) => {
                    out[i] = Some(Err(e));
                    continue;
                }
            };
            let id = decision_id(workflow_id, m.job_id, &run.key);
            begins.push(Entry::Begin {
                id: id.clone(),
                workflow_id,
                job_id: m.job_id,
                run: run.key,
                action: Action::Fail,
                attempt: Box::new(attempt),
                change: ResourceChange::default(),
                audit: m.audit.clone(),
            });
            begun.push((i, id, v.job.attempt_id));
            deciding.insert(m.job_id);
        }
        let logs = ledger.dir().join("logs");
        copies.commit().map_err(|e| BackendError::io(&logs, e))?;
        ledger.append_all(&begins)?;
        // The dependents, then the done entries.
        let dependents = Dependents::of(views);
        let mut gone = BTreeSet::new();
        let mut dones = Vec::new();
        for (i, id, attempt_id) in begun {
            let m = &moves[i];
            out[i] = Some(
                match self.cancel_dependents(&dependents, workflow_id, m.job_id, &m.audit.who, ledger, &mut gone).await
                {
                    Ok(canceled) => {
                        dones.push(Entry::Done {
                            id,
                            resubmitted: None,
                            canceled: canceled.clone(),
                            when: Timestamp::now(),
                        });
                        Ok(MoveOutcome::Moved { status: JobStatus::Failed, attempt_id, canceled })
                    }
                    // Begun and not done: the next recovery cancels what is left.
                    Err(e) => Err(e),
                },
            );
        }
        ledger.append_all(&dones)?;
        Ok(out
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err(BackendError::Internal("a move got no outcome".into()))))
            .collect())
    }

    /// Cancel the chain's jobs that depend on `job_id`, transitively, and have not run (as
    /// the view `dependents` was built from shows them), except those in `gone` (canceled
    /// already); adds what it cancels to `gone`.
    async fn cancel_dependents(
        &self,
        dependents: &Dependents<'_>,
        workflow_id: i64,
        job_id: i64,
        who: &str,
        ledger: &Ledger,
        gone: &mut BTreeSet<i64>,
    ) -> Result<Vec<i64>, BackendError> {
        let mut doomed = vec![job_id];
        let mut canceled = Vec::new();
        while let Some(up) = doomed.pop() {
            for v in dependents.on(up) {
                if gone.contains(&v.job.id)
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
                gone.insert(v.job.id);
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
        let mut done = self.release_recorded(workflow_id, &book, &ledger).await?;
        let open: Vec<Decision> = book.unfinished(workflow_id).into_iter().cloned().collect();
        if open.is_empty() {
            return Ok(done);
        }
        self.forget(workflow_id);
        let views = self.load(workflow_id).await?;
        let dependents = Dependents::of(&views);
        let by_id: HashMap<i64, &JobView> = views.iter().map(|v| (v.job.id, v)).collect();
        // Which jobs wait held, asked once for all the open retries rather than once each.
        let mut held_now: Option<BTreeSet<String>> = None;
        for d in open {
            let Some(v) = by_id.get(&d.job_id).copied() else { continue };
            let decided = v.runs.iter().find(|r| r.key == d.run);
            let newer = v.runs.last().is_some_and(|r| r.key.submit > d.run.submit);
            // A requeued job keeps its id, and accounting may already list its new, held
            // incarnation as a newer run: held, the move is not done until it is released.
            // (Without a newer run, a held job's own run is the pending one the arm below takes.)
            let held = match (d.action, decided) {
                (Action::Retry, Some(r)) if newer => {
                    if held_now.is_none() {
                        held_now = Some(self.held_jobs().await?);
                    }
                    held_now.as_ref().is_some_and(|h| h.contains(&r.target))
                }
                _ => false,
            };
            let (resolution, end) = match (d.action, decided) {
                (Action::Retry, _) if newer && !held => (
                    "completed",
                    Entry::Done { id: d.id.clone(), resubmitted: None, canceled: vec![], when: Timestamp::now() },
                ),
                (Action::Retry, Some(r)) if held || r.run.job.state == "REQUEUED" || r.run.job.state == "PENDING" => {
                    // Held by `requeuehold`: finish the move.
                    self.update_resources(&r.target, &d.change).await?;
                    self.cli.check("scontrol", &["release", &r.target]).await?;
                    (
                        "completed",
                        Entry::Done { id: d.id.clone(), resubmitted: None, canceled: vec![], when: Timestamp::now() },
                    )
                }
                (Action::Retry, _) if book.submitting.contains_key(&d.id) => {
                    let token = &book.submitting[&d.id];
                    let task = decided.and_then(|r| r.incarnation.task);
                    match self.find_submission(token, d.audit.when, task).await? {
                        Some(inc) => {
                            // Record it, then release it (as the move itself does).
                            ledger.append(&Entry::Done {
                                id: d.id.clone(),
                                resubmitted: Some(inc),
                                canceled: vec![],
                                when: Timestamp::now(),
                            })?;
                            self.cli.check("scontrol", &["release", &inc.job_id.to_string()]).await?;
                            let why = format!("released job {}, submitted held before the crash", inc.job_id);
                            (
                                "completed",
                                Entry::Event {
                                    workflow_id,
                                    event: AuditEvent::now("triage (recovery)", "release", Some(d.job_id), why),
                                },
                            )
                        }
                        None => (
                            "dropped",
                            Entry::Abandoned {
                                id: d.id.clone(),
                                why: format!("no job carries the submission's comment `{token}`: sbatch never ran"),
                                when: Timestamp::now(),
                            },
                        ),
                    }
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
                    let canceled = self
                        .cancel_dependents(
                            &dependents,
                            workflow_id,
                            d.job_id,
                            &d.audit.who,
                            &ledger,
                            &mut BTreeSet::new(),
                        )
                        .await?;
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

/// The jobs of a view that depend on each job (none in an array), indexed once per batch of
/// fails rather than searched for each fail.
struct Dependents<'a>(HashMap<i64, Vec<&'a JobView>>);

impl<'a> Dependents<'a> {
    fn of(views: &'a [JobView]) -> Dependents<'a> {
        let mut map: HashMap<i64, Vec<&JobView>> = HashMap::new();
        for v in views {
            for &up in &v.job.depends_on {
                map.entry(up).or_default().push(v);
            }
        }
        Dependents(map)
    }

    /// The jobs that depend on `job_id` directly, in the view's order.
    fn on(&self, job_id: i64) -> impl Iterator<Item = &'a JobView> + '_ {
        self.0.get(&job_id).into_iter().flatten().copied()
    }
}

/// One retry of a batch, past its guard.
struct Go {
    /// Its index among the moves.
    i: usize,
    next_attempt: u32,
    run: RunInfo,
    view: JobView,
    /// Its ledger decision id, once begun.
    id: String,
}

/// How many tasks one `requeuehold` / `update` / `release` names. The controller handles each
/// task of the list in turn (1,000 pending tasks in one `scontrol update` took 44 s on a busy
/// 2-core test machine), and each command must end within the backend's timeout.
const REQUEUE_AT_ONCE: usize = 256;

/// `items` in runs of at most `n`, in order.
fn chunked(items: Vec<Go>, n: usize) -> Vec<Vec<Go>> {
    let mut out = Vec::new();
    let mut rest = items.into_iter().peekable();
    while rest.peek().is_some() {
        out.push(rest.by_ref().take(n.max(1)).collect());
    }
    out
}

/// The longest `--array` list Slurm takes (22.05: 4,096 characters are accepted, 4,097 refused
/// with "Pathname of a file, directory or other parameter too long").
const ARRAY_SPEC_MAX: usize = 4096;

/// Sorted, distinct task ids as the pieces of an `--array` list, each with how many tasks it
/// names: `7`, `3-5` (consecutive), `0-9980:20` (three or more with one step).
fn array_pieces(tasks: &[u32]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tasks.len() {
        let first = tasks[i];
        let mut last = i;
        if let Some(&next) = tasks.get(i + 1) {
            let step = next - first;
            let mut j = i + 1;
            while tasks.get(j + 1).is_some_and(|&t| t - tasks[j] == step) {
                j += 1;
            }
            if step == 1 || j - i >= 2 {
                last = j;
            }
        }
        let piece = match last - i {
            0 => first.to_string(),
            _ if tasks[i + 1] - first == 1 => format!("{first}-{}", tasks[last]),
            _ => format!("{first}-{}:{}", tasks[last], tasks[i + 1] - first),
        };
        out.push((piece, last - i + 1));
        i = last + 1;
    }
    out
}

/// Sorted, distinct task ids split into runs whose `--array` lists stay within `max`
/// characters, in order.
fn array_chunks(tasks: &[u32], max: usize) -> Vec<&[u32]> {
    let mut out = Vec::new();
    let (mut start, mut len, mut count) = (0, 0, 0);
    for (piece, n) in array_pieces(tasks) {
        let add = piece.len() + usize::from(count > 0);
        if count > 0 && len + add > max {
            out.push(&tasks[start..start + count]);
            start += count;
            (len, count) = (piece.len(), n);
        } else {
            len += add;
            count += n;
        }
    }
    if count > 0 {
        out.push(&tasks[start..start + count]);
    }
    out
}

/// A resubmission group split so that each part's `--array` list fits one `sbatch` (a
/// chain's job, without tasks, stays whole).
fn sbatch_chunks(mut group: Vec<Go>) -> Vec<Vec<Go>> {
    if group.iter().any(|g| g.run.incarnation.task.is_none()) {
        return vec![group];
    }
    group.sort_by_key(|g| g.run.incarnation.task);
    group.dedup_by_key(|g| g.run.incarnation.task);
    let tasks: Vec<u32> = group.iter().filter_map(|g| g.run.incarnation.task).collect();
    let sizes: Vec<usize> = array_chunks(&tasks, ARRAY_SPEC_MAX).iter().map(|c| c.len()).collect();
    let mut rest = group.into_iter();
    sizes.into_iter().map(|n| rest.by_ref().take(n).collect()).collect()
}

/// Split `items` into groups with equal `key`, keeping their order within each group.
fn groups<K: PartialEq>(items: Vec<Go>, key: impl Fn(&Go) -> K) -> Vec<Vec<Go>> {
    let mut out: Vec<(K, Vec<Go>)> = Vec::new();
    for g in items {
        let k = key(&g);
        match out.iter_mut().find(|(ok, _)| *ok == k) {
            Some((_, v)) => v.push(g),
            None => out.push((k, vec![g])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

impl SlurmBackend {
    /// Release the resubmissions of `workflow_id` that the ledger records as done but that
    /// still wait held (the process died between recording and releasing them).
    async fn release_recorded(
        &self,
        workflow_id: i64,
        book: &Book,
        ledger: &Ledger,
    ) -> Result<Vec<AuditEvent>, BackendError> {
        let mut out = Vec::new();
        let squeue = self.cli.check("squeue", &["-h", "-t", "PD", "-o", "%F|%r|%k"]).await?;
        let mut released = BTreeSet::new();
        for line in squeue.stdout.lines() {
            let f: Vec<&str> = line.trim().splitn(3, '|').collect();
            let (Some(id), Some(reason), Some(token)) = (f.first(), f.get(1), f.get(2)) else { continue };
            let Some(decision) = token.strip_prefix("triage:") else { continue };
            let recorded = book
                .decisions
                .iter()
                .any(|d| d.id == decision && d.workflow_id == workflow_id && matches!(d.end, Some(End::Done { .. })));
            if !recorded || *reason != "JobHeldUser" || !released.insert(id.to_string()) {
                continue;
            }
            self.cli.check("scontrol", &["release", id]).await?;
            let e = AuditEvent::now(
                "triage (recovery)",
                "release",
                None,
                format!("released job {id}, recorded as a retry but still held"),
            );
            ledger.append(&Entry::Event { workflow_id, event: e.clone() })?;
            out.push(e);
        }
        Ok(out)
    }

    /// The jobs that wait held, as `scontrol requeuehold` leaves them (squeue's reason
    /// `job requeued in held state`; `JobHeldUser` or `JobHeldAdmin` after a plain hold), by
    /// the id a run's `target` uses: `123`, or `123_4` for an array task (`--array` lists
    /// each pending task on its own line). A job the controller no longer knows is not held.
    async fn held_jobs(&self) -> Result<BTreeSet<String>, BackendError> {
        let out = self.cli.check("squeue", &["-h", "--array", "-t", "PD", "-o", "%i|%r"]).await?;
        Ok(held_ids(&out.stdout))
    }

    /// The job a begun resubmission made, found by the comment it was submitted with
    /// (`squeue` while it waits or runs, else `sacct`, which keeps comments with
    /// `AccountingStoreFlags=job_comment`), with its submit time.
    async fn find_submission(
        &self,
        token: &str,
        since: Timestamp,
        task: Option<u32>,
    ) -> Result<Option<Incarnation>, BackendError> {
        let mut found: Option<(u64, Option<Timestamp>)> = None;
        let squeue = self.cli.check("squeue", &["-h", "-o", "%F|%V|%k"]).await?;
        for line in squeue.stdout.lines() {
            let f: Vec<&str> = line.trim().splitn(3, '|').collect();
            if f.len() == 3 && f[2] == token {
                found = f[0].parse::<u64>().ok().map(|id| (id, sacct::local_time(f[1], &TimeZone::system())));
            }
        }
        if found.is_none() {
            // sacct reads -S in the machine's time zone; a minute early covers clock slack.
            let since = since
                .checked_sub(jiff::SignedDuration::from_secs(60))
                .unwrap_or(since)
                .to_zoned(TimeZone::system())
                .strftime("%Y-%m-%dT%H:%M:%S")
                .to_string();
            let out = self.cli.check("sacct", &["-X", "-n", "-P", "-S", &since, "-o", "JobID,Submit,Comment"]).await?;
            for line in out.stdout.lines() {
                let f: Vec<&str> = line.splitn(3, '|').collect();
                if f.len() == 3 && f[2] == token {
                    found = f[0]
                        .split('_')
                        .next()
                        .and_then(|s| s.parse().ok())
                        .map(|id| (id, sacct::local_time(f[1], &TimeZone::system())));
                }
            }
        }
        Ok(found.map(|(job_id, submit)| Incarnation {
            job_id,
            task,
            since: Some(submit.unwrap_or_else(|| before_with_skew(since))),
        }))
    }
}

/// The ids of the held jobs in `squeue -o '%i|%r'` output (see [`SlurmBackend::held_jobs`]).
fn held_ids(squeue: &str) -> BTreeSet<String> {
    squeue
        .lines()
        .filter_map(|line| line.trim().split_once('|'))
        .filter(|(_, reason)| reason.to_ascii_lowercase().contains("held"))
        .map(|(id, _)| id.to_string())
        .collect()
}

/// The earliest submit time the controller can have given a job submitted after `before` by
/// this machine's clock: [`CLOCK_SKEW`] earlier. A run of the same id submitted before that
/// is another job's: Slurm reissues an id only after that job ended and was purged, which
/// takes longer.
fn before_with_skew(before: Timestamp) -> Timestamp {
    before.checked_sub(CLOCK_SKEW).unwrap_or(before)
}

/// How far this machine's clock may be ahead of the Slurm controller's.
const CLOCK_SKEW: jiff::SignedDuration = jiff::SignedDuration::from_secs(5);

/// Stage copies of the end of the run's stderr and stdout beside the ledger in `copies` (made
/// durable by its commit, once for a whole batch of moves), and return the attempt as it is
/// now with those copies as its logs.
/// The outcome of each of `n` moves of a batch that stopped before any was made: `e`, as a
/// batch error (the move did not happen; the batch can be asked again).
fn each_failed(n: usize, e: &BackendError) -> Vec<Result<MoveOutcome, BackendError>> {
    let why = e.to_string();
    (0..n).map(|_| Err(BackendError::Batch(why.clone()))).collect()
}

fn keep_logs(
    ledger: &Ledger,
    run: &RunInfo,
    v: &JobView,
    copies: &mut crate::fsutil::AtomicBatch,
) -> Result<Attempt, BackendError> {
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
            copies.stage(&dst, t.text().as_bytes()).map_err(|e| BackendError::io(&dst, e))?;
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
    fn array_lists_use_ranges_and_steps_and_fit_slurms_limit() {
        let pieces = |t: &[u32]| super::array_pieces(t).into_iter().map(|(p, _)| p).collect::<Vec<_>>().join(",");
        assert_eq!(pieces(&[3]), "3");
        assert_eq!(pieces(&[3, 17, 42]), "3,17,42");
        assert_eq!(pieces(&[1, 2, 3, 5, 7, 9, 20]), "1-3,5-9:2,20");
        assert_eq!(pieces(&[4, 5]), "4-5");
        let every_20th: Vec<u32> = (0..10_000).step_by(20).collect();
        assert_eq!(pieces(&every_20th), "0-9980:20");
        // No pattern at all: chunks under the limit that together name every task once.
        let scattered: Vec<u32> =
            (0..3000u32).map(|i| i * i % 99_991).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        let chunks = super::array_chunks(&scattered, super::ARRAY_SPEC_MAX);
        assert!(chunks.len() > 1, "{} tasks of 4-5 digits do not fit one list", scattered.len());
        assert!(chunks.iter().all(|c| pieces(c).len() <= super::ARRAY_SPEC_MAX));
        assert_eq!(chunks.concat(), scattered);
        assert_eq!(super::array_chunks(&every_20th, super::ARRAY_SPEC_MAX).len(), 1);
        assert!(super::array_chunks(&[], 10).is_empty());
    }

    #[test]
    fn held_ids_are_the_held_lines_ids_as_targets_name_them() {
        let squeue = "41|job requeued in held state\n42_3|JobHeldUser\n42_4|Resources\n43|JobHeldAdmin\n44|Priority\n";
        let held: Vec<String> = super::held_ids(squeue).into_iter().collect();
        assert_eq!(held, ["41", "42_3", "43"]);
        assert!(super::held_ids("").is_empty());
    }

    #[test]
    fn repointing_keeps_the_kind_and_drops_state_notes() {
        assert_eq!(super::repoint("afterok:20(failed)", "20", "40"), "afterok:40");
        assert_eq!(super::repoint("afterok:20(failed),afterany:21(unfulfilled)", "20", "40"), "afterok:40,afterany:21");
        assert_eq!(super::repoint("afterok:16_2(failed)", "16_2", "50_2"), "afterok:50_2");
    }
}
