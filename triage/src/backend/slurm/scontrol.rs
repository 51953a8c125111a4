//! Reading `scontrol show job` (Slurm 22.05): the controller's record of a job it still holds.
//!
//! Why scontrol as well as sacct: only the controller knows a job's expanded StdErr/StdOut paths,
//! its Restarts count, Reason and Dependency, and whether it is held; it forgets a job
//! `MinJobAge` seconds after the job ends (then `scontrol` says `Invalid job id specified`, see
//! [`invalid_job_id`], and only sacct remains).
//!
//! Two layouts are read alike:
//! - `scontrol -o show job ID`: one record per line, `Key=Value` fields separated by single
//!   spaces, with a trailing space;
//! - `scontrol show job ID`: a record's fields spread over a first line (`JobId=1 JobName=x`) and
//!   indented continuation lines, records separated by a blank line.
//!
//! A record begins at each line that starts with `JobId=`; other non-blank lines continue the
//! current record; lines before the first record (`No jobs in the system`) are ignored. An array
//! job (`scontrol show job 16`) gives one record per task, each with `ArrayJobId`/`ArrayTaskId`.
//!
//! Splitting fields: scontrol does not quote values, and a job name, a command or a path may
//! contain spaces and `=`. A field starts at the beginning of the record and after a space
//! followed by something shaped like a key and `=` (`[A-Za-z][A-Za-z0-9_:/]*=`, which also covers
//! `AllocNode:Sid=`, `CPUs/Task=`, `ReqB:S:C:T=`). Inside a free-text value (JobName, Command,
//! WorkDir, StdErr, StdIn, StdOut, the comments...), such a token only starts a new field when its
//! key is one scontrol 22.05 prints, so `JobName=train lr=0.1` stays one name. The limitation: a
//! free-text value containing ` Key=` for a key scontrol prints (a job named `a JobState=b`) is
//! still split there, and a value's trailing spaces are dropped; nothing can tell those apart in
//! unquoted output. Prefer sacct's `|`-separated fields for names when it matters.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::sacct::{duration_secs, exit_pair, local_time, memory_bytes};

/// The keys `scontrol show job` prints in Slurm 22.05 (`slurm_sprint_job_info`), including the
/// optional ones and those of `show job -d`.
const KNOWN_KEYS: &[&str] = &[
    "JobId",
    "ArrayJobId",
    "ArrayTaskId",
    "ArrayTaskThrottle",
    "HetJobId",
    "HetJobOffset",
    "HetJobIdSet",
    "JobName",
    "UserId",
    "GroupId",
    "MCS_label",
    "Priority",
    "Nice",
    "Account",
    "QOS",
    "WCKey",
    "JobState",
    "Reason",
    "Dependency",
    "Requeue",
    "Restarts",
    "BatchFlag",
    "Reboot",
    "ExitCode",
    "DerivedExitCode",
    "RunTime",
    "TimeLimit",
    "TimeMin",
    "SubmitTime",
    "EligibleTime",
    "AccrueTime",
    "ResizeTime",
    "StartTime",
    "EndTime",
    "Deadline",
    "CronJob",
    "CrontabSpec",
    "PreemptEligibleTime",
    "PreemptTime",
    "SuspendTime",
    "SecsPreSuspend",
    "LastSchedEval",
    "Scheduler",
    "Partition",
    "AllocNode:Sid",
    "ReqNodeList",
    "ExcNodeList",
    "NodeList",
    "SchedNodeList",
    "BatchFeatures",
    "BatchHost",
    "FedOrigin",
    "FedViableSiblings",
    "FedActiveSiblings",
    "NumNodes",
    "NumCPUs",
    "NumTasks",
    "CPUs/Task",
    "ReqB:S:C:T",
    "TRES",
    "Socks/Node",
    "NtasksPerN:B:S:C",
    "CoreSpec",
    "ThreadSpec",
    "JOB_GRES",
    "Nodes",
    "CPU_IDs",
    "Mem",
    "GRES",
    "MinCPUsNode",
    "MinMemoryNode",
    "MinMemoryCPU",
    "MinTmpDiskNode",
    "Features",
    "DelayBoot",
    "ClusterFeatures",
    "Prefer",
    "Reservation",
    "OverSubscribe",
    "Contiguous",
    "Licenses",
    "Network",
    "Command",
    "WorkDir",
    "AdminComment",
    "SystemComment",
    "Comment",
    "StdErr",
    "StdIn",
    "StdOut",
    "Switches",
    "BurstBuffer",
    "BurstBufferState",
    "CpusPerTres",
    "MemPerTres",
    "TresBind",
    "TresFreq",
    "TresPerJob",
    "TresPerNode",
    "TresPerSocket",
    "TresPerTask",
    "NtasksPerTRES",
    "Power",
    "GresEnforceBind",
    "KillOInInvalidDependent",
    "SpreadJob",
    "MailUser",
    "MailType",
    "Container",
    "SELinuxContext",
];

/// Fields whose values are free text (may contain spaces and `key=value`-like words).
const FREE_TEXT: &[&str] = &[
    "JobName",
    "Command",
    "WorkDir",
    "StdErr",
    "StdIn",
    "StdOut",
    "Comment",
    "AdminComment",
    "SystemComment",
    "CrontabSpec",
    "BurstBuffer",
    "Container",
    "SELinuxContext",
    "MailUser",
];

/// One job record of `scontrol show job`: its fields in the order printed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobRecord {
    fields: Vec<(String, String)>,
}

/// The records of `scontrol show job` output, one-line (`-o`) or multi-line, in order.
pub fn parse(text: &str) -> Vec<JobRecord> {
    let mut records = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with("JobId=") {
            records.extend(current.take());
            current = Some(line.to_string());
        } else if let Some(record) = current.as_mut() {
            record.push(' ');
            record.push_str(line.trim_start());
        }
    }
    records.extend(current);
    records.iter().map(|r| JobRecord::from_line(r)).collect()
}

/// Whether scontrol's stderr says the job is unknown to the controller: never submitted, or
/// forgotten `MinJobAge` seconds after it ended (`slurm_load_jobs error: Invalid job id
/// specified` from `show job`, `Invalid job id specified for job N` from requeue, release,
/// update). Ask sacct about such a job.
pub fn invalid_job_id(stderr: &str) -> bool {
    stderr.contains("Invalid job id specified")
}

/// Where a field may start: `key=` at the beginning or after a space. Returns (key start, `=`).
fn key_starts(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut starts = Vec::new();
    for i in 0..bytes.len() {
        if (i == 0 || bytes[i - 1] == b' ')
            && bytes[i].is_ascii_alphabetic()
            && let Some(len) = bytes[i..].iter().position(|&b| !(b.is_ascii_alphanumeric() || b"_:/".contains(&b)))
            && bytes[i + len] == b'='
        {
            starts.push((i, i + len));
        }
    }
    starts
}

impl JobRecord {
    /// A record from one line of `scontrol -o show job` (see the module documentation for how
    /// fields are split).
    pub fn from_line(line: &str) -> JobRecord {
        let line = line.trim_end();
        let mut fields: Vec<(String, String)> = Vec::new();
        // (key, where its value starts) of the field being read.
        let mut open: Option<(&str, usize)> = None;
        for (start, eq) in key_starts(line) {
            let key = &line[start..eq];
            if let Some((open_key, _)) = open
                && FREE_TEXT.contains(&open_key)
                && !KNOWN_KEYS.contains(&key)
            {
                continue;
            }
            if let Some((open_key, value_start)) = open.take() {
                // `start - 1` is the separating space (start > 0 here: a field is open).
                fields.push((open_key.to_string(), line[value_start..start - 1].trim_end().to_string()));
            }
            open = Some((key, eq + 1));
        }
        if let Some((open_key, value_start)) = open {
            fields.push((open_key.to_string(), line[value_start..].trim_end().to_string()));
        }
        JobRecord { fields }
    }

    /// Every field as printed, in order (a key may repeat in `show job -d` output).
    pub fn fields(&self) -> &[(String, String)] {
        &self.fields
    }

    /// The value of the first field named `key` as printed, `(null)` and empty values included.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`; `None` when absent, empty or `(null)`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.raw(key).filter(|v| !v.is_empty() && *v != "(null)")
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        self.get(key)?.parse().ok()
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key) == Some("1")
    }

    /// `JobId`: the job's own id (an array task's own id, `18` for task 2 of array 16).
    pub fn job_id(&self) -> Option<u64> {
        self.number("JobId")
    }

    /// `ArrayJobId`; `None` for a job that is not part of an array.
    pub fn array_job_id(&self) -> Option<u64> {
        self.number("ArrayJobId")
    }

    /// `ArrayTaskId`; `None` outside arrays and for the range of a pending array (`1-3`).
    pub fn array_task_id(&self) -> Option<u32> {
        self.number("ArrayTaskId")
    }

    /// `JobName`.
    pub fn name(&self) -> Option<&str> {
        self.get("JobName")
    }

    /// `JobState`: `PENDING`, `RUNNING`, `COMPLETING`, `FAILED`, `OUT_OF_MEMORY`...
    pub fn state(&self) -> Option<&str> {
        self.get("JobState")
    }

    /// `Reason`: `NonZeroExitCode`, `job_requeued_in_held_state`, `DependencyNeverSatisfied`...;
    /// `None` for `Reason=None`.
    pub fn reason(&self) -> Option<&str> {
        self.get("Reason").filter(|r| *r != "None")
    }

    /// `Dependency`, with each dependency's status: `afterok:20(failed)`.
    pub fn dependency(&self) -> Option<&str> {
        self.get("Dependency")
    }

    /// `Restarts`: how many times the job was requeued (0 when absent).
    pub fn restarts(&self) -> u32 {
        self.number("Restarts").unwrap_or(0)
    }

    /// `Requeue=1`: the job may be requeued (not submitted with `--no-requeue`).
    pub fn requeue(&self) -> bool {
        self.flag("Requeue")
    }

    /// `BatchFlag=1`: a batch job (sbatch), as opposed to salloc/srun allocations.
    pub fn batch_flag(&self) -> bool {
        self.flag("BatchFlag")
    }

    /// `ExitCode=code:signal`; `(0, 0)` when absent or unreadable. Note that scontrol may differ
    /// from sacct's job row (`0:15` here for a preempted job where sacct says `0:0`).
    pub fn exit_code(&self) -> (i32, i32) {
        self.get("ExitCode").and_then(exit_pair).unwrap_or((0, 0))
    }

    /// The time in field `key` (`SubmitTime`, `StartTime`, `EndTime`...) read in `tz`; `None`
    /// for `Unknown`, `None` and absent fields.
    pub fn time_in(&self, key: &str, tz: &TimeZone) -> Option<Timestamp> {
        local_time(self.get(key)?, tz)
    }

    /// `SubmitTime` in the machine's time zone: after a requeue, the time of the last requeue.
    pub fn submit_time(&self) -> Option<Timestamp> {
        self.time_in("SubmitTime", &TimeZone::system())
    }

    /// `StdErr`: the expanded path (scontrol expands only `%A %a %j %u %x` of the pattern).
    pub fn std_err(&self) -> Option<&str> {
        self.get("StdErr")
    }

    /// `StdOut`: the expanded path, like [`JobRecord::std_err`].
    pub fn std_out(&self) -> Option<&str> {
        self.get("StdOut")
    }

    /// `WorkDir`.
    pub fn work_dir(&self) -> Option<&str> {
        self.get("WorkDir")
    }

    /// `Command`: the batch script's path as submitted; `None` for `--wrap` jobs (`(null)`).
    pub fn command(&self) -> Option<&str> {
        self.get("Command")
    }

    /// `UserId=name(uid)` as `(name, uid)`.
    pub fn user(&self) -> Option<(String, u32)> {
        let (name, uid) = self.get("UserId")?.rsplit_once('(')?;
        Some((name.to_string(), uid.strip_suffix(')')?.parse().ok()?))
    }

    /// The memory the job asked for, in bytes: `MinMemoryNode` (per node, `--mem`; 0 means all
    /// of each node's memory) when scontrol shows it, else `MinMemoryCPU` (per CPU,
    /// `--mem-per-cpu` or the cluster's default) times `NumCPUs`, which is the job's total over
    /// all its nodes (the same as per node for a one-node job). `None` when neither is shown or
    /// NumCPUs is a range (a pending job's `2-4`).
    pub fn min_memory_bytes(&self) -> Option<u64> {
        if let Some(per_node) = self.get("MinMemoryNode") {
            return memory_bytes(per_node);
        }
        let per_cpu = memory_bytes(self.get("MinMemoryCPU")?)?;
        per_cpu.checked_mul(self.number::<u64>("NumCPUs")?)
    }

    /// `TimeLimit` in seconds; `None` for `UNLIMITED` and `Partition_Limit`.
    pub fn time_limit_secs(&self) -> Option<u64> {
        duration_secs(self.get("TimeLimit")?)
    }

    /// `Partition`.
    pub fn partition(&self) -> Option<&str> {
        self.get("Partition")
    }

    /// `NodeList`: the nodes the job ran on; `None` while it has none (pending, held).
    pub fn node_list(&self) -> Option<&str> {
        self.get("NodeList")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scontrol show job 1`, verbatim.
    const SHOW_JOB_1: &str = "JobId=1 JobName=pyfail
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901759 Nice=0 Account=root QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=00:00:00 TimeLimit=365-00:00:00 TimeMin=N/A
   SubmitTime=2026-11-23T18:11:40 EligibleTime=2026-11-23T18:11:40
   AccrueTime=2026-11-23T18:11:40
   StartTime=2026-11-23T18:11:40 EndTime=2026-11-23T18:11:40 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:11:40 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:11:40 Scheduler=Backfill
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=localhost
   BatchHost=localhost
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/tmp/sj/fail.sh
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/pyfail-1.err
   StdIn=/dev/null
   StdOut=/tmp/sj/pyfail-1.out
   Power=
  \x20

";

    /// `scontrol -o show job 2`, verbatim.
    const ONE_LINE_JOB_2: &str = "JobId=2 JobName=pyfail UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 Nice=0 Account=root QOS=normal JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0 RunTime=00:00:00 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-11-23T18:11:40 EligibleTime=2026-11-23T18:11:40 AccrueTime=2026-11-23T18:11:40 StartTime=2026-11-23T18:11:40 EndTime=2026-11-23T18:11:40 Deadline=N/A PreemptEligibleTime=2026-11-23T18:11:40 PreemptTime=None SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:11:40 Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:1964 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=100M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/sj/fail.sh WorkDir=/tmp/sj StdErr=/tmp/sj/pyfail-2.err StdIn=/dev/null StdOut=/tmp/sj/pyfail-2.out Power=\x20
";

    /// `scontrol show job 16`, verbatim.
    const SHOW_ARRAY_16: &str = "JobId=16 ArrayJobId=16 ArrayTaskId=4 JobName=arr
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901755 Nice=0 Account=root QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-11-23T18:20:42 EligibleTime=2026-11-23T18:20:42
   AccrueTime=2026-11-23T18:20:42
   StartTime=2026-11-23T18:20:43 EndTime=2026-11-23T18:20:44 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:20:43 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:20:43 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=localhost
   BatchHost=localhost
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/tmp/sj/arr.sh
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/arr-16_4.err
   StdIn=/dev/null
   StdOut=/tmp/sj/arr-16_4.out
   Power=
  \x20

JobId=19 ArrayJobId=16 ArrayTaskId=3 JobName=arr
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901755 Nice=0 Account=root QOS=normal
   JobState=COMPLETED Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-11-23T18:20:42 EligibleTime=2026-11-23T18:20:42
   AccrueTime=2026-11-23T18:20:42
   StartTime=2026-11-23T18:20:43 EndTime=2026-11-23T18:20:43 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:20:43 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:20:43 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=localhost
   BatchHost=localhost
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/tmp/sj/arr.sh
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/arr-16_3.err
   StdIn=/dev/null
   StdOut=/tmp/sj/arr-16_3.out
   Power=
  \x20

JobId=18 ArrayJobId=16 ArrayTaskId=2 JobName=arr
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901755 Nice=0 Account=root QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=00:00:00 TimeLimit=365-00:00:00 TimeMin=N/A
   SubmitTime=2026-11-23T18:20:42 EligibleTime=2026-11-23T18:20:42
   AccrueTime=Unknown
   StartTime=2026-11-23T18:20:42 EndTime=2026-11-23T18:20:42 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:20:42 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:20:42 Scheduler=Backfill
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=localhost
   BatchHost=localhost
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/tmp/sj/arr.sh
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/arr-16_2.err
   StdIn=/dev/null
   StdOut=/tmp/sj/arr-16_2.out
   Power=
  \x20

JobId=17 ArrayJobId=16 ArrayTaskId=1 JobName=arr
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901755 Nice=0 Account=root QOS=normal
   JobState=COMPLETED Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=365-00:00:00 TimeMin=N/A
   SubmitTime=2026-11-23T18:20:42 EligibleTime=2026-11-23T18:20:42
   AccrueTime=Unknown
   StartTime=2026-11-23T18:20:42 EndTime=2026-11-23T18:20:42 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:20:42 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:20:42 Scheduler=Backfill
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=localhost
   BatchHost=localhost
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/tmp/sj/arr.sh
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/arr-16_1.err
   StdIn=/dev/null
   StdOut=/tmp/sj/arr-16_1.out
   Power=
  \x20

";

    /// `scontrol -o show job 16_4`, verbatim.
    const ONE_LINE_TASK_16_4: &str = "JobId=16 ArrayJobId=16 ArrayTaskId=4 JobName=arr UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 Account=root QOS=normal JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0 RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-23T18:20:42 EligibleTime=2026-11-23T18:20:42 AccrueTime=2026-11-23T18:20:42 StartTime=2026-11-23T18:20:43 EndTime=2026-11-23T18:20:44 Deadline=N/A PreemptEligibleTime=2026-11-23T18:20:43 PreemptTime=None SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:20:43 Scheduler=Main Partition=debug AllocNode:Sid=localhost:1964 ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=100M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/sj/arr.sh WorkDir=/tmp/sj StdErr=/tmp/sj/arr-16_4.err StdIn=/dev/null StdOut=/tmp/sj/arr-16_4.out Power=\x20
";

    /// `scontrol -o show job 48`, verbatim.
    const ONE_LINE_PENDING_ARRAY_48: &str = "JobId=48 ArrayJobId=48 ArrayTaskId=1-3 JobName=arrj UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=0 Nice=0 Account=root QOS=normal JobState=PENDING Reason=JobHeldUser Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-23T18:34:56 EligibleTime=Unknown AccrueTime=Unknown StartTime=Unknown EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:34:56 Scheduler=Main Partition=debug AllocNode:Sid=localhost:1964 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=100M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp/sj StdErr=/tmp/sj/arrj-48.out StdIn=/dev/null StdOut=/tmp/sj/arrj-48.out Power=\x20
";

    /// `scontrol show job 15`, verbatim.
    const SHOW_HELD_REQUEUED_15: &str = "JobId=15 JobName=pyfail
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=0 Nice=0 Account=root QOS=normal
   JobState=PENDING Reason=job_requeued_in_held_state Dependency=(null)
   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-11-23T18:20:24 EligibleTime=2026-11-23T18:20:35
   AccrueTime=Unknown
   StartTime=2026-11-23T18:20:35 EndTime=Unknown Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:20:21 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/tmp/sj/fail.sh
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/pyfail-15.err
   StdIn=/dev/null
   StdOut=/tmp/sj/pyfail-15.out
   Power=
  \x20

";

    /// `scontrol show job 6`, verbatim.
    const SHOW_CANCELLED_PENDING_6: &str = "JobId=6 JobName=canc
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901754 Nice=0 Account=root QOS=normal
   JobState=CANCELLED Reason=Resources Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-11-23T18:11:59 EligibleTime=2026-11-23T18:11:59
   AccrueTime=2026-11-23T18:11:59
   StartTime=2026-11-23T18:12:02 EndTime=2026-11-23T18:12:02 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:12:02 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:12:02 Scheduler=Backfill
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList= SchedNodeList=localhost
   NumNodes=1 NumCPUs=1 NumTasks=N/A CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=100M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/canc-6.out
   StdIn=/dev/null
   StdOut=/tmp/sj/canc-6.out
   Power=
  \x20

";

    /// `scontrol show job 13`, verbatim.
    const SHOW_PREEMPTED_13: &str = "JobId=13 JobName=lowc
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901759 Nice=0 Account=root QOS=normal
   JobState=PREEMPTED Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15
   RunTime=00:00:04 TimeLimit=365-00:00:00 TimeMin=N/A
   SubmitTime=2026-11-23T18:19:53 EligibleTime=2026-11-23T18:19:53
   AccrueTime=2026-11-23T18:19:53
   StartTime=2026-11-23T18:19:53 EndTime=2026-11-23T18:19:57 Deadline=N/A
   PreemptEligibleTime=2026-11-23T18:19:53 PreemptTime=2026-11-23T18:19:57
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-23T18:19:53 Scheduler=Backfill
   Partition=debug AllocNode:Sid=localhost:1964
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=localhost
   BatchHost=localhost
   NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=200M,node=1,billing=2
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=2 MinMemoryCPU=100M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/tmp/sj
   StdErr=/tmp/sj/lowc-13.out
   StdIn=/dev/null
   StdOut=/tmp/sj/lowc-13.out
   Power=
  \x20

";

    fn utc(text: &str) -> Timestamp {
        local_time(text, &TimeZone::UTC).expect("a time")
    }

    fn one(text: &str) -> JobRecord {
        let records = parse(text);
        assert_eq!(records.len(), 1, "{records:?}");
        records.into_iter().next().expect("one record")
    }

    #[test]
    fn multi_line_failed_job() {
        let job = one(SHOW_JOB_1);
        assert_eq!(job.job_id(), Some(1));
        assert_eq!((job.array_job_id(), job.array_task_id()), (None, None));
        assert_eq!(job.name(), Some("pyfail"));
        assert_eq!(job.user(), Some(("root".to_string(), 0)));
        assert_eq!((job.state(), job.reason(), job.dependency()), (Some("FAILED"), Some("NonZeroExitCode"), None));
        assert_eq!((job.restarts(), job.requeue(), job.batch_flag()), (0, true, true));
        assert_eq!(job.exit_code(), (1, 0));
        assert_eq!(job.time_in("SubmitTime", &TimeZone::UTC), Some(utc("2026-11-23T18:11:40")));
        assert_eq!(job.submit_time(), local_time("2026-11-23T18:11:40", &TimeZone::system()));
        assert_eq!(job.time_in("PreemptTime", &TimeZone::UTC), None);
        assert_eq!(job.time_limit_secs(), Some(365 * 86_400));
        assert_eq!((job.partition(), job.node_list()), (Some("debug"), Some("localhost")));
        assert_eq!(job.get("AllocNode:Sid"), Some("localhost:1964"));
        assert_eq!(job.get("CPUs/Task"), Some("1"));
        assert_eq!(job.get("ReqB:S:C:T"), Some("0:0:*:*"));
        assert_eq!(job.get("NtasksPerN:B:S:C"), Some("0:0:*:*"));
        assert_eq!(job.get("Socks/Node"), Some("*"));
        assert_eq!(job.get("TRES"), Some("cpu=1,mem=100M,node=1,billing=1"));
        assert_eq!(job.min_memory_bytes(), Some(100 << 20), "MinMemoryCPU=100M x NumCPUs=1");
        assert_eq!(job.command(), Some("/tmp/sj/fail.sh"));
        assert_eq!(job.work_dir(), Some("/tmp/sj"));
        assert_eq!(job.std_err(), Some("/tmp/sj/pyfail-1.err"));
        assert_eq!(job.std_out(), Some("/tmp/sj/pyfail-1.out"));
        assert_eq!((job.raw("Power"), job.get("Power")), (Some(""), None));
        assert_eq!((job.raw("Features"), job.get("Features")), (Some("(null)"), None));
        assert_eq!(job.fields().last().map(|(k, _)| k.as_str()), Some("Power"));
        assert_eq!(job.fields().len(), 62);
    }

    #[test]
    fn one_line_and_multi_line_give_the_same_fields() {
        let two = one(ONE_LINE_JOB_2);
        assert_eq!(two.job_id(), Some(2));
        assert_eq!(two.std_err(), Some("/tmp/sj/pyfail-2.err"));
        assert_eq!(two.raw("Power"), Some(""), "the trailing space is not part of the value");
        let keys = |r: &JobRecord| r.fields().iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&two), keys(&one(SHOW_JOB_1)));
        // The multi-line record joined into one line reads the same as `-o` prints it.
        let joined = SHOW_JOB_1.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        assert_eq!(one(&joined), one(SHOW_JOB_1));
    }

    #[test]
    fn every_task_of_an_array() {
        let records = parse(SHOW_ARRAY_16);
        let ids: Vec<_> =
            records.iter().map(|r| (r.job_id(), r.array_job_id(), r.array_task_id(), r.state())).collect();
        assert_eq!(
            ids,
            [
                (Some(16), Some(16), Some(4), Some("FAILED")),
                (Some(19), Some(16), Some(3), Some("COMPLETED")),
                (Some(18), Some(16), Some(2), Some("FAILED")),
                (Some(17), Some(16), Some(1), Some("COMPLETED")),
            ]
        );
        assert_eq!(records[2].std_err(), Some("/tmp/sj/arr-16_2.err"));
        assert_eq!(records[1].reason(), None, "Reason=None");
        let task = one(ONE_LINE_TASK_16_4);
        assert_eq!(task, records[0]);
    }

    #[test]
    fn pending_array_has_a_task_range() {
        let job = one(ONE_LINE_PENDING_ARRAY_48);
        assert_eq!((job.job_id(), job.array_job_id()), (Some(48), Some(48)));
        assert_eq!(job.raw("ArrayTaskId"), Some("1-3"));
        assert_eq!(job.array_task_id(), None);
        assert_eq!((job.state(), job.reason()), (Some("PENDING"), Some("JobHeldUser")));
        assert_eq!((job.command(), job.node_list()), (None, None), "Command=(null) for --wrap, NodeList= empty");
        assert_eq!(job.time_in("StartTime", &TimeZone::UTC), None, "StartTime=Unknown");
        assert_eq!(job.time_limit_secs(), None, "UNLIMITED");
        assert_eq!(job.std_out(), Some("/tmp/sj/arrj-48.out"));
    }

    #[test]
    fn held_requeued_job() {
        let job = one(SHOW_HELD_REQUEUED_15);
        assert_eq!((job.state(), job.reason()), (Some("PENDING"), Some("job_requeued_in_held_state")));
        assert_eq!((job.restarts(), job.exit_code()), (1, (1, 0)));
        assert_eq!(job.time_in("SubmitTime", &TimeZone::UTC), Some(utc("2026-11-23T18:20:24")), "the requeue time");
        assert_eq!(job.get("Priority"), Some("0"), "held");
        assert_eq!(job.node_list(), None);
        assert_eq!(job.get("BatchHost"), None);
        assert_eq!(job.raw("NumCPUs"), Some("1"), "NodeList= empty does not swallow the next line's field");
        assert_eq!(job.std_err(), Some("/tmp/sj/pyfail-15.err"));
        // After `scontrol update JobId=15 MinMemoryNode=300`, scontrol shows the per-node form.
        let updated = one(&SHOW_HELD_REQUEUED_15.replace("MinMemoryCPU=100M", "MinMemoryNode=300M"));
        assert_eq!(updated.min_memory_bytes(), Some(300 << 20));
    }

    #[test]
    fn cancelled_while_pending() {
        let job = one(SHOW_CANCELLED_PENDING_6);
        assert_eq!((job.state(), job.exit_code()), (Some("CANCELLED"), (0, 0)));
        assert_eq!((job.node_list(), job.get("SchedNodeList")), (None, Some("localhost")));
        assert_eq!(job.get("NumTasks"), Some("N/A"));
        assert_eq!(job.command(), None);
        assert_eq!(job.std_err(), job.std_out(), "no --error: stderr goes with stdout");
    }

    #[test]
    fn preempted_two_cpus_per_cpu_memory() {
        let job = one(SHOW_PREEMPTED_13);
        assert_eq!((job.state(), job.exit_code()), (Some("PREEMPTED"), (0, 15)));
        assert_eq!(job.min_memory_bytes(), Some(200 << 20), "MinMemoryCPU=100M x NumCPUs=2");
        assert_eq!(job.time_in("PreemptTime", &TimeZone::UTC), Some(utc("2026-11-23T18:19:57")));
        assert_eq!(job.get("Scheduler"), Some("Backfill"));
    }

    #[test]
    fn names_and_paths_with_spaces_and_equals() {
        let line = ONE_LINE_JOB_2
            .replace("JobName=pyfail", "JobName=train lr=0.1 run 2")
            .replace("Command=/tmp/sj/fail.sh", "Command=/tmp/my jobs/a=b.sh")
            .replace("WorkDir=/tmp/sj", "WorkDir=/tmp/my jobs")
            .replace("StdErr=/tmp/sj/pyfail-2.err", "StdErr=/tmp/my jobs/x y=1.err");
        let job = one(&line);
        assert_eq!(job.name(), Some("train lr=0.1 run 2"));
        assert_eq!(job.user(), Some(("root".to_string(), 0)), "UserId follows the name");
        assert_eq!(job.command(), Some("/tmp/my jobs/a=b.sh"));
        assert_eq!(job.work_dir(), Some("/tmp/my jobs"));
        assert_eq!(job.std_err(), Some("/tmp/my jobs/x y=1.err"));
        assert_eq!(job.fields().len(), one(ONE_LINE_JOB_2).fields().len());
        // The documented limitation: a known key inside a free-text value splits it.
        let odd = one(&ONE_LINE_JOB_2.replace("JobName=pyfail", "JobName=a JobState=b"));
        assert_eq!(odd.name(), Some("a"));
        // An unknown key after a non-free-text field still starts a field (newer releases).
        let newer = one(&ONE_LINE_JOB_2.replace("Power=", "Power= FutureKey=x"));
        assert_eq!(newer.get("FutureKey"), Some("x"));
    }

    #[test]
    fn user_and_oddities() {
        let record = JobRecord::from_line("JobId=7 UserId=first.last(1001) NumCPUs=2-4 MinMemoryCPU=1G ExitCode=x");
        assert_eq!(record.user(), Some(("first.last".to_string(), 1001)));
        assert_eq!(record.min_memory_bytes(), None, "NumCPUs is a range");
        assert_eq!(record.exit_code(), (0, 0));
        assert_eq!(record.restarts(), 0);
        assert!(!record.requeue() && !record.batch_flag());
        assert_eq!(parse("No jobs in the system\n"), vec![]);
        assert_eq!(parse(""), vec![]);
        assert_eq!(parse("JobId=1 JobName=a\r\nJobId=2 JobName=b\r\n").len(), 2);
    }

    #[test]
    fn invalid_job_id_messages() {
        assert!(invalid_job_id("slurm_load_jobs error: Invalid job id specified\n"));
        assert!(invalid_job_id("Invalid job id specified for job 20\n"));
        assert!(invalid_job_id("Invalid job id specified for job 20\nslurm_suspend error: Invalid job id specified\n"));
        assert!(!invalid_job_id("Access/permission denied for job 30\n"));
        assert!(!invalid_job_id("Job is pending execution for job 15\n"));
        assert!(!invalid_job_id(""));
    }
}
