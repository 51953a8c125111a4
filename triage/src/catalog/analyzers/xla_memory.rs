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

static TRIGGERS: &[&str] = &[SPACE_RE, RESERVE_RE];

static SPACE: Lazy = Lazy::new(|| re(SPACE_RE));
static RESERVE: Lazy = Lazy::new(|| re(RESERVE_RE));

/// The two sizes `regex` reads from `line` (needed, available), in bytes.
fn sizes(regex: &Lazy, line: &str) -> Option<(f64, f64)> {
    let c = regex.captures(line)?;
    let size = |n: usize, u: usize| bytes(c.get(n)?.as_str(), c.get(u).map_or("", |g| g.as_str()));
    Some((size(1, 2)?, size(3, 4)?))
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    input.woken.iter().rev().find_map(|&i| {
        let (needed, available) = sizes(&SPACE, input.line(i)).or_else(|| sizes(&RESERVE, input.line(i)))?;
        (needed > available).then(|| Finding::text(OUTCOMES, TOO_LARGE, i))
    })
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&SPACE, &RESERVE],
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
            text: "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem.",
            exit_code: None,
            expect: None,
        },
    ],
};
