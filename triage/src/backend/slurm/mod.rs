//! `slurm:`, a Slurm cluster through its client commands (`sacct`, `scontrol`, `sbatch`,
//! `scancel`, `squeue` on PATH; `SLURM_CONF` as Slurm reads it; `slurm:?cluster=NAME` adds
//! `-M NAME`). Tested against a real Slurm 22.05 cluster (slurmctld, slurmd, slurmdbd).
//!
//! Slurm has no `pending_failed` and nowhere to write a reason, so triage keeps a ledger
//! ([`ledger`]): a job awaits triage when its last run ended FAILED, OUT_OF_MEMORY, TIMEOUT,
//! NODE_FAIL, PREEMPTED, BOOT_FAIL or DEADLINE and the ledger holds no decision on that run.
//! How `--workflow` groups jobs and where logs are: [`view`].
//!
//! The moves, each under the ledger's lock, checked against a fresh `sacct` read first (the
//! guard: the job's latest run is still the attempt the caller saw, still undecided):
//! - retry while the controller still holds the job: `scontrol requeuehold`, `scontrol
//!   update` (MinMemoryNode / TimeLimit) when resources grow, `scontrol release`. The job keeps
//!   its id; the next run is the next attempt;
//! - retry once the controller has forgotten it: `sbatch` of the same batch script (kept when
//!   first seen, else `sacct --batch-script`) with the same name, directory and partition and the
//!   new resources (an array task as `--array=TASK`); the new id is recorded as the next
//!   incarnation of the same job, and pending jobs that depended on the old id are pointed at
//!   the new one (`scontrol update Dependency=`);
//! - fail: recorded in the ledger; the chain's jobs that depend on it and have not run are
//!   canceled (`scancel`), as Torc cancels them.
//!
//! Before a retry, the ends of the run's stderr and stdout are copied beside the ledger:
//! Slurm truncates them when the job runs again, and the next triage compares attempts.
//! A move that dies between its commands leaves a begun decision; `recover` finishes it
//! (release a held job) or drops it (nothing changed) before anything else is applied.

mod cli;
pub mod filename;
pub mod ledger;
mod moves;
mod reissued;
pub mod sacct;
pub mod scontrol;
pub mod view;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A workflow's jobs as built from Slurm and the ledger.
type View = Arc<Vec<JobView>>;

/// How long a read may reuse the last view of a workflow.
const FRESH_FOR: Duration = Duration::from_secs(2);

use async_trait::async_trait;

use self::cli::SlurmCli;
use self::ledger::{Entry, Ledger, RunKey, ScriptOwner};
use self::scontrol::JobRecord;
use self::view::{JobView, Members, Seen, Shape, Sources};
use crate::backend::{
    AuditEvent, BackendError, FailMove, Guard, JobBackend, JobPage, LogFile, LogStream, MoveOutcome, PageRequest,
    ResourceChange, RetryMove, WorkflowInfo,
};
use crate::model::{Job, JobStatus};

/// What opening a Slurm backend needs.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// Triage's state folder; the ledger is `STATE/slurm/<cluster>/`.
    pub state_dir: PathBuf,
    /// Timeout of every client command.
    pub timeout: Duration,
}

impl Default for SlurmOptions {
    fn default() -> Self {
        SlurmOptions { state_dir: crate::resilience::CircuitBook::default_dir(), timeout: Duration::from_secs(30) }
    }
}

/// A Slurm cluster.
pub struct SlurmBackend {
    cli: SlurmCli,
    cluster: Option<String>,
    state_dir: PathBuf,
    ledger: tokio::sync::OnceCell<Ledger>,
    /// The last view of each workflow, and when it was built: reads within [`FRESH_FOR`]
    /// reuse it (a triage run asks for the workflow, its jobs and their logs in a row; a busy
    /// controller is a shared resource). Moves never do: they read anew under the lock.
    views: Mutex<HashMap<i64, (Instant, View)>>,
}

impl SlurmBackend {
    pub fn open(cluster: Option<String>, opts: SlurmOptions) -> Result<SlurmBackend, BackendError> {
        Ok(SlurmBackend {
            cli: SlurmCli { cluster: cluster.clone(), timeout: opts.timeout },
            cluster,
            state_dir: opts.state_dir,
            ledger: tokio::sync::OnceCell::new(),
            views: Mutex::new(HashMap::new()),
        })
    }

    /// The cluster's ledger (`STATE/slurm/<ClusterName>/`), its name asked of `scontrol show
    /// config` once when no `?cluster=` names it.
    async fn ledger(&self) -> Result<&Ledger, BackendError> {
        self.ledger
            .get_or_try_init(|| async {
                let name = match &self.cluster {
                    Some(c) => c.clone(),
                    None => {
                        let out = self.cli.check("scontrol", &["show", "config"]).await?;
                        out.stdout
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once('=')?;
                                (k.trim() == "ClusterName").then(|| v.trim().to_string())
                            })
                            .filter(|n| {
                                !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
                            })
                            .unwrap_or_else(|| "default".into())
                    }
                };
                Ledger::open(self.state_dir.join("slurm").join(name))
            })
            .await
    }

    /// `sacct -D -P` rows of the given job ids (one call).
    async fn sacct(&self, ids: &[String]) -> Result<Vec<sacct::SacctRow>, BackendError> {
        let list = ids.join(",");
        let out = self.cli.check("sacct", &["-D", "-P", "--format", sacct::SACCT_FIELDS, "-j", &list]).await?;
        sacct::parse(&out.stdout).map_err(|e| BackendError::Command {
            command: format!("sacct -D -P -j {list}"),
            why: e.to_string(),
            transient: false,
        })
    }

    /// `scontrol -o show job ID` records by raw id (none when the controller forgot it).
    async fn records(&self, id: &str) -> Result<Vec<JobRecord>, BackendError> {
        let out = self.cli.run("scontrol", &["-o", "show", "job", id]).await?;
        if !out.ok() {
            if scontrol::invalid_job_id(&out.stderr) {
                return Ok(vec![]);
            }
            return Err(BackendError::Command {
                command: format!("scontrol -o show job {id}"),
                why: out.stderr.trim().to_string(),
                transient: true,
            });
        }
        Ok(scontrol::parse(&out.stdout))
    }

    /// The batch script of job `id` whose run is described by `owner`: the ledger's copy, else
    /// the controller's (while it holds the job), else the accounting database's
    /// (`AccountingStoreFlags=job_script`); kept. `one` names one job that ran it (`16_2` for an
    /// array, whose every task shares it): the database prints the script once per job it is
    /// asked about, 10,000 times for a 10,000-task array asked by its id.
    ///
    /// Slurm can hand a purged job's id to a new job, so every source is checked to be
    /// `owner`'s job (same name, directory and user) before its script is used; a copy kept for
    /// another job, without a record of whose it is, or that someone else could have written
    /// ([`Ledger::private_script`]), is not used.
    /// `held`: whether the controller holds job `id` as `owner`'s job ([`ScriptOwner::held_in`]);
    /// `None`: not known yet, asked only if the kept copy is not `owner`'s (a 10,000-task array's
    /// `scontrol show job` is large).
    async fn script(
        &self,
        id: u64,
        one: &str,
        owner: &ScriptOwner,
        held: Option<bool>,
    ) -> Result<Option<String>, BackendError> {
        let ledger = self.ledger().await?;
        let path = ledger.script(id);
        let owner_path = ledger.script_owner(id);
        if let Some((s, kept_owner)) = ledger.private_script(id)
            && kept_owner == *owner
        {
            // A copy kept by an earlier version may hold every task's script in a row.
            return Ok(Some(sacct::first_batch_script(&s)));
        }
        let mut script = None;
        let held = match held {
            Some(h) => h,
            None => self.records(&id.to_string()).await?.iter().any(|r| owner.held_in(r)),
        };
        if held {
            let out = self.cli.run("scontrol", &["write", "batch_script", &id.to_string(), "-"]).await?;
            script = (out.ok() && out.stdout.starts_with("#!")).then(|| out.stdout.clone());
        }
        if script.is_none() {
            // sacct without -D describes the newest job of that id: it must be owner's.
            let newest = self.cli.run("sacct", &["-X", "-n", "-P", "-j", one, "-o", sacct::OWNER_FIELDS]).await?;
            if newest.ok() && sacct::owner_matches(&newest.stdout, owner) {
                let out = self.cli.run("sacct", &["--batch-script", "-j", one]).await?;
                let body = sacct::first_batch_script(&out.stdout);
                script = body.starts_with("#!").then_some(body);
            }
        }
        if let Some(s) = &script {
            crate::fsutil::write_private(&path, s.as_bytes()).map_err(|e| BackendError::io(&path, e))?;
            let bytes = serde_json::to_vec(owner).map_err(|e| BackendError::Internal(e.to_string()))?;
            crate::fsutil::write_private(&owner_path, &bytes).map_err(|e| BackendError::io(&owner_path, e))?;
        }
        Ok(script)
    }

    /// The workflow's view: the one built within [`FRESH_FOR`], else a new one.
    async fn load(&self, workflow_id: i64) -> Result<Arc<Vec<JobView>>, BackendError> {
        let recent =
            self.views.lock().ok().and_then(|v| {
                v.get(&workflow_id).filter(|(at, _)| at.elapsed() < FRESH_FOR).map(|(_, view)| view.clone())
            });
        match recent {
            Some(v) => Ok(v),
            None => self.build(workflow_id).await,
        }
    }

    /// Build the workflow's view from Slurm and the ledger (and remember it). The commands:
    /// one `sacct` (a second one of the other ids for a chain or a resubmitted job), one `scontrol -o show job` per Slurm
    /// job or array, one `squeue` for a chain, and the first time a job is seen one
    /// `scontrol write batch_script` (or `sacct --batch-script`): a 10,000-task array costs three
    /// to five commands.
    async fn build(&self, workflow_id: i64) -> Result<Arc<Vec<JobView>>, BackendError> {
        let not_found = |why: &str| BackendError::WorkflowNotFound {
            backend: self.describe(),
            workflow_id,
            hint: format!(
                "{why}; `--workflow` is a job array's id or a job's id as sacct shows it (`sacct -X -j {workflow_id}`), on this cluster{}",
                self.cluster.as_ref().map(|c| format!(" ({c})")).unwrap_or_default()
            ),
        };
        if workflow_id <= 0 {
            return Err(not_found("a Slurm job id is a positive number"));
        }
        let root = workflow_id as u64;
        let started = Instant::now();
        let ledger = self.ledger().await?;
        let book = ledger.read()?;
        let first = self.sacct(&[root.to_string()]).await?;
        if first.is_empty() {
            return Err(not_found("sacct knows no such job"));
        }
        let shape =
            if first.iter().any(|r| r.array.is_some_and(|(a, _)| a == root)) { Shape::Array } else { Shape::Chain };
        let members_path = ledger.dir().join(format!("workflow-{root}.json"));
        let mut members = Members::default();
        let mut ids: Vec<String> = vec![root.to_string()];
        if shape == Shape::Chain {
            let remembered: Members =
                std::fs::read(&members_path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
            let squeue = self.cli.check("squeue", &["-h", "-t", "PD", "-o", "%i|%E"]).await?;
            members = view::discover_members(root, &squeue.stdout, &remembered);
            if members != remembered {
                let bytes = serde_json::to_vec(&members).map_err(|e| BackendError::Internal(e.to_string()))?;
                crate::fsutil::write_atomic(&members_path, &bytes).map_err(|e| BackendError::io(&members_path, e))?;
            }
            ids = members.depends_on.keys().map(|k| k.to_string()).collect();
        }
        for (_, inc) in book.resubmissions(workflow_id) {
            ids.push(inc.job_id.to_string());
        }
        ids.sort();
        ids.dedup();
        // The root's rows are in hand: the second `sacct` asks only for the other ids (for a
        // 10,000-task array with resubmissions, not its 10,000 tasks' rows again).
        let others: Vec<String> = ids.iter().filter(|id| **id != root.to_string()).cloned().collect();
        let mut rows = first;
        if !others.is_empty() {
            rows.extend(self.sacct(&others).await?);
        }
        // Whose job each id names now (its newest run), for the scripts kept under it.
        let owners = view::newest_owners(&ids, &rows);
        // The controller's records, for output paths of runs it still holds.
        let mut records = HashMap::new();
        let mut held = HashSet::new();
        for id in &ids {
            for r in self.records(id).await? {
                if let Some(n) = id.parse::<u64>().ok().filter(|n| owners.get(n).is_some_and(|o| o.held_in(&r))) {
                    held.insert(n);
                }
                if let Some(raw) = r.job_id() {
                    records.insert(raw, r);
                }
            }
        }
        // Remember what the controller says of each latest run while it can say it.
        // (Written together: a requeued batch's tasks are each a new run the controller holds.)
        let mut seen = HashMap::new();
        let mut new_seen = crate::fsutil::AtomicBatch::new();
        for row in rows.iter().filter(|r| r.step.is_none()) {
            let Some(submit) = row.submit else { continue };
            let key = RunKey { raw_id: row.raw_id, submit };
            let path = ledger.seen(&key);
            if let Some(rec) = records.get(&row.raw_id).filter(|rec| rec.submit_time() == Some(submit)) {
                let s = Seen::of(rec);
                if !path.is_file() {
                    let bytes = serde_json::to_vec(&s).map_err(|e| BackendError::Internal(e.to_string()))?;
                    new_seen.stage(&path, &bytes).map_err(|e| BackendError::io(&path, e))?;
                }
                seen.insert(key, s);
            } else if let Some(s) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Seen>(&b).ok()) {
                seen.insert(key, s);
            }
        }
        let seen_dir = ledger.dir().join("seen");
        new_seen.commit().map_err(|e| BackendError::io(&seen_dir, e))?;
        // Output patterns from the scripts, for runs nobody recorded paths of.
        let mut patterns = HashMap::new();
        for id in &ids {
            let Ok(id) = id.parse::<u64>() else { continue };
            // One job that ran the script: a task, for an array.
            let one = rows
                .iter()
                .find(|r| r.step.is_none() && r.array.is_some_and(|(a, _)| a == id))
                .map_or_else(|| id.to_string(), |r| r.key.clone());
            let Some(owner) = owners.get(&id) else { continue };
            if let Some(script) = self.script(id, &one, owner, Some(held.contains(&id))).await? {
                patterns.insert(id, view::script_patterns(&script));
            }
        }
        let logs = |run: &RunKey, ext: &str| ledger.log_copy(run, ext);
        let src = Sources {
            workflow_id,
            shape,
            rows,
            book: &book,
            records: &records,
            members: &members,
            seen: &seen,
            patterns: &patterns,
            ledger_logs: &logs,
        };
        let computed = Instant::now();
        let views = Arc::new(view::build(&src));
        tracing::debug!(
            workflow_id,
            jobs = views.len(),
            total_ms = started.elapsed().as_millis() as u64,
            view_ms = computed.elapsed().as_millis() as u64,
            "slurm view built"
        );
        if let Ok(mut v) = self.views.lock() {
            v.insert(workflow_id, (Instant::now(), views.clone()));
        }
        Ok(views)
    }

    fn forget(&self, workflow_id: i64) {
        if let Ok(mut v) = self.views.lock() {
            v.remove(&workflow_id);
        }
    }

    fn cached(&self, workflow_id: i64) -> Option<Arc<Vec<JobView>>> {
        self.views.lock().ok()?.get(&workflow_id).map(|(_, v)| v.clone())
    }
}

#[async_trait]
impl JobBackend for SlurmBackend {
    fn describe(&self) -> String {
        crate::backend::BackendSpec::Slurm { cluster: self.cluster.clone() }.to_string()
    }

    async fn workflow(&self, workflow_id: i64) -> Result<WorkflowInfo, BackendError> {
        let views = self.load(workflow_id).await?;
        let name = match views.first() {
            Some(v) if views.len() == 1 || v.job.name.contains('_') => {
                v.runs.last().map(|r| r.run.job.name.clone()).unwrap_or_default()
            }
            Some(v) => v.job.name.clone(),
            None => String::new(),
        };
        Ok(WorkflowInfo { id: workflow_id, name, use_pending_failed: true, run_id: 1 })
    }

    async fn list_jobs(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        page: PageRequest,
    ) -> Result<JobPage, BackendError> {
        let views = self.load(workflow_id).await?;
        let all: Vec<&Job> = views.iter().map(|v| &v.job).filter(|j| status.is_none_or(|s| j.status == s)).collect();
        let total = all.len() as u64;
        let start = page.offset.min(total) as usize;
        let end = (page.offset + page.limit.max(1)).min(total) as usize;
        let jobs: Vec<Job> = all[start..end].iter().map(|j| (*j).clone()).collect();
        Ok(JobPage { jobs, total, next_offset: (end < total as usize).then_some(end as u64) })
    }

    async fn job(&self, workflow_id: i64, job_id: i64) -> Result<Job, BackendError> {
        let views = self.load(workflow_id).await?;
        view::find(&views, job_id).map(|v| v.job.clone()).ok_or(BackendError::JobNotFound { workflow_id, job_id })
    }

    async fn log_file(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
    ) -> Result<LogFile, BackendError> {
        let views = match self.cached(workflow_id) {
            Some(v) if view::find(&v, job_id).is_some() => v,
            _ => self.load(workflow_id).await?,
        };
        let v = view::find(&views, job_id).ok_or(BackendError::JobNotFound { workflow_id, job_id })?;
        let known = || (1..=v.runs.len()).map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
        let n = match attempt {
            Some(n) => n,
            None => v.job.attempts.last().map(|a| a.attempt_id).unwrap_or(0),
        };
        let run = v.runs.get((n as usize).wrapping_sub(1)).ok_or_else(|| BackendError::AttemptNotFound {
            job_id,
            attempt: n,
            known: known(),
        })?;
        let path = match stream {
            LogStream::Stderr => run.stderr.clone(),
            LogStream::Stdout => run.stdout.clone(),
        };
        let Some(path) = path else {
            return Err(BackendError::LogMissing {
                job_id,
                attempt: n,
                stream: stream.as_str(),
                why: run.log_note.clone().unwrap_or_else(|| "Slurm names no file for it".into()),
            });
        };
        Ok(LogFile {
            job_id,
            attempt_id: n,
            stream,
            shown: path.display().to_string(),
            path,
            hint: Some(
                "Slurm writes it where the job's --error/--output said, relative to its working directory; triage reads it from this machine, so run triage where that file system is mounted".into(),
            ),
        })
    }

    async fn retry_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let m = RetryMove { job_id, guard: *guard, change: *change, audit: audit.clone() };
        let mut out = self.retry_jobs(workflow_id, std::slice::from_ref(&m)).await;
        out.pop().unwrap_or_else(|| Err(BackendError::Internal("a move got no outcome".into())))
    }

    async fn retry_jobs(&self, workflow_id: i64, moves: &[RetryMove]) -> Vec<Result<MoveOutcome, BackendError>> {
        let out = self.retry_many(workflow_id, moves).await;
        self.forget(workflow_id);
        out
    }

    async fn fail_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let m = FailMove { job_id, guard: *guard, audit: audit.clone() };
        let mut out = self.fail_jobs(workflow_id, std::slice::from_ref(&m)).await;
        out.pop().unwrap_or_else(|| Err(BackendError::Internal("a move got no outcome".into())))
    }

    async fn fail_jobs(&self, workflow_id: i64, moves: &[FailMove]) -> Vec<Result<MoveOutcome, BackendError>> {
        let out = self.fail_many(workflow_id, moves).await;
        self.forget(workflow_id);
        out
    }

    async fn move_jobs(
        &self,
        workflow_id: i64,
        retries: &[RetryMove],
        fails: &[FailMove],
        _retries_first: bool,
    ) -> (Vec<Result<MoveOutcome, BackendError>>, Vec<Result<MoveOutcome, BackendError>>) {
        let out = match (retries.is_empty(), fails.is_empty()) {
            (true, true) => (vec![], vec![]),
            (false, true) => (self.retry_many(workflow_id, retries).await, vec![]),
            (true, false) => (vec![], self.fail_many(workflow_id, fails).await),
            // Both on one read, the fails first, whatever order was asked (see `fail_and_retry`).
            (false, false) => self.fail_and_retry(workflow_id, retries, fails).await,
        };
        self.forget(workflow_id);
        out
    }

    async fn audit_trail(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        let book = self.ledger().await?.read()?;
        let mut out: Vec<AuditEvent> = book
            .decisions
            .iter()
            .filter(|d| d.workflow_id == workflow_id && matches!(d.end, Some(ledger::End::Done { .. })))
            .map(|d| {
                let mut a = d.audit.clone();
                if a.details.is_null() {
                    a.details = serde_json::json!({});
                }
                if let Some(obj) = a.details.as_object_mut() {
                    obj.entry("attempt_id").or_insert(d.attempt.attempt_id.into());
                }
                a
            })
            .chain(book.events.iter().filter(|(wf, _)| *wf == workflow_id).map(|(_, e)| e.clone()))
            .collect();
        out.sort_by_key(|e| e.when);
        Ok(out)
    }

    async fn append_event(&self, workflow_id: i64, event: &AuditEvent) -> Result<(), BackendError> {
        let ledger = self.ledger().await?;
        let _lock = ledger.lock()?;
        ledger.append(&Entry::Event { workflow_id, event: event.clone() })
    }

    async fn recover(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        let out = self.recover_moves(workflow_id).await;
        self.forget(workflow_id);
        out
    }
}
