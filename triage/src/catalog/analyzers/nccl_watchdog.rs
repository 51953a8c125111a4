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

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const SETUP: &str = "nccl-watchdog/first-collectives";
const AFTER: &str = "nccl-watchdog/after-progress";

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
];

static TRIGGERS: &[&str] = &[r"\bWorkNCCL\((?:\w+=[\w.]+, ){0,6}SeqNum=\d+", r"\blast completed NCCL work: -?\d+"];

static SEQ: Lazy =
    Lazy::new(|| re(r"\bWorkNCCL\((?:\w+=[\w.]+, ){0,6}SeqNum=(\d+)|\blast completed NCCL work: (-?\d+)"));

fn analyze(input: &Input<'_>) -> Option<Finding> {
    // The highest sequence number reached decides (ranks report slightly different ones).
    let (line, seq) = input
        .woken
        .iter()
        .filter_map(|&i| {
            let c = SEQ.captures(input.lines.get(i)?)?;
            let n = c.get(1).or_else(|| c.get(2))?.as_str().parse::<i64>().ok()?;
            // "last completed: -1" is no collective at all; SeqNum counts from 1 (or 0).
            Some((i, u64::try_from(n.max(0)).ok()?))
        })
        .max_by_key(|&(i, n)| (n, i))?;
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
    regexes: &[&SEQ],
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
