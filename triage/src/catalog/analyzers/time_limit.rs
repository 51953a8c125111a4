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

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, outcome, re};
use crate::model::{EntryClass, SchedulerState, Strategy, SuggestedAction};

pub(crate) struct TimeLimit;

const FINISHED: &str = "time-limit/after-work-finished";
const LONGEST: &str = "time-limit/at-longest-limit";

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
];

static TRIGGERS: &[&str] = &[
    r"(?i)\bDUE TO TIME ?LIMIT\b",
    r"(?i)\bjob killed: walltime \d+ exceeded limit \d+",
    r"(?i)\b(?:exceeded|reached) (?:the |its )?(?:wall ?(?:clock|time)|run ?time) limit\b",
];

static PBS: Lazy = Lazy::new(|| re(r"(?i)\bjob killed: walltime \d+ exceeded limit (\d+)"));
static DONE: Lazy =
    Lazy::new(|| re(r"(?i)\b(?:steps \(100%\) done|completed successfully|all done|finished successfully)"));

impl Analyzer for TimeLimit {
    fn triggers(&self) -> &'static [&'static str] {
        TRIGGERS
    }

    fn outcomes(&self) -> &'static [Outcome] {
        OUTCOMES
    }

    fn analyze(&self, input: &Input<'_>) -> Option<Finding> {
        // The first kill line: what came before it is the job's own output.
        let &k = input.woken.first()?;
        let confirmed_by =
            (input.ctx.scheduler_state == Some(SchedulerState::Timeout)).then(|| "scheduler state TIMEOUT".to_string());
        let before = &input.lines[k.saturating_sub(FINISHED_WITHIN)..k];
        if before.iter().any(|l| DONE.is_match(l)) {
            return Some(Finding { outcome: outcome(OUTCOMES, FINISHED), line: k, confirmed_by });
        }
        let limit: u64 =
            input.woken.iter().find_map(|&i| PBS.captures(input.lines.get(i)?)?.get(1)?.as_str().parse().ok())?;
        (limit >= LONGEST_LIMIT_SECS).then(|| Finding { outcome: outcome(OUTCOMES, LONGEST), line: k, confirmed_by })
    }

    fn examples(&self) -> &'static [Example] {
        &[
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
                text: "Thread 04 processes reads 1056026-1075950\n=>> PBS: job killed: walltime 86415 exceeded limit 86400",
                exit_code: None,
                expect: None,
            },
            Example {
                text: "Finished job 5.\n3 of 10 steps (30%) done\n\
                       slurmstepd: error: *** JOB 1 ON node01 CANCELLED AT 2022-01-10T08:45:29 DUE TO TIME LIMIT ***",
                exit_code: None,
                expect: None,
            },
            Example {
                text: "+ seq_stat -f 3k -g 1g\nslurmstepd: error: *** JOB 867816 ON node01 CANCELLED AT 2021-05-11T12:06:17 DUE TO TIME LIMIT ***",
                exit_code: None,
                expect: None,
            },
            Example {
                text: "all done\nMOAB_INFO:  job exceeded wallclock limit",
                exit_code: None,
                expect: Some(FINISHED),
            },
        ]
    }
}
