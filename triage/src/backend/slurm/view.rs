//! A workflow as triage sees it, built from what Slurm says (`sacct -D`, `scontrol -o show
//! job`, `squeue`) and what the ledger remembers.
//!
//! - `--workflow N` names a job array (its tasks are the jobs; job id = task index, shown as
//!   `N_TASK`), or a job (it and the jobs that depend on it, found in `squeue`'s dependency
//!   lists and remembered in `workflows/N.json` once seen; job id = Slurm job id).
//! - A job's attempts are its runs: every `sacct -D` row of the job, and of each resubmission
//!   the ledger records for it, in submit order. Slurm's `State` is the attempt's scheduler
//!   state. A manual requeue rewrites the previous run's row to `REQUEUED`; its `.batch` step
//!   keeps the real end, and the ledger keeps what triage saw when it decided.
//! - Status: a run that ended FAILED, OUT_OF_MEMORY, TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL or
//!   DEADLINE with no standing decision in the ledger is `pending_failed`; with a fail decision
//!   it is `failed`; pending jobs are `pending` (`blocked` when they wait on a dependency),
//!   running ones `running`, and so on.
//! - Logs: the latest run's files are where `scontrol` says while the controller holds the
//!   job, else where the ledger's `seen/` record says, else the batch script's `--error` /
//!   `--output` pattern expanded, else Slurm's default `slurm-%j.out`; an earlier run's are
//!   the ledger's copies (Slurm truncates them when the job runs again).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::filename::{self, PatternJob};
use super::ledger::{Book, Incarnation, RunKey, ScriptOwner};
use super::sacct::{self, Run};
use super::scontrol::JobRecord;
use crate::model::{Action, Attempt, Job, JobStatus, Memory, Resources, Runtime, SchedulerState};

/// The states that end a run in a way triage decides on.
pub const FAILURE_STATES: [&str; 7] =
    ["FAILED", "OUT_OF_MEMORY", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE"];

/// How `--workflow N` groups jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// A job array: its tasks are the jobs.
    Array,
    /// A job and the jobs that depend on it.
    Chain,
}

/// What `workflows/N.json` remembers of a chain: its members and their dependencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Members {
    /// Slurm job id -> the ids it depends on.
    pub depends_on: BTreeMap<u64, Vec<u64>>,
}

/// One triage job: its Slurm incarnations and their runs.
#[derive(Debug, Clone)]
pub struct JobView {
    pub job: Job,
    /// The runs, in attempt order (attempt i is `runs[i - 1]`).
    pub runs: Vec<RunInfo>,
}

/// One run of a triage job.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub key: RunKey,
    /// How to name the job to `scontrol` (`15`, or `16_2` for an array task).
    pub target: String,
    pub incarnation: Incarnation,
    pub run: Run,
    pub stderr: Option<PathBuf>,
    pub stdout: Option<PathBuf>,
    /// Why a log has no path, if it has none.
    pub log_note: Option<String>,
}

impl RunInfo {
    /// The run's end state as Slurm says it (the `.batch` step's for a requeued run).
    pub fn state(&self) -> String {
        self.run.outcome_state()
    }

    pub fn is_failure(&self) -> bool {
        FAILURE_STATES.contains(&self.state().as_str())
    }
}

/// The sources a view is built from.
pub struct Sources<'a> {
    pub workflow_id: i64,
    pub shape: Shape,
    pub rows: Vec<sacct::SacctRow>,
    pub book: &'a Book,
    /// `scontrol` records by the job's own (raw) id.
    pub records: &'a HashMap<u64, JobRecord>,
    pub members: &'a Members,
    /// What the ledger's `seen/` records say, by run.
    pub seen: &'a HashMap<RunKey, Seen>,
    /// Batch-script output patterns by job id: (stdout, stderr).
    pub patterns: &'a HashMap<u64, (Option<String>, Option<String>)>,
    pub ledger_logs: &'a dyn Fn(&RunKey, &str) -> PathBuf,
}

/// What the controller said about a run while it held it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    pub std_err: Option<String>,
    pub std_out: Option<String>,
    pub work_dir: Option<String>,
    pub command: Option<String>,
    pub partition: Option<String>,
    pub user: Option<String>,
}

impl Seen {
    pub fn of(r: &JobRecord) -> Seen {
        Seen {
            std_err: r.std_err().map(str::to_string),
            std_out: r.std_out().map(str::to_string),
            work_dir: r.work_dir().map(str::to_string),
            command: r.command().map(str::to_string),
            partition: r.partition().map(str::to_string),
            user: r.user().map(|(u, _)| u),
        }
    }
}

/// A Slurm job id and, for an array, the task.
type SlurmTask = (u64, Option<u32>);

/// The workflow's resubmissions (with the triage job each carries), by the Slurm job (and
/// task) that carries them.
struct Resubmitted(HashMap<SlurmTask, Vec<(Incarnation, i64)>>);

impl Resubmitted {
    fn of(book: &Book, workflow_id: i64) -> Resubmitted {
        Resubmitted::from_pairs(book.resubmissions(workflow_id))
    }

    fn from_pairs(pairs: impl IntoIterator<Item = (i64, Incarnation)>) -> Resubmitted {
        let mut map: HashMap<SlurmTask, Vec<(Incarnation, i64)>> = HashMap::new();
        for (job, inc) in pairs {
            map.entry((inc.job_id, inc.task)).or_default().push((inc, job));
        }
        Resubmitted(map)
    }

    /// The incarnation a run of `job_id` (task `task`) submitted at `submit` belongs to, and
    /// its triage job: of the resubmissions under that id, the latest one submitted before
    /// the run. `None`: the run is no resubmission (an earlier job held the id).
    fn carrier(&self, job_id: u64, task: Option<u32>, submit: Option<Timestamp>) -> Option<(Incarnation, i64)> {
        self.0
            .get(&(job_id, task))?
            .iter()
            .filter(|(inc, _)| inc.holds(submit))
            .max_by_key(|(inc, _)| inc.since)
            .copied()
    }
}

/// Whose job each of `ids` (Slurm job ids) names now: the owner of its newest run among
/// `rows`, where an array's id counts the runs of all its tasks. One pass over the rows.
pub fn newest_owners(ids: &[String], rows: &[sacct::SacctRow]) -> HashMap<u64, ScriptOwner> {
    let wanted: HashSet<u64> = ids.iter().filter_map(|id| id.parse().ok()).collect();
    let mut newest: HashMap<u64, &sacct::SacctRow> = HashMap::new();
    for row in rows.iter().filter(|r| r.step.is_none()) {
        for id in [row.array.map(|(a, _)| a), Some(row.raw_id)].into_iter().flatten() {
            if !wanted.contains(&id) {
                continue;
            }
            // Of runs submitted at the same time (or with no submit time yet), the later row.
            let best = newest.entry(id).or_insert(row);
            if row.submit >= best.submit {
                *best = row;
            }
        }
    }
    newest.into_iter().map(|(id, row)| (id, ScriptOwner::of(row))).collect()
}

/// Job `job_id` of a view [`build`] made (its jobs are in id order).
pub fn find(views: &[JobView], job_id: i64) -> Option<&JobView> {
    views.binary_search_by_key(&job_id, |v| v.job.id).ok().map(|i| &views[i])
}

/// Build the triage jobs of one workflow, in job id order.
pub fn build(src: &Sources<'_>) -> Vec<JobView> {
    // Runs by triage job id, with the incarnation they belong to.
    let resubmitted = Resubmitted::of(src.book, src.workflow_id);
    let mut by_job: BTreeMap<i64, Vec<(Incarnation, Run)>> = BTreeMap::new();
    let runs = sacct::runs(src.rows.clone());
    let earlier = super::reissued::earlier_jobs(&runs, src.book);
    for run in runs {
        let submit = run.job.submit;
        if submit.is_some_and(|s| earlier.contains(&RunKey { raw_id: run.job.raw_id, submit: s })) {
            continue;
        }
        let (inc, job_id) = match (src.shape, run.job.array) {
            (Shape::Array, Some((array, task))) => match resubmitted.carrier(array, Some(task), submit) {
                Some(found) => found,
                None if array == src.workflow_id as u64 => {
                    (Incarnation { job_id: array, task: Some(task), since: None }, i64::from(task))
                }
                None => continue,
            },
            (Shape::Array, None) => continue,
            (Shape::Chain, _) => match resubmitted.carrier(run.job.raw_id, None, submit) {
                Some(found) => found,
                None => (Incarnation { job_id: run.job.raw_id, task: None, since: None }, run.job.raw_id as i64),
            },
        };
        by_job.entry(job_id).or_default().push((inc, run));
    }
    let mut out = Vec::with_capacity(by_job.len());
    for (job_id, mut runs) in by_job {
        runs.sort_by_key(|(_, r)| r.job.submit);
        let last_index = runs.len().saturating_sub(1);
        let mut infos = Vec::with_capacity(runs.len());
        for (i, (inc, run)) in runs.into_iter().enumerate() {
            let key = RunKey { raw_id: run.job.raw_id, submit: run.job.submit.unwrap_or(Timestamp::UNIX_EPOCH) };
            let target = match inc.task {
                Some(t) => format!("{}_{t}", inc.job_id),
                None => inc.job_id.to_string(),
            };
            let mut info = RunInfo { key, target, incarnation: inc, run, stderr: None, stdout: None, log_note: None };
            locate_logs(&mut info, i == last_index, src);
            infos.push(info);
        }
        let depends_on = match src.shape {
            Shape::Array => vec![],
            Shape::Chain => src
                .members
                .depends_on
                .get(&(job_id as u64))
                .map(|d| d.iter().map(|&x| x as i64).collect())
                .unwrap_or_default(),
        };
        let name = match src.shape {
            Shape::Array => format!("{}_{job_id}", src.workflow_id),
            Shape::Chain => infos.last().map(|r| r.run.job.name.clone()).unwrap_or_default(),
        };
        let job = job_of(job_id, name, depends_on, &infos, src);
        out.push(JobView { job, runs: infos });
    }
    out
}

fn job_of(id: i64, name: String, depends_on: Vec<i64>, runs: &[RunInfo], src: &Sources<'_>) -> Job {
    let last = runs.last();
    let status = match last {
        None => JobStatus::Uninitialized,
        Some(r) => status_of(r, !depends_on.is_empty(), src.book),
    };
    let attempts: Vec<Attempt> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.run.job.end.is_some() && !matches!(r.run.job.state.as_str(), "PENDING" | "RUNNING"))
        .map(|(i, r)| attempt_of(i as u32 + 1, r, src.book))
        .collect();
    let command = last
        .and_then(|r| src.records.get(&r.key.raw_id).and_then(|rec| rec.command().map(str::to_string)))
        .or_else(|| last.and_then(|r| src.seen.get(&r.key).and_then(|s| s.command.clone())))
        .unwrap_or_default();
    Job {
        id,
        name,
        command,
        status,
        attempt_id: runs.len().max(1) as u32,
        max_retries: None,
        depends_on,
        resources: Resources {
            memory: last.and_then(|r| r.run.job.req_mem_bytes).map(Memory::from_bytes),
            runtime: last.and_then(|r| r.run.job.timelimit_secs).map(Runtime::from_seconds),
            num_cpus: None,
            num_gpus: None,
        },
        attempts,
    }
}

fn status_of(r: &RunInfo, has_deps: bool, book: &Book) -> JobStatus {
    if r.run.is_placeholder() {
        // sacct's first seconds: the real record has not reached the database yet.
        return JobStatus::Running;
    }
    let state = r.state();
    match state.as_str() {
        s if FAILURE_STATES.contains(&s) => match book.on_run(&r.key) {
            Some(d) if d.end.is_some() => match d.action {
                Action::Fail => JobStatus::Failed,
                Action::Retry => JobStatus::Ready,
            },
            // Undecided, or a decision begun and not ended (recovery resolves it).
            _ => JobStatus::PendingFailed,
        },
        _ if r.run.job.state == "PENDING" && has_deps => JobStatus::Blocked,
        _ if r.run.job.state == "PENDING" || r.run.job.state == "REQUEUED" => JobStatus::Pending,
        "RUNNING" | "COMPLETING" | "CONFIGURING" | "SUSPENDED" | "RESIZING" | "SIGNALING" | "STAGE_OUT" => {
            JobStatus::Running
        }
        "COMPLETED" => JobStatus::Completed,
        "CANCELLED" | "REVOKED" => JobStatus::Canceled,
        _ => JobStatus::Terminated,
    }
}

fn attempt_of(attempt_id: u32, r: &RunInfo, book: &Book) -> Attempt {
    // What triage recorded when it decided wins: Slurm rewrites a requeued run's row.
    if let Some(d) = book.on_run(&r.key).filter(|d| d.attempt.attempt_id == attempt_id) {
        return d.attempt.clone();
    }
    let (code, signal) = r.run.exit();
    let state = r.state();
    Attempt {
        attempt_id,
        run_id: 1,
        return_code: if signal > 0 { 128 + i64::from(signal) } else { i64::from(code) },
        signal: (signal > 0).then_some(signal),
        scheduler_state: state.parse::<SchedulerState>().ok(),
        started_at: r.run.job.start,
        finished_at: r.run.job.end,
        host: r.run.job.node_list.clone(),
        peak_memory_bytes: None,
        stdout: r.stdout.as_ref().map(|p| p.display().to_string()),
        stderr: r.stderr.as_ref().map(|p| p.display().to_string()),
    }
}

fn locate_logs(info: &mut RunInfo, latest: bool, src: &Sources<'_>) {
    let copy_err = (src.ledger_logs)(&info.key, "err");
    if copy_err.is_file() {
        info.stderr = Some(copy_err);
        let copy_out = (src.ledger_logs)(&info.key, "out");
        info.stdout = copy_out.is_file().then_some(copy_out);
        return;
    }
    if !latest {
        info.log_note = Some(
            "Slurm truncated this run's output when the job ran again (its --open-mode is truncate), and triage kept no copy (it keeps one for each run it decides on)"
                .into(),
        );
        return;
    }
    let record = src.records.get(&info.key.raw_id).filter(|rec| rec.submit_time() == info.run.job.submit);
    if let Some(rec) = record {
        info.stderr = rec.std_err().map(PathBuf::from);
        info.stdout = rec.std_out().map(PathBuf::from);
        return;
    }
    if let Some(seen) = src.seen.get(&info.key) {
        info.stderr = seen.std_err.as_ref().map(PathBuf::from);
        info.stdout = seen.std_out.as_ref().map(PathBuf::from);
        return;
    }
    // The controller no longer holds the job: the submission's pattern, expanded here.
    let job = &info.run.job;
    let Some(work_dir) = job.work_dir.as_deref().map(std::path::Path::new) else {
        info.log_note = Some("sacct gives no working directory for this run yet".into());
        return;
    };
    let user = job.user.clone().unwrap_or_default();
    let first_node = job.node_list.as_deref().map(first_host);
    let pj = PatternJob {
        job_id: job.raw_id,
        array: job.array,
        name: &job.name,
        user: &user,
        first_node: first_node.as_deref(),
        work_dir,
    };
    let (out, err) = src.patterns.get(&info.incarnation.job_id).cloned().unwrap_or_default();
    let stdout = out.as_deref().map(|p| filename::expand(p, &pj)).unwrap_or_else(|| filename::default_output(&pj));
    info.stderr = Some(err.as_deref().map(|p| filename::expand(p, &pj)).unwrap_or_else(|| stdout.clone()));
    info.stdout = Some(stdout);
}

/// The first host of a node list (`node[01-04],gpu7` -> `node01`).
fn first_host(list: &str) -> String {
    let first = list.split(',').next().unwrap_or(list);
    match first.split_once('[') {
        Some((prefix, rest)) => {
            let n: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            format!("{prefix}{n}")
        }
        None => first.to_string(),
    }
}

/// The `--output` / `--error` patterns among a batch script's `#SBATCH` lines.
pub fn script_patterns(script: &str) -> (Option<String>, Option<String>) {
    let (mut out, mut err) = (None, None);
    for line in script.lines().skip_while(|l| l.starts_with("#!")) {
        let line = line.trim();
        if line.is_empty() || (line.starts_with('#') && !line.starts_with("#SBATCH")) {
            continue;
        }
        let Some(rest) = line.strip_prefix("#SBATCH") else { break };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            let (flag, value) = match w.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (w, words.get(i + 1).map(|s| s.to_string())),
            };
            let takes_next = !w.contains('=');
            match flag {
                "--output" | "-o" => out = value.map(unquote),
                "--error" | "-e" => err = value.map(unquote),
                _ => {}
            }
            i += if takes_next && matches!(flag, "--output" | "-o" | "--error" | "-e") { 2 } else { 1 };
        }
    }
    (out, err)
}

fn unquote(s: String) -> String {
    s.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// The chain's members: `root` and, transitively, the pending jobs whose dependency lists
/// name a member (from `squeue -h -t PD -o %i|%E`), merged with what was remembered.
pub fn discover_members(root: u64, squeue: &str, remembered: &Members) -> Members {
    let mut deps: HashMap<u64, Vec<u64>> = HashMap::new();
    for line in squeue.lines() {
        let Some((id, dep)) = line.trim().split_once('|') else { continue };
        let Ok(id) = id.trim().parse::<u64>() else { continue };
        deps.insert(id, dependency_ids(dep));
    }
    let mut out = remembered.clone();
    out.depends_on.entry(root).or_default();
    loop {
        let known: BTreeSet<u64> = out.depends_on.keys().copied().collect();
        let mut grew = false;
        for (id, on) in &deps {
            if !known.contains(id) && on.iter().any(|d| known.contains(d)) {
                out.depends_on.insert(*id, on.clone());
                grew = true;
            }
        }
        if !grew {
            return out;
        }
    }
}

/// The job ids in a Slurm dependency list (`afterok:20(failed),afterany:21_*`).
pub fn dependency_ids(dep: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for part in dep.split([',', '?']) {
        let Some((_, ids)) = part.split_once(':') else { continue };
        for id in ids.split(':') {
            let digits: String = id.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(n) = digits.parse() {
                out.push(n);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_of_each_id_is_its_newest_runs() {
        let row = |job_id: &str, raw_id: u64, array: Option<(u64, u32)>, name: &str, submit: i64| sacct::SacctRow {
            array,
            user: Some("ana".into()),
            ..sacct::test_row(job_id, raw_id, name, submit)
        };
        let mut step = row("16_1.batch", 17, Some((16, 1)), "batch", 90);
        step.step = Some("batch".into());
        let rows = vec![
            row("16_0", 16, Some((16, 0)), "old", 0),
            row("16_1", 17, Some((16, 1)), "old", 0),
            // Task 1 ran again later under the array's id, as another job (a reissued id).
            row("16_1", 17, Some((16, 1)), "new", 50),
            step,
            row("40_3", 41, Some((40, 3)), "resubmitted", 60),
            row("99", 99, None, "not asked", 70),
            row("52", 52, None, "plain", 5),
        ];
        let ids: Vec<String> = ["16", "17", "40", "52"].iter().map(|s| s.to_string()).collect();
        let owners = newest_owners(&ids, &rows);
        let name = |id: u64| owners.get(&id).map(|o| o.name.as_str());
        assert_eq!(name(16), Some("new"), "an array's newest task run names its owner; steps do not count");
        assert_eq!(name(17), Some("new"), "a task's own id");
        assert_eq!(name(40), Some("resubmitted"));
        assert_eq!(name(52), Some("plain"));
        assert_eq!(owners.len(), 4, "ids not asked about are left out: {owners:?}");
    }

    #[test]
    fn dependency_lists_and_members() {
        assert_eq!(dependency_ids("afterok:20(failed)"), vec![20]);
        assert_eq!(dependency_ids("afterok:20_*(unfulfilled),afterany:21:22"), vec![20, 21, 22]);
        assert!(dependency_ids("(null)").is_empty());
        let sq = "21|afterok:20(failed)\n23|afterok:21(unfulfilled)\n30|(null)\n31|afterok:99(unfulfilled)\n";
        let m = discover_members(20, sq, &Members::default());
        assert_eq!(m.depends_on.keys().copied().collect::<Vec<_>>(), vec![20, 21, 23]);
        assert_eq!(m.depends_on[&23], vec![21]);
    }

    #[test]
    fn a_reissued_id_carries_only_the_runs_after_its_resubmission() {
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        let inc = |job_id, since| Incarnation { job_id, task: None, since: Some(t(since)) };
        // Job 96 failed, was purged, and its resubmission got id 96 again; later triage job 7
        // was resubmitted under id 96 too (a second reissue).
        let r = Resubmitted::from_pairs([(96, inc(96, 20)), (7, inc(96, 50))]);
        assert_eq!(r.carrier(96, None, Some(t(0))), None, "the original run of 96 is no resubmission");
        assert_eq!(r.carrier(96, None, Some(t(21))).map(|(_, j)| j), Some(96));
        assert_eq!(r.carrier(96, None, Some(t(50))).map(|(_, j)| j), Some(7), "the latest resubmission wins");
        assert_eq!(r.carrier(96, Some(1), Some(t(60))), None, "another task is another key");
        // A ledger written before submit times were recorded: any run of the id.
        let old = Resubmitted::from_pairs([(5, Incarnation { job_id: 40, task: None, since: None })]);
        assert_eq!(old.carrier(40, None, Some(t(0))).map(|(_, j)| j), Some(5));
    }

    #[test]
    fn script_patterns_read_sbatch_lines_only() {
        let s = "#!/bin/bash\n#SBATCH --job-name=x\n#SBATCH -e err-%j.txt\n#SBATCH --output=\"out-%j.txt\"\necho hi\n#SBATCH --error=late\n";
        assert_eq!(script_patterns(s), (Some("out-%j.txt".into()), Some("err-%j.txt".into())));
        assert_eq!(script_patterns("#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 3"), (None, None));
        assert_eq!(first_host("node[01-04],gpu7"), "node01");
    }
}
