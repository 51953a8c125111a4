//! Workflow, Job, Attempt and Resources: what a failed job is, and its history.
//!
//! These types are the directory store's format v1 (see DESIGN.md) and what every backend
//! returns. `Workflow::check` finds the mistakes serde cannot see (duplicate ids, dangling
//! dependencies, attempt numbering) so a malformed store is refused with a precise message.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::resources::{Memory, Runtime};
use super::status::JobStatus;

/// The directory store format this build reads and writes.
pub const STORE_FORMAT: u32 = 1;

/// A workflow: a set of jobs with dependencies, as the directory store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// Store format version; must be 1.
    pub format: u32,
    /// Workflow id; must equal the name of the folder it lives in.
    pub id: i64,
    /// Human-readable name.
    pub name: String,
    /// Whether failed jobs without a handler go to `pending_failed` (Torc's opt-in flag).
    #[serde(default)]
    pub use_pending_failed: bool,
    /// The current run of the workflow (Torc's run_id); attempts record the run they belong to.
    #[serde(default = "one")]
    pub run_id: u32,
    /// The jobs, in any order; ids are unique.
    #[serde(default)]
    pub jobs: Vec<Job>,
}

/// One job of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Job id, unique in the workflow.
    pub id: i64,
    /// Job name.
    pub name: String,
    /// The command the job runs.
    #[serde(default)]
    pub command: String,
    /// Current status.
    pub status: JobStatus,
    /// The current attempt, 1-based; a retry increments it.
    #[serde(default = "one")]
    pub attempt_id: u32,
    /// Retries allowed for this job's own failures (overrides the policy's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Ids of the jobs this one depends on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<i64>,
    /// Requested resources.
    #[serde(default)]
    pub resources: Resources,
    /// One record per finished attempt, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
}

/// Resources a job asks the scheduler for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_cpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_gpus: Option<u32>,
}

/// The record of one finished attempt of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    /// Which attempt this was, 1-based.
    pub attempt_id: u32,
    /// The workflow run it belonged to.
    #[serde(default = "one")]
    pub run_id: u32,
    /// The process exit status (128+N for a signal N when a shell reports it).
    pub return_code: i64,
    /// The signal that killed the process, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// What the batch scheduler said about the attempt, if it said anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_state: Option<SchedulerState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>", description = "RFC 3339 time the attempt started")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>", description = "RFC 3339 time the attempt ended")]
    pub finished_at: Option<Timestamp>,
    /// Host the attempt ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Peak resident memory, when the backend measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    /// Path of the attempt's stdout, relative to the workflow folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Path of the attempt's stderr, relative to the workflow folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
}

impl Attempt {
    /// The exit status as a shell reports it: 128+N when the record says signal N killed the
    /// process (whatever `return_code` says then: runtimes report -N or 0), else
    /// `return_code`. The catalog's exit-code entries and the policy's exit-code lists both
    /// read this, so they agree.
    pub fn exit_status(&self) -> i64 {
        match self.signal {
            Some(sig) if sig > 0 => 128 + i64::from(sig),
            _ => self.return_code,
        }
    }
}

/// A batch scheduler's verdict on an attempt (Slurm's job state names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SchedulerState {
    Preempted,
    NodeFail,
    OutOfMemory,
    Timeout,
    BootFail,
    Deadline,
    Cancelled,
    Failed,
}

impl SchedulerState {
    const ALL: [SchedulerState; 8] = [
        SchedulerState::Preempted,
        SchedulerState::NodeFail,
        SchedulerState::OutOfMemory,
        SchedulerState::Timeout,
        SchedulerState::BootFail,
        SchedulerState::Deadline,
        SchedulerState::Cancelled,
        SchedulerState::Failed,
    ];

    /// Slurm's spelling, e.g. `NODE_FAIL`.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerState::Preempted => "PREEMPTED",
            SchedulerState::NodeFail => "NODE_FAIL",
            SchedulerState::OutOfMemory => "OUT_OF_MEMORY",
            SchedulerState::Timeout => "TIMEOUT",
            SchedulerState::BootFail => "BOOT_FAIL",
            SchedulerState::Deadline => "DEADLINE",
            SchedulerState::Cancelled => "CANCELLED",
            SchedulerState::Failed => "FAILED",
        }
    }

    /// Whether the scheduler, not the job, ended the attempt (counts against the larger
    /// preemption budget, seed 003).
    pub fn is_infrastructure(self) -> bool {
        matches!(self, SchedulerState::Preempted | SchedulerState::NodeFail | SchedulerState::BootFail)
    }
}

impl fmt::Display for SchedulerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for a scheduler state name triage does not know.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown scheduler state `{0}`; expected one of PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, BOOT_FAIL, DEADLINE, CANCELLED, FAILED"
)]
pub struct UnknownSchedulerState(pub String);

impl FromStr for SchedulerState {
    type Err = UnknownSchedulerState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_uppercase().replace(['-', ' '], "_");
        let norm = match norm.as_str() {
            "OOM" => "OUT_OF_MEMORY",
            "CANCELED" => "CANCELLED",
            other => other,
        };
        Self::ALL.into_iter().find(|st| st.as_str() == norm).ok_or_else(|| UnknownSchedulerState(s.to_string()))
    }
}

fn one() -> u32 {
    1
}

impl Job {
    /// The record of the current attempt's predecessor, i.e. the most recent finished attempt.
    pub fn last_attempt(&self) -> Option<&Attempt> {
        self.attempts.iter().max_by_key(|a| (a.run_id, a.attempt_id))
    }

    /// The record of attempt `attempt_id` (latest run first), if it exists.
    pub fn attempt(&self, attempt_id: u32) -> Option<&Attempt> {
        self.attempts.iter().filter(|a| a.attempt_id == attempt_id).max_by_key(|a| a.run_id)
    }
}

impl Workflow {
    /// The job with id `job_id`.
    pub fn job(&self, job_id: i64) -> Option<&Job> {
        self.jobs.iter().find(|j| j.id == job_id)
    }

    /// Mistakes serde cannot catch, each as one sentence naming the job and the fix.
    pub fn check(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.format != STORE_FORMAT {
            problems.push(format!(
                "`format` is {}, but this triage reads format {STORE_FORMAT}; convert the file or use a matching triage version",
                self.format
            ));
        }
        if self.run_id == 0 {
            problems.push("`run_id` is 0; runs are numbered from 1".into());
        }
        let mut ids = HashSet::new();
        for job in &self.jobs {
            if !ids.insert(job.id) {
                problems.push(format!("job id {} appears twice; job ids must be unique", job.id));
            }
        }
        for job in &self.jobs {
            if job.attempt_id == 0 {
                problems.push(format!("job {}: `attempt_id` is 0; attempts are numbered from 1", job.id));
            }
            for dep in &job.depends_on {
                if !ids.contains(dep) {
                    problems
                        .push(format!("job {}: `depends_on` names job {dep}, which is not in this workflow", job.id));
                } else if *dep == job.id {
                    problems.push(format!("job {}: depends on itself", job.id));
                }
            }
            let mut seen = HashSet::new();
            for a in &job.attempts {
                if a.attempt_id == 0 || a.attempt_id > job.attempt_id {
                    problems.push(format!(
                        "job {}: attempt record {} is outside 1..={} (the job's attempt_id)",
                        job.id, a.attempt_id, job.attempt_id
                    ));
                }
                if !seen.insert((a.run_id, a.attempt_id)) {
                    problems.push(format!(
                        "job {}: attempt {} of run {} is recorded twice",
                        job.id, a.attempt_id, a.run_id
                    ));
                }
            }
            if job.status == JobStatus::PendingFailed && job.attempt(job.attempt_id).is_none() {
                problems.push(format!(
                    "job {}: it is pending_failed at attempt {} but has no record of that attempt; add it to `attempts`",
                    job.id, job.attempt_id
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: i64) -> Job {
        Job {
            id,
            name: format!("j{id}"),
            command: "true".into(),
            status: JobStatus::Ready,
            attempt_id: 1,
            max_retries: None,
            depends_on: vec![],
            resources: Resources::default(),
            attempts: vec![],
        }
    }

    #[test]
    fn check_finds_structural_mistakes() {
        let mut wf = Workflow {
            format: 2,
            id: 1,
            name: "w".into(),
            use_pending_failed: true,
            run_id: 1,
            jobs: vec![job(1), job(1), job(2)],
        };
        wf.jobs[2].depends_on = vec![7];
        wf.jobs[2].status = JobStatus::PendingFailed;
        let problems = wf.check().join("\n");
        assert!(problems.contains("`format` is 2"), "{problems}");
        assert!(problems.contains("job id 1 appears twice"), "{problems}");
        assert!(problems.contains("names job 7"), "{problems}");
        assert!(problems.contains("no record of that attempt"), "{problems}");
    }

    #[test]
    fn scheduler_states_parse_leniently() {
        assert_eq!("node_fail".parse::<SchedulerState>().unwrap(), SchedulerState::NodeFail);
        assert_eq!("OOM".parse::<SchedulerState>().unwrap(), SchedulerState::OutOfMemory);
        assert!("LUNCH".parse::<SchedulerState>().unwrap_err().to_string().contains("PREEMPTED"));
    }
}

/// Which output stream of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    #[default]
    Stderr,
    Stdout,
}

impl LogStream {
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Stderr => "stderr",
            LogStream::Stdout => "stdout",
        }
    }
}
