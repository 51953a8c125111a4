//! `triage watch`: triage beside the workload. Poll the workflows; when new pending_failed
//! jobs appear, wait a short settle time so the failures landing together go in one batch,
//! then triage the batch exactly as `triage run` does (one agent run per batch, never per
//! job; the same validation and guarded apply). Jobs that need a person go to a review plan
//! per workflow that grows as they come ([`ReviewFile`]), and a hook may page someone.
//!
//! What the watcher knows comes from the backend and the files, not from its memory: a job
//! is new when it is pending_failed at an attempt the review plan does not hold. A restarted
//! watcher therefore picks up where the last one was, and two watchers on one workflow take
//! turns on a per-workflow lock (the second finds the first's jobs moved or in the review
//! plan), while every move stays compare-and-set in the backend.
//!
//! Cost control: `max_jobs_per_run` (the rest waits for the next batch) and
//! `max_agent_runs_per_hour` (past it the catalog decides what it can and the rest waits for
//! a person). A stop request (SIGINT/SIGTERM in the CLI) is honoured between batches: the
//! move in hand is finished first; a signal while an agent runs kills the agent (nothing was
//! applied) and ends the watch.

mod budget;
mod hook;
mod review_file;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use budget::HourlyCap;
pub use review_file::ReviewFile;

use crate::agent::AgentKind;
use crate::backend::BackendError;
use crate::engine::{Engine, Outcome, Plan, RunEvent};
use crate::fsutil::FolderLock;
use crate::model::JobStatus;
use crate::run::{Interrupted, RunError, RunOptions};

/// How many times a job at one attempt is taken up again after its move failed with an
/// error (a backend hiccup) before it is left alone until the watcher restarts.
const MAX_ERRORS: u32 = 3;

/// Why a watch could not go on.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot {what} ({}): {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the review plan {} is not a plan triage can read ({reason}); move it aside (the watcher starts a new one) or restore it",
        path.display()
    )]
    BadReviewFile { path: PathBuf, reason: String },
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Everything `triage watch` was asked to do.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub workflows: Vec<i64>,
    /// Time between polls.
    pub interval: Duration,
    /// How long to wait after new failures appear before triaging them, so failures that
    /// land together go in one batch.
    pub settle: Duration,
    pub max_agent_runs_per_hour: Option<u32>,
    pub max_jobs_per_run: Option<usize>,
    /// Stop once every watched workflow is complete (every job completed, failed, canceled,
    /// terminated or disabled; pending_failed is not complete).
    pub until_complete: bool,
    /// Where the review plans go (`workflow-<ID>-review.json`).
    pub review_dir: PathBuf,
    /// `--on-review`: run through `sh -c` when jobs start waiting for a person.
    pub on_review: Option<String>,
    /// The options of one run (agent chain, prompt, server, dry run); each batch sets its own
    /// workflow, jobs and agent folder (under `runs_dir`).
    pub run: RunOptions,
    pub runs_dir: PathBuf,
    /// Where the per-workflow locks live.
    pub lock_dir: PathBuf,
    /// Metrics to keep up to date (`--metrics ADDR` serves them).
    pub metrics: Option<crate::metrics::Metrics>,
}

/// How a watch ended.
#[derive(Debug)]
pub enum WatchEnd {
    /// A stop was requested (the signal's name) and honoured between batches.
    Stopped(String),
    /// `until_complete`: every watched workflow is complete.
    Complete,
    /// A signal arrived while an agent ran: its process group was killed, nothing applied.
    Interrupted(Interrupted),
}

/// The watcher's view of a stop request: the CLI sends the signal's name.
pub type StopSignal = tokio::sync::watch::Receiver<Option<String>>;

/// What the watcher reports as it goes: every event, and every batch's plan.
pub trait WatchSink: Sync {
    fn event(&self, e: &RunEvent);
    fn batch(&self, plan: &Plan);
}

struct Watcher<'a> {
    engine: &'a Engine,
    opts: &'a WatchOptions,
    sink: &'a dyn WatchSink,
    stop: StopSignal,
    cap: HourlyCap,
    /// Jobs (id, attempt) not to take up again in this process: errors past [`MAX_ERRORS`],
    /// and in a dry run every job already shown.
    errors: HashMap<(i64, u32), u32>,
    batches: u64,
}

/// Watch until stopped, interrupted or (with `until_complete`) complete.
pub async fn watch(
    engine: &Engine,
    opts: &WatchOptions,
    sink: &dyn WatchSink,
    stop: StopSignal,
) -> Result<WatchEnd, WatchError> {
    let mut w = Watcher {
        engine,
        opts,
        sink,
        stop,
        cap: HourlyCap::new(opts.max_agent_runs_per_hour),
        errors: HashMap::new(),
        batches: 0,
    };
    let mut active = opts.workflows.clone();
    w.emit(
        "progress",
        &format!(
            "watching workflow{} {} every {} s on {}",
            if active.len() == 1 { "" } else { "s" },
            active.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
            opts.interval.as_secs_f64(),
            engine.backend.describe()
        ),
    );
    loop {
        for wf in active.clone() {
            if let Some(signal) = w.stop_requested() {
                return Ok(w.stopped(signal));
            }
            match w.poll(wf).await {
                Ok(Poll::Interrupted(i)) => return Ok(WatchEnd::Interrupted(i)),
                Ok(Poll::Complete) => {
                    active.retain(|x| *x != wf);
                    w.emit("complete", &format!("workflow {wf} is complete"));
                }
                Ok(Poll::Watching) => {}
                Err(WatchError::Backend(e)) => {
                    w.emit("error", &format!("workflow {wf}: {e}; trying again in {} s", opts.interval.as_secs_f64()))
                }
                Err(e) => return Err(e),
            }
        }
        if active.is_empty() {
            return Ok(WatchEnd::Complete);
        }
        if let Some(signal) = w.pause(opts.interval).await {
            return Ok(w.stopped(signal));
        }
    }
}

enum Poll {
    Watching,
    Complete,
    Interrupted(Interrupted),
}

impl Watcher<'_> {
    fn emit(&self, kind: &str, reason: &str) {
        self.event(&RunEvent::now(kind, "triage watch", reason));
    }

    fn event(&self, e: &RunEvent) {
        if let Some(m) = &self.opts.metrics {
            m.record_event(e);
        }
        self.sink.event(e);
    }

    /// After a batch: count its jobs, and follow up every decision of the watched workflows.
    async fn update_metrics(&self, plan: &Plan) {
        let Some(m) = &self.opts.metrics else { return };
        m.record_jobs(&plan.jobs);
        let mut reports = Vec::new();
        for wf in &self.opts.workflows {
            match self.engine.outcomes(*wf).await {
                Ok(r) => reports.push(r),
                Err(e) => {
                    self.emit("warning", &format!("workflow {wf}: cannot follow up decisions for the metrics: {e}"))
                }
            }
        }
        m.set_results(&reports);
        // Last, so a scrape that sees the batch sees all of it.
        m.record_batch();
    }

    fn stop_requested(&self) -> Option<String> {
        self.stop.borrow().clone()
    }

    fn stopped(&self, signal: String) -> WatchEnd {
        self.emit("stopped", &format!("{signal} received: stopped between batches, no move in hand"));
        WatchEnd::Stopped(signal)
    }

    /// Sleep `d`, or less when a stop is requested (then its signal).
    async fn pause(&mut self, d: Duration) -> Option<String> {
        if let Some(s) = self.stop_requested() {
            return Some(s);
        }
        let _ = tokio::time::timeout(d, self.stop.changed()).await;
        self.stop_requested()
    }

    /// The workflow's pending_failed jobs not yet triaged at their attempt, and whether the
    /// workflow is complete (looked at only with `until_complete`).
    async fn new_jobs(&self, wf: i64) -> Result<(BTreeSet<i64>, bool), WatchError> {
        let backend = &self.engine.backend;
        let (pending, complete) = if self.opts.until_complete {
            let all = backend.all_jobs(wf, None).await?;
            let complete = all.iter().all(|j| j.status.is_complete());
            (all.into_iter().filter(|j| j.status == JobStatus::PendingFailed).collect(), complete)
        } else {
            (backend.all_jobs(wf, Some(JobStatus::PendingFailed)).await?, false)
        };
        let waiting = ReviewFile::for_workflow(&self.opts.review_dir, wf).waiting()?;
        let new = pending
            .iter()
            .map(|j| (j.id, j.attempt_id))
            .filter(|k| !waiting.contains(k) && self.errors.get(k).copied().unwrap_or(0) < MAX_ERRORS)
            .map(|(id, _)| id)
            .collect();
        Ok((new, complete))
    }

    async fn poll(&mut self, wf: i64) -> Result<Poll, WatchError> {
        let (first, complete) = self.new_jobs(wf).await?;
        if complete {
            return Ok(Poll::Complete);
        }
        if first.is_empty() {
            return Ok(Poll::Watching);
        }
        self.emit(
            "batch",
            &format!(
                "{} new pending_failed jobs in workflow {wf}; waiting {} s for more to land",
                first.len(),
                self.opts.settle.as_secs_f64()
            ),
        );
        if let Some(signal) = self.pause(self.opts.settle).await {
            self.emit("stopped", &format!("{signal} received before the batch started; nothing triaged"));
            return Ok(Poll::Watching);
        }

        // One batch at a time per workflow, across watchers: the lock is held from the last
        // look at the review plan to the end of the moves.
        let lock_dir = self.opts.lock_dir.join(format!("workflow-{wf}"));
        let _lock = lock(lock_dir).await?;
        let (mut batch, _) = self.new_jobs(wf).await?;
        if batch.is_empty() {
            return Ok(Poll::Watching);
        }
        if let Some(max) = self.opts.max_jobs_per_run.filter(|m| batch.len() > *m) {
            let later = batch.split_off(&batch.iter().nth(max).copied().unwrap_or(i64::MAX));
            self.emit("cap", &format!("{} jobs wait for the next batch (--max-jobs-per-run {max})", later.len()));
        }
        let mut run = self.opts.run.clone();
        run.workflow_id = wf;
        run.only_jobs = Some(batch.clone());
        run.actor = "triage watch".into();
        self.batches += 1;
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
        run.work_dir = self.opts.runs_dir.join(format!("wf{wf}-{stamp}-batch{}", self.batches));
        let uses_agent = run.chain.first().is_some_and(|k| *k != AgentKind::Rules);
        if uses_agent {
            let now = Instant::now();
            if self.cap.allows(now) {
                self.cap.record(now);
            } else {
                run.chain = vec![AgentKind::Rules];
                self.emit(
                    "cap",
                    &format!(
                        "{} agent runs in the last hour (--max-agent-runs-per-hour): the catalog decides this batch of {} jobs, the rest waits for a person",
                        self.cap.limit().unwrap_or(0),
                        batch.len()
                    ),
                );
            }
        }
        let on_event = |e: &RunEvent| self.event(e);
        let plan = match crate::run::run(self.engine, &run, &on_event).await {
            Ok(p) => p,
            Err(RunError::Interrupted(i)) => return Ok(Poll::Interrupted(i)),
            Err(RunError::Backend(e)) => return Err(e.into()),
        };
        self.sink.batch(&plan);
        self.update_metrics(&plan).await;
        for j in &plan.jobs {
            let key = (j.job_id, j.attempt_id);
            match j.outcome {
                Outcome::Error => *self.errors.entry(key).or_default() += 1,
                // A dry run moves nothing: show each job once per watcher.
                _ if run.dry_run => {
                    self.errors.insert(key, MAX_ERRORS);
                }
                _ => {}
            }
        }
        if run.dry_run {
            return Ok(Poll::Watching);
        }
        let review = ReviewFile::for_workflow(&self.opts.review_dir, wf);
        let waiting = review.add(&plan)?;
        if waiting.is_empty() {
            return Ok(Poll::Watching);
        }
        let path = review.path().display().to_string();
        self.emit(
            "review",
            &format!(
                "{} jobs of workflow {wf} wait for a person ({}): triage review --plan {path}",
                waiting.len(),
                waiting.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
            ),
        );
        if let Some(cmd) = &self.opts.on_review {
            match hook::run(cmd, wf, &waiting, review.path(), &run.work_dir).await {
                Ok(said) => self.emit("review", &said),
                // The moves are made; the watcher's own stop request (the same signal) ends
                // the watch at the next check.
                Err(sig) => self.emit("review", &format!("--on-review stopped by {}", sig.as_str())),
            }
        }
        Ok(Poll::Watching)
    }
}

/// Take the lock of `dir` without blocking the runtime (another watcher may hold it for the
/// length of an agent run).
async fn lock(dir: PathBuf) -> Result<FolderLock, WatchError> {
    let io = |what, path: &PathBuf, source| WatchError::Io { what, path: path.clone(), source };
    std::fs::create_dir_all(&dir).map_err(|e| io("create the watch lock folder", &dir, e))?;
    let d = dir.clone();
    tokio::task::spawn_blocking(move || FolderLock::acquire(&d))
        .await
        .map_err(|e| io("lock the workflow for a batch", &dir, std::io::Error::other(e)))?
        .map_err(|e| io("lock the workflow for a batch", &dir, e))
}
