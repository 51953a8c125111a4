//! A time-limit kill weighed by what came before it and by the limit itself.
//!
//! A job stopped at its wall-time limit usually needs more time (the `slurm-time-limit`
//! entry: transient, retry with more time). Two readings of the same kill say otherwise:
//!
//! - The job's own output reported all its work finished just before the kill (`(100%)
//!   done`, `completed successfully`, `all done`): it hung on exit, and more time will not
//!   help. Context. (One finished step of many is progress, not completion.)
//! - The limit was already the length of the longest queues (three days or more, as PBS and
//!   Torque print it: `walltime 259217 exceeded limit 259200`): more time may not be
//!   grantable. Context.
//! - Nothing before the kill shows the job advancing: a job that hangs (a deadlock, a dead
//!   file system, a peer that never answers) also runs into its limit, and more time only
//!   doubles the waste. Context. Progress is a percentage or an `N of M` count below 100%, or
//!   two lines of the same shape (equal once their numbers are blinded) whose numbers differ:
//!   `step 12000 loss 0.231` then `step 12100 loss 0.229`. Scheduler lines do not count.
//!   LSF's kill report (`TERM_RUNLIMIT: job killed after reaching LSF run time limit.`, or
//!   `TERM_CPULIMIT`) comes before the job's own output (`The output (if any) follows:`), and
//!   so does Nextflow's (`Process exceeded running time limit`, then `Command output:`), so
//!   there the lines after the kill are searched too. A progress bar redrawn with `\r` and
//!   never ended with a newline shares its line with the kill (`11/50 [1:55:19<...]slurmstepd:
//!   error: *** JOB ... DUE TO TIME LIMIT ***`): a redraw there that has moved off its start
//!   (`22%`, `11/50`, not `0%| | 0/1`) is progress.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, outcome, re};
use crate::model::{EntryClass, SchedulerState, Strategy, SuggestedAction};

const FINISHED: &str = "time-limit/after-work-finished";
const LONGEST: &str = "time-limit/at-longest-limit";
const NO_PROGRESS: &str = "time-limit/no-progress-shown";

/// How many lines before the kill are searched for progress.
const PROGRESS_WITHIN: usize = 12;
/// How many lines after a kill report that precedes the job's output ([`REPORT_FIRST`]) are
/// searched (the report's summary, then the job's output).
const OUTPUT_AFTER_WITHIN: usize = 40;

/// A limit of this many seconds or more is taken as a queue's maximum.
const LONGEST_LIMIT_SECS: u64 = 72 * 3600;
/// How many lines before the kill a completion message counts.
const FINISHED_WITHIN: usize = 6;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: FINISHED,
        class: EntryClass::Context,
        category: "timeout",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 31,
        hint: "The job hit its time limit right after its own output said the work was done: it hung on \
               exit (a process or file handle that never closed). More time will not help; find what kept \
               it alive before retrying.",
    },
    Outcome {
        id: LONGEST,
        class: EntryClass::Context,
        category: "timeout",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 31,
        hint: "The job ran out a wall-time limit of three days or more, often already the queue's maximum: \
               more time may not be grantable. Check the queue's limit; checkpoint and resume, or split \
               the work, rather than retry as is.",
    },
    Outcome {
        id: NO_PROGRESS,
        class: EntryClass::Context,
        category: "timeout",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 31,
        hint: "The job hit its time limit and nothing in its output before the kill shows it advancing: it \
               may have needed more time, or hung (a deadlock, a stalled file system, a peer that never \
               answered). Check its progress (output files, logs) before retrying with more time.",
    },
];

static TRIGGERS: &[&str] = &[
    r"(?i)\bDUE TO TIME ?LIMIT\b",
    r"(?i)\bjob killed: walltime \d+ exceeded limit \d+",
    r"(?i)\b(?:exceeded|reached) (?:the |its )?(?:wall ?(?:clock|time)|run ?time) limit\b",
    r"\bTERM_RUNLIMIT\b",
    // Grid Engine's hard run-time limit, salloc's and srun's own words for the same kill.
    r"(?i)\bh_rt\b.*\bexceeded\b|\bexceeded (?:the )?(?:hard |soft )?wall ?clock\b",
    r"(?i)\bhas exceeded its time limit and its allocation has been revoked\b|\bhitting max wall clock limit\b",
    // Kill reports printed before the job's own output (see [`REPORT_FIRST`]).
    r"\bTERM_CPULIMIT\b",
    r"(?i)\bProcess (?:`[^`]+` )?exceeded running time limit\b",
];

/// Kill reports that come before the job's own output: LSF's (`The output (if any) follows:`)
/// and Nextflow's (`Command output:`). The lines after them are searched for progress too.
static REPORT_FIRST: Lazy = Lazy::new(|| re(r"(?i)\bTERM_(?:RUN|CPU)LIMIT\b|\bexceeded running time limit\b"));

static PBS: Lazy = Lazy::new(|| re(r"(?i)\bjob killed: walltime \d+ exceeded limit (\d+)"));
/// One line that shows progress by itself: `45%`, `3 of 10`.
static PROGRESS_LINE: Lazy = Lazy::new(|| re(r"(?i)\b(?:\d{1,2}(?:\.\d+)?%|\d+ (?:of|/) \d+\b)"));
/// A progress bar's redraw that has moved off its start (`22%`, `11/50`; not `0%|  | 0/1`).
static BAR_MOVED: Lazy = Lazy::new(|| re(r"\b(?:[1-9]\d?(?:\.\d+)?%|[1-9]\d*/\d+\b)"));
/// The scheduler's own lines (and the kill itself), which say nothing of the job's progress.
static SCHEDULER: Lazy = Lazy::new(|| {
    re(
        r"(?i)^\s*(?:slurmstepd|srun|salloc|sbatch|=>> PBS|PBS|MOAB|job deleted|job killed|TERM_\w+:|Exited with exit code|# LSBATCH|Resource usage summary|The output \(if any\)|(?:CPU time|Max Memory|Average Memory|Total Requested Memory|Delta Memory|Max Swap|Max Processes|Max Threads|Run time|Turnaround time) *:)",
    )
});
/// Where the scheduler's kill message starts when the job's output shares its line.
static KILL_START: Lazy = Lazy::new(|| re(r"slurmstepd(?:-[\w.-]+)?: |=>> PBS: "));
static DONE: Lazy =
    Lazy::new(|| re(r"(?i)\b(?:steps \(100%\) done|completed successfully|all done|finished successfully)"));

/// Whether the job's own lines show it advancing (see the module docs).
fn shows_progress<'a>(lines: impl IntoIterator<Item = &'a str>) -> bool {
    let own: Vec<&str> = lines.into_iter().filter(|l| !l.trim().is_empty() && !SCHEDULER.is_match(l)).collect();
    if own.iter().any(|l| PROGRESS_LINE.is_match(l) && !l.contains("100%")) {
        return true;
    }
    let shape = |l: &str| -> (String, Vec<String>) {
        let mut blind = String::with_capacity(l.len());
        let mut numbers = Vec::new();
        let mut digits = String::new();
        for c in l.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
            } else {
                if !digits.is_empty() {
                    blind.push('#');
                    numbers.push(std::mem::take(&mut digits));
                }
                blind.push(c);
            }
        }
        if !digits.is_empty() {
            blind.push('#');
            numbers.push(digits);
        }
        (blind, numbers)
    };
    let shapes: Vec<(String, Vec<String>)> = own.iter().map(|l| shape(l)).collect();
    shapes
        .iter()
        .enumerate()
        .any(|(i, (b, n))| !n.is_empty() && shapes[i + 1..].iter().any(|(b2, n2)| b2 == b && n2 != n))
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    // The first kill line: what came before it is the job's own output.
    let &k = input.woken.first()?;
    let confirmed_by =
        (input.ctx.scheduler_state == Some(SchedulerState::Timeout)).then(|| "scheduler state TIMEOUT".to_string());
    let before = &input.lines[k.saturating_sub(FINISHED_WITHIN)..k];
    if before.iter().any(|l| DONE.is_match(l)) {
        return Some(Finding { outcome: outcome(OUTCOMES, FINISHED), line: k, confirmed_by });
    }
    let limit: Option<u64> =
        input.woken.iter().find_map(|&i| PBS.captures(input.lines.get(i)?)?.get(1)?.as_str().parse().ok());
    if limit.is_some_and(|l| l >= LONGEST_LIMIT_SECS) {
        return Some(Finding { outcome: outcome(OUTCOMES, LONGEST), line: k, confirmed_by });
    }
    let before = input.lines[k.saturating_sub(PROGRESS_WITHIN)..k].iter().copied();
    // The job's own redraws (`\r`-separated) on the kill's line, before the kill message: a
    // bar that moved off its start is progress.
    let kill_line = input.lines[k];
    let bar_moved =
        kill_line[..KILL_START.find_start(kill_line).unwrap_or(0)].split('\r').any(|s| BAR_MOVED.is_match(s));
    let output_after =
        REPORT_FIRST.is_match(kill_line).then(|| input.lines.iter().skip(k + 1).take(OUTPUT_AFTER_WITHIN).copied());
    (!bar_moved && !shows_progress(before.chain(output_after.into_iter().flatten()))).then(|| Finding {
        outcome: outcome(OUTCOMES, NO_PROGRESS),
        line: k,
        confirmed_by,
    })
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&REPORT_FIRST, &PBS, &PROGRESS_LINE, &BAR_MOVED, &SCHEDULER, &KILL_START, &DONE],
    analyze,
    examples: &[
        Example {
            text: "Finished job 0.\n1 of 1 steps (100%) done\n\
                   slurmstepd: error: *** JOB 8297525 ON node01 CANCELLED AT 2022-01-10T08:45:29 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: Some(FINISHED),
        },
        Example {
            text: "=>> PBS: job killed: walltime 259217 exceeded limit 259200",
            exit_code: None,
            expect: Some(LONGEST),
        },
        Example {
            text: "Thread 01 processes reads 1036101-1056025\nThread 04 processes reads 1056026-1075950\n\
                   =>> PBS: job killed: walltime 86415 exceeded limit 86400",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "Finished job 5.\n3 of 10 steps (30%) done\n\
                   slurmstepd: error: *** JOB 1 ON node01 CANCELLED AT 2022-01-10T08:45:29 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: None,
        },
        // A command and then the kill: nothing shows the job advancing.
        Example {
            text: "+ seq_stat -f 3k -g 1g\nslurmstepd: error: *** JOB 867816 ON node01 CANCELLED AT 2021-05-11T12:06:17 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        Example {
            text: "slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on node01 ***",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        Example {
            text: "srun: Job step aborted: Waiting up to 47 seconds for job step to finish.\n\
                   slurmstepd: error: *** JOB 494583 ON node01 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        // Progress right up to the kill: more time is what it needs (the entry's transient).
        Example {
            text: "step 12000 loss 0.231\nstep 12100 loss 0.229\n\
                   slurmstepd: error: *** STEP 551.0 ON gpu07 CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: None,
        },
        // A progress bar redrawn with `\r` that the kill message continues on the same line.
        Example {
            text: " 18%|█▊        | 9/50 [1:34:21<7:09:26, 628.44s/it]\r 22%|██▏       | 11/50 [1:55:19<6:48:37, 628.66s/it]\
                   slurmstepd: error: *** JOB 42189 ON node01 CANCELLED AT 2022-04-14T16:17:16 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: None,
        },
        // A bar still at its start when the kill came shows no progress.
        Example {
            text: "  0%|          | 0/1 [00:00<?, ?it/s]\
                   slurmstepd: error: *** JOB 58593 ON node01 CANCELLED AT 2022-05-08T13:04:44 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        // The kill alone on its line (after a `\r`): nothing drawn before it.
        Example {
            text: "+ ./solve input.cfg\n\rslurmstepd-node01: error: *** JOB 7 ON node01 CANCELLED AT 2024-02-16T02:25:58 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        Example {
            text: "Current # sequences loaded and processed from file: 30000...\n\
                   Current # sequences loaded and processed from file: 35000...\n\
                   slurmstepd: error: *** JOB 3884617 ON node023 CANCELLED AT 2018-08-19T16:30:21 DUE TO TIME LIMIT ***",
            exit_code: None,
            expect: None,
        },
        // LSF: the kill report, then its summary; no output shows the job advancing.
        Example {
            text: "# LSBATCH: User input\n./mhap.sh 0\n------------------------------------------------------------\n\n\
                   TERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with exit code 140.\n\n\
                   Resource usage summary:\n\n    CPU time :                                   5.69 sec.\n\
                   \x20   Max Memory :                                 6 MB\n    Run time :                                   3609 sec.\n\n\
                   The output (if any) follows:\n\nRunning block 000001 in query 000003\n\nUser defined signal 2",
            exit_code: Some(140),
            expect: Some(NO_PROGRESS),
        },
        // LSF prints the job's output after the report: progress there counts.
        Example {
            text: "TERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with exit code 140.\n\n\
                   Resource usage summary:\n\n    CPU time :                                   3500.10 sec.\n\n\
                   The output (if any) follows:\n\nprocessed 1200 of 5000 samples\nprocessed 1300 of 5000 samples",
            exit_code: Some(140),
            expect: None,
        },
        // Grid Engine and salloc say the same kill in their own words.
        Example {
            text: "+ ./run_model.sh input.cfg\njob 4242 exceeded hard wallclock time - initiate terminate method",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        Example {
            text: "epoch 3 batch 200/900\nepoch 3 batch 300/900\n\
                   salloc: Job 8812 has exceeded its time limit and its allocation has been revoked.",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "TERM_CPULIMIT: job killed after reaching LSF CPU usage limit.\nExited with exit code 152.\n\n\
                   The output (if any) follows:\n\nreading input.bam",
            exit_code: Some(152),
            expect: Some(NO_PROGRESS),
        },
        // Nextflow prints the kill, then the command and its output: progress there counts.
        Example {
            text: "Caused by:\n  Process `ALIGN (s1)` exceeded running time limit (2h)\n\nCommand executed:\n\n  \
                   bwa mem ref.fa s1.fq > s1.sam\n\nCommand exit status:\n  -\n\nCommand output:\n  (empty)",
            exit_code: None,
            expect: Some(NO_PROGRESS),
        },
        Example {
            text: "Caused by:\n  Process `ALIGN (s1)` exceeded running time limit (2h)\n\nCommand executed:\n\n  \
                   bwa mem ref.fa s1.fq > s1.sam\n\nCommand exit status:\n  -\n\nCommand output:\n  \
                   [M::process] read 100000 sequences (10000000 bp)...\n  \
                   [M::process] read 100000 sequences (10000127 bp)...",
            exit_code: None,
            expect: None,
        },
        Example { text: "all done\nMOAB_INFO:  job exceeded wallclock limit", exit_code: None, expect: Some(FINISHED) },
    ],
};
