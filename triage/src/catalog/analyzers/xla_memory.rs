//! An XLA (TPU or GPU) memory failure weighed by its numbers.
//!
//! XLA says how much a program needs against what the device has:
//!
//! - `Ran out of memory in memory space hbm. Used 21.90G of 7.48G hbm. Exceeded hbm capacity
//!   by 14.42G.` is the compiler's own check: the program, as compiled (model, batch size,
//!   sharding), needs more than the device's memory. Every run compiles the same program.
//!   Permanent.
//! - `Attempting to reserve 10.51G at the bottom of memory. That was not possible. There are
//!   8.97G free, 0B reserved, and 8.97G reservable.`: a request larger than all the free
//!   memory does not fit, whatever the layout; a TPU core belongs to one job, so the rest is
//!   the job's own. Permanent. A request that fits the free memory but not the reservable
//!   part is fragmentation: no finding (the `cuda-out-of-memory` entry's context decides).
//! - `Allocation (size=107374182400) would exceed memory (size=17179869184)`: one buffer larger
//!   than the device's whole memory (in bytes). Permanent; one that would fit is not decided here.
//! - `TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, exceeding available
//!   bytes: 95.74G`: the compiler's budget, its usages summed against what is available.
//!   Permanent when the sum is larger.
//!
//! All of them wear gRPC's `RESOURCE_EXHAUSTED`, which elsewhere means a rate limit or a quota:
//! the numbers, not the code, say which.

use super::lean::Captures;
use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, bytes, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const TOO_LARGE: &str = "xla-memory/program-larger-than-device";

static OUTCOMES: &[Outcome] = &[Outcome {
    id: TOO_LARGE,
    class: EntryClass::Permanent,
    category: "gpu_oom",
    action: SuggestedAction::Fail,
    strategy: Strategy::Abort,
    priority: 26,
    hint: "XLA found that the program needs more device memory than the TPU or GPU has (or than is free \
           on it, with nothing else there): a rerun compiles the same program and fails the same way. \
           Reduce the batch size or sequence length, shard the model over more devices (or rematerialize \
           activations), or use a device with more memory.",
}];

const SPACE_RE: &str = r"(?i)\bRan out of memory in memory space \w+\. Used (\d+(?:\.\d+)?)([KMGT]?)i?B? of (\d+(?:\.\d+)?)([KMGT]?)i?B?\b";
const RESERVE_RE: &str = r"(?i)\bAttempting to reserve (\d+(?:\.\d+)?)([KMGT]?)i?B? at the bottom of memory\. That was not possible\. There are (\d+(?:\.\d+)?)([KMGT]?)i?B? free\b";
/// Sizes in bytes: its empty groups stand for the units [`sizes`] reads.
const ALLOCATION_RE: &str = r"\bAllocation \(size=(\d+)()\) would exceed memory \(size=(\d+)()\)";
const BUDGET_RE: &str = r"(?i)\b(Hbm usage:? (?u:.)*)\bexceeding available bytes: (\d+(?:\.\d+)?)([KMGT]?)i?B?";
/// One usage of a budget line (`Hbm usage: 34.82G`, `SparseCore Hbm usage 174.10G`).
const USAGE_RE: &str = r"(?i)\busage:? (\d+(?:\.\d+)?)([KMGT]?)i?B?\b";

static TRIGGERS: &[&str] = &[SPACE_RE, RESERVE_RE, ALLOCATION_RE, BUDGET_RE];

static SPACE: Lazy = Lazy::new(|| re(SPACE_RE));
static RESERVE: Lazy = Lazy::new(|| re(RESERVE_RE));
static ALLOCATION: Lazy = Lazy::new(|| re(ALLOCATION_RE));
static BUDGET: Lazy = Lazy::new(|| re(BUDGET_RE));
static USAGE: Lazy = Lazy::new(|| re(USAGE_RE));

/// The size in group `number` with its unit in group `unit` (absent or empty: bytes), in bytes.
fn size(c: &Captures<'_>, number: usize, unit: usize) -> Option<f64> {
    bytes(c.get(number)?.as_str(), c.get(unit).map_or("", |g| g.as_str()))
}

/// The two sizes `regex` reads from `line` (needed, available), in bytes.
fn sizes(regex: &Lazy, line: &str) -> Option<(f64, f64)> {
    let c = regex.captures(line)?;
    Some((size(&c, 1, 2)?, size(&c, 3, 4)?))
}

/// A budget line's usages, summed, and what it says is available, in bytes.
fn budget(line: &str) -> Option<(f64, f64)> {
    let c = BUDGET.captures(line)?;
    let available = size(&c, 2, 3)?;
    let mut needed = 0.0;
    for u in USAGE.captures_iter(c.get(1)?.as_str()) {
        needed += size(&u, 1, 2)?;
    }
    Some((needed, available))
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    input.woken.iter().rev().find_map(|&i| {
        let line = input.line(i);
        let (needed, available) = sizes(&SPACE, line)
            .or_else(|| sizes(&RESERVE, line))
            .or_else(|| sizes(&ALLOCATION, line))
            .or_else(|| budget(line))?;
        (needed > available).then(|| Finding::text(OUTCOMES, TOO_LARGE, i))
    })
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&SPACE, &RESERVE, &ALLOCATION, &BUDGET, &USAGE],
    analyze,
    examples: &[
        Example {
            text: "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. \
                   Ran out of memory in memory space hbm. Used 21.90G of 7.48G hbm. Exceeded hbm capacity by 14.42G.",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem. \
                   Used 32.42M of 16.00M vmem. Exceeded vmem capacity by 16.42M.",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "RESOURCE_EXHAUSTED: Attempting to reserve 10.51G at the bottom of memory. That was not possible. \
                   There are 8.97G free, 0B reserved, and 8.97G reservable.",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        // Fits the free memory, not the reservable part: fragmentation, the entries decide.
        Example {
            text: "RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory. That was not possible. \
                   There are 6.78G free, 0B reserved, and 3.33G reservable.",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "XlaRuntimeError: RESOURCE_EXHAUSTED: Allocation (size=107374182400) would exceed memory \
                   (size=17179869184) :: #allocation7 [shape = 'u8[327680,327680]{1,0}', space=hbm]",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        // One buffer that would fit the device: occupancy or fragmentation, not decided here.
        Example {
            text: "XlaRuntimeError: RESOURCE_EXHAUSTED: Allocation (size=1073741824) would exceed memory (size=17179869184)",
            exit_code: Some(1),
            expect: None,
        },
        Example {
            text: "RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, exceeding \
                   available bytes: 95.74G",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 4.10G, exceeding \
                   available bytes: 95.74G",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem.",
            exit_code: None,
            expect: None,
        },
    ],
};
