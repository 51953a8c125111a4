//! An NCCL watchdog timeout weighed by how far the job had got.
//!
//! PyTorch's watchdog names the collective that hung with its sequence number
//! (`WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, ...)`, older builds
//! `WorkNCCL(OpType=ALLREDUCE, SeqNum=458)`), and newer versions say how far the process
//! group got (`last completed NCCL work: 1579`; -1 when none completed).
//!
//! - A hang on one of the very first collectives (sequence number below
//!   [`FIRST_COLLECTIVES`]) means the ranks never managed to talk. Most often that is
//!   setup (wrong network interface, a firewall, P2P or InfiniBand, mismatched world sizes)
//!   that recurs, but a rank stuck in its own start-up work (a long preprocessing step, a
//!   one-off stuck peer) looks the same: the text does not decide, so this is context
//!   (unknown) with a setup hint. The labelled corpus calls such bare first-collective
//!   hangs `ambiguous` unless another line shows the cause.
//! - A hang after many collectives had succeeded (at least [`PROGRESS`]) is a passing
//!   fault (a straggler, a network blip, a flaky link): transient, best restarted from a
//!   checkpoint.
//! - In between, or with no sequence number at all, nothing shows progress: the
//!   `nccl-timeout` context entry decides (unknown).
//! - Two ranks that hung on the same sequence number of one process group in different
//!   collectives (another `OpType`, or another `NumelIn`: rank 0 in a 1-element all-reduce,
//!   rank 1 in a 2,958,336-element one) are out of step: their programs took different paths
//!   (a rank-dependent branch, a rank that skipped a step), which the same code and data
//!   repeat. Permanent, whatever the sequence number.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const SETUP: &str = "nccl-watchdog/first-collectives";
const AFTER: &str = "nccl-watchdog/after-progress";
const OUT_OF_STEP: &str = "nccl-watchdog/ranks-out-of-step";

/// Below this sequence number a hang is a setup failure.
const FIRST_COLLECTIVES: u64 = 10;
/// From this sequence number on, communication had clearly worked (hundreds of collectives).
const PROGRESS: u64 = 100;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: SETUP,
        class: EntryClass::Context,
        category: "nccl",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 10,
        hint: "An NCCL collective timed out among the very first ones of the job: the ranks never \
               communicated. Usually setup (network interface, firewall, P2P/InfiniBand, world size or \
               rank mismatch), which recurs on every launch, but also a rank stuck in its own start-up \
               work (preprocessing on rank 0 only, a stuck peer). Check NCCL_DEBUG=INFO output, the \
               interfaces and what rank 0 was doing before retrying.",
    },
    Outcome {
        id: AFTER,
        class: EntryClass::Transient,
        category: "nccl",
        action: SuggestedAction::Retry,
        strategy: Strategy::CheckpointRestore,
        priority: 5,
        hint: "An NCCL collective hung after many had succeeded: communication worked, so this is most \
               likely a passing fault (a straggler rank, a network or link blip). Retry from the last \
               checkpoint; if it recurs at the same step, look for a rank that diverged.",
    },
    Outcome {
        id: OUT_OF_STEP,
        class: EntryClass::Permanent,
        category: "nccl",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 6,
        hint: "Ranks hung on the same NCCL sequence number in different collectives (another operation \
               or another tensor size): they ran different code paths, e.g. a rank-dependent branch, a \
               rank that skipped or repeated a step, unequal numbers of batches per rank. The same code \
               and data hang the same way; find where the ranks diverge (TORCH_DISTRIBUTED_DEBUG=DETAIL \
               reports the mismatch).",
    },
];

static TRIGGERS: &[&str] = &[r"\bWorkNCCL\((?:\w+=[\w.]+, ){0,6}SeqNum=\d+", r"\blast completed NCCL work: -?\d+"];

/// The fields of one watchdog report, up to `Timeout(ms)`: `WorkNCCL(SeqNum=5769, OpType=ALLREDUCE, NumelIn=1, ...`.
static WORK: Lazy = Lazy::new(|| re(r"\bWorkNCCL\(([\w=., ]*)"));

/// The process group a report names (`[PG 1 Rank 0]`, `[PG ID 1 PG GUID ...]`): each group
/// numbers its collectives on its own, so only reports of one group are compared.
static PG: Lazy = Lazy::new(|| re(r"\[PG (?:ID )?(\d+)"));

/// How far the process group got, in newer reports: `last completed NCCL work: 1579` (-1: none).
static LAST: Lazy = Lazy::new(|| re(r"\blast completed NCCL work: (-?\d+)"));

/// One collective of a watchdog report: its process group (if named) and its
/// `(SeqNum, OpType, NumelIn)`.
type Step<'a> = (Option<&'a str>, (&'a str, &'a str, &'a str));

/// What one woken line reports, read in one pass: the sequence number it reached and, where the
/// line names all three fields, the collective that hung.
struct Report<'a> {
    seq: u64,
    step: Option<Step<'a>>,
}

fn report_of(line: &str) -> Option<Report<'_>> {
    if let Some(fields) = WORK.captures(line).and_then(|c| c.get(1)) {
        let fields = fields.as_str();
        let field = |name: &str| {
            fields.split(", ").find_map(|kv| kv.split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v))
        };
        if let Some((seq_text, seq)) = field("SeqNum").and_then(|v| Some((v, v.parse::<u64>().ok()?))) {
            let pg = PG.captures(line).and_then(|c| c.get(1)).map(|g| g.as_str());
            let step = field("OpType").zip(field("NumelIn")).map(|(op, numel)| (pg, (seq_text, op, numel)));
            return Some(Report { seq, step });
        }
    }
    // "last completed: -1" is no collective at all; SeqNum counts from 1 (or 0).
    let n = LAST.captures(line)?.get(1)?.as_str().parse::<i64>().ok()?;
    Some(Report { seq: u64::try_from(n.max(0)).ok()?, step: None })
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let reports: Vec<(usize, Report<'_>)> =
        input.woken.iter().filter_map(|&i| Some((i, report_of(input.lines.get(i)?)?))).collect();
    // Ranks out of step: the same sequence number of one process group in different collectives.
    let steps: Vec<(usize, Step<'_>)> = reports.iter().filter_map(|(i, r)| Some((*i, r.step?))).collect();
    if let Some(&(line, _)) = steps.iter().enumerate().find_map(|(a, (_, (pg, (seq, op, numel))))| {
        steps[a + 1..].iter().find(|(_, (pg2, (s2, o2, n2)))| pg2 == pg && s2 == seq && (o2 != op || n2 != numel))
    }) {
        return Some(Finding::text(OUTCOMES, OUT_OF_STEP, line));
    }
    // The highest sequence number reached decides (ranks report slightly different ones).
    let &(line, Report { seq, .. }) = reports.iter().max_by_key(|(i, r)| (r.seq, *i))?;
    let id = if seq < FIRST_COLLECTIVES {
        SETUP
    } else if seq >= PROGRESS {
        AFTER
    } else {
        return None;
    };
    Some(Finding::text(OUTCOMES, id, line))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&WORK, &LAST, &PG],
    analyze,
    examples: &[
        Example {
            text: "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: \
                   WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800505 milliseconds \
                   before timing out.",
            exit_code: None,
            expect: Some(SETUP),
        },
        Example {
            text: "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, \
                   OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.\n\
                   [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469507, \
                   OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802211 milliseconds before timing out.",
            exit_code: Some(-6),
            expect: Some(AFTER),
        },
        Example {
            text: "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=25, \
                   OpType=BROADCAST, Timeout(ms)=600000) ran for 600103 milliseconds before timing out.",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "[E ProcessGroupNCCL.cpp:523] Watchdog caught collective operation timeout: \
                   WorkNCCL(OpType=ALLREDUCE, SeqNum=458) ran for 1800600 ms before timing out.",
            exit_code: None,
            expect: Some(AFTER),
        },
        Example { text: "NCCL watchdog timeout after 1800 s", exit_code: None, expect: None },
        // Two ranks in different collectives at the same sequence number: out of step.
        Example {
            text: "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: \
                   WorkNCCL(SeqNum=5769, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for \
                   600063 milliseconds before timing out.\n\
                   [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: \
                   WorkNCCL(SeqNum=5769, OpType=ALLREDUCE, NumelIn=2958336, NumelOut=2958336, Timeout(ms)=600000) \
                   ran for 600048 milliseconds before timing out.",
            exit_code: None,
            expect: Some(OUT_OF_STEP),
        },
        // Two process groups number their collectives each on its own: not a mismatch.
        Example {
            text: "[PG 0 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5769, \
                   OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600063 milliseconds before \
                   timing out.\n\
                   [PG 1 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5769, \
                   OpType=BROADCAST, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600050 milliseconds \
                   before timing out.",
            exit_code: None,
            expect: Some(AFTER),
        },
        // The same collective on both ranks, one sequence number apart: progress, not a mismatch.
        Example {
            text: "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5769, OpType=ALLREDUCE, \
                   NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600063 milliseconds before timing out.\n\
                   [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5768, OpType=BROADCAST, \
                   NumelIn=7, NumelOut=7, Timeout(ms)=600000) ran for 600048 milliseconds before timing out.",
            exit_code: None,
            expect: Some(AFTER),
        },
        Example {
            text: "[PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, \
                   last enqueued NCCL work: 1582, last completed NCCL work: 1579.",
            exit_code: None,
            expect: Some(AFTER),
        },
        Example {
            text: "[PG 0 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 1, \
                   last enqueued NCCL work: 1, last completed NCCL work: -1.",
            exit_code: None,
            expect: Some(SETUP),
        },
    ],
};
