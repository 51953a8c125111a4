//! Synthetic directory stores for tests and benchmarks: N pending_failed jobs whose stderr
//! comes from K realistic failure causes, with per-job noise (timestamps, hosts, ranks, ids)
//! so that grouping by signature has real work to do.

use std::path::Path;

use crate::backend::BackendError;
use crate::model::{Attempt, Job, JobStatus, Resources, STORE_FORMAT, Workflow};

/// Tails of twelve distinct causes; per job, `{n}` becomes an id, `{r}` a rank, `{s}` two digits.
const CAUSES: [&str; 12] = [
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='storage.internal', port=443): Max retries exceeded with url: /data/part-{n}.bin (Caused by ProtocolError('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer')))",
    "[rank{r}]:[E1120 03:42:{s}.998113402 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=1800000) ran for 1800094 milliseconds before timing out.",
    "slurmstepd: error: *** JOB {n} ON node{n} CANCELLED AT 2026-11-20T04:11:{s} DUE TO PREEMPTION ***",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {r}.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.{s} GiB is free.",
    "  File \"/work/jobs/{n}/postprocess.py\", line 47\n    return {k: v for k, v in totals.items() if v > 0\nSyntaxError: '{' was never closed",
    "ModuleNotFoundError: No module named 'seaborn'",
    "FileNotFoundError: [Errno 2] No such file or directory: 'work/features/part-{n}.parquet'",
    "layout: giving up after 3 rebalancing rounds (imbalance 1.{s} > 1.10)",
    "slurmstepd: error: Detected 1 oom-kill event(s) in StepId={n}.0. Some of your processes may have been killed by the cgroup out-of-memory handler.",
    "PermissionError: [Errno 13] Permission denied: '/scratch/shared/run{n}/out.h5'",
    "fatal: unable to access 'https://github.com/example/repo/': Could not resolve host: github.com",
    "KeyError: 'sample_{n}_id'",
];

/// Write a store at `root` with workflow `workflow_id` holding `jobs` pending_failed jobs
/// spread over `causes` (at most 12) causes, each stderr `lines` lines long.
pub fn write_store(
    root: &Path,
    workflow_id: i64,
    jobs: usize,
    causes: usize,
    lines: usize,
) -> Result<(), BackendError> {
    let folder = root.join("workflows").join(workflow_id.to_string());
    let stdio = folder.join("job_stdio");
    std::fs::create_dir_all(&stdio).map_err(|e| BackendError::io(&stdio, e))?;
    let causes = causes.clamp(1, CAUSES.len());
    let mut wf = Workflow {
        format: STORE_FORMAT,
        id: workflow_id,
        name: format!("synthetic-{jobs}-jobs-{causes}-causes"),
        use_pending_failed: true,
        run_id: 1,
        jobs: Vec::with_capacity(jobs),
    };
    for i in 0..jobs {
        let id = i as i64 + 1;
        let cause = i % causes;
        let n = (i * 7919 % 9973).to_string();
        let mut text = String::new();
        for l in 0..lines.saturating_sub(1) {
            text.push_str(&format!(
                "2026-11-20 02:{:02}:{:02} INFO step {l} of job {id}: progress {}%\n",
                l % 60,
                (i + l) % 60,
                l * 2
            ));
        }
        let line = CAUSES[cause]
            .replace("{n}", &n)
            .replace("{r}", &(i % 64).to_string())
            .replace("{s}", &format!("{:02}", i % 60));
        text.push_str(&line);
        text.push('\n');
        let rel = format!("job_stdio/job_wf{workflow_id}_j{id}_r1_a1.e");
        let path = folder.join(&rel);
        std::fs::write(&path, text).map_err(|e| BackendError::io(&path, e))?;
        wf.jobs.push(Job {
            id,
            name: format!("job_{id}"),
            command: format!("./run.sh {id}"),
            status: JobStatus::PendingFailed,
            attempt_id: 1,
            max_retries: None,
            depends_on: vec![],
            resources: Resources {
                memory: "8g".parse().ok(),
                runtime: "PT2H".parse().ok(),
                num_cpus: Some(4),
                num_gpus: None,
            },
            attempts: vec![Attempt {
                attempt_id: 1,
                run_id: 1,
                return_code: if cause == 3 { 137 } else { 1 },
                signal: None,
                scheduler_state: (cause == 2).then_some(crate::model::SchedulerState::Preempted),
                started_at: None,
                finished_at: None,
                host: Some(format!("node{:03}", i % 128)),
                peak_memory_bytes: None,
                stdout: None,
                stderr: Some(rel),
            }],
        });
    }
    let json = serde_json::to_vec(&wf).map_err(|e| BackendError::Internal(e.to_string()))?;
    let path = folder.join("workflow.json");
    std::fs::write(&path, json).map_err(|e| BackendError::io(&path, e))
}
