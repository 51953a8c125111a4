//! An NCCL watchdog timeout weighed by how far the job had got.
//!
//! PyTorch's watchdog names the collective that hung with its sequence number
//! (`WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, ...)`), and newer versions say how far the
//! process group got (`last completed NCCL work: 1579`; -1 when none completed).
//!
//! - A hang on one of the very first collectives (sequence number below
//!   [`FIRST_COLLECTIVES`]) means the ranks never managed to talk: wrong network interface,
//!   a firewall, peer-to-peer or InfiniBand setup, mismatched world sizes. That recurs on
//!   every launch until the setup changes: permanent.
//! - A hang after many collectives had succeeded (at least [`PROGRESS`]) is a passing
//!   fault (a straggler, a network blip, a flaky link): transient, best restarted from a
//!   checkpoint.
//! - In between, the `nccl-timeout` entry decides as before.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

pub(crate) struct NcclWatchdog;

const SETUP: &str = "nccl-watchdog/first-collectives";
const AFTER: &str = "nccl-watchdog/after-progress";

/// Below this sequence number a hang is a setup failure.
const FIRST_COLLECTIVES: u64 = 10;
/// From this sequence number on, communication had clearly worked.
const PROGRESS: u64 = 1000;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: SETUP,
        class: EntryClass::Permanent,
        category: "nccl",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 10,
        hint: "An NCCL collective timed out among the very first ones of the job: the ranks never \
               communicated. That is setup (network interface, firewall, P2P/InfiniBand, world size or \
               rank mismatch), which recurs on every launch; check NCCL_DEBUG=INFO output and the \
               interfaces before retrying.",
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

static TRIGGERS: &[&str] = &[r"\bWorkNCCL\(SeqNum=\d+", r"\blast completed NCCL work: -?\d+"];

pub(super) static SEQ: Lazy = Lazy::new(|| re(r"\bWorkNCCL\(SeqNum=(\d+)|\blast completed NCCL work: (-?\d+)"));

impl Analyzer for NcclWatchdog {
    fn triggers(&self) -> &'static [&'static str] {
        TRIGGERS
    }

    fn outcomes(&self) -> &'static [Outcome] {
        OUTCOMES
    }

    fn analyze(&self, input: &Input<'_>) -> Option<Finding> {
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
        Some(Finding { outcome: outcome(OUTCOMES, id), line, confirmed_by: None })
    }

    fn examples(&self) -> &'static [Example] {
        &[
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
                text: "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=250, \
                       OpType=BROADCAST, Timeout(ms)=600000) ran for 600103 milliseconds before timing out.",
                exit_code: None,
                expect: None,
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
        ]
    }
}
