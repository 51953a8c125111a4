//! A CUDA allocation failure weighed by its numbers.
//!
//! PyTorch prints how much it tried to allocate, the GPU's total capacity and what was free
//! (`Tried to allocate 55.57 GiB. GPU 0 has a total capacity of 12.00 GiB of which 9.02 GiB
//! is free`, or the older `(GPU 0; 6.00 GiB total capacity; ...; 3.03 GiB free; ...)`).
//!
//! - One allocation larger than the whole device can never succeed on it: permanent (the
//!   input size, batch size or code must change).
//! - The job alone fills the device: PyTorch's newer message says how much memory *this
//!   process* has in use, names no other process, that use is nearly all of the memory in use
//!   ([`OWN_SHARE`]), the device is nearly full, and the memory PyTorch holds idle (reserved
//!   but unallocated) is smaller than the request or a small share of the process's memory
//!   ([`IDLE_SHARE`]). Then no other job is sharing the GPU and it is not fragmentation: the
//!   job does not fit this GPU, and a rerun grows the same way.
//!   Permanent. Without the per-process figure (older messages) another process may have held
//!   the rest, and the `cuda-out-of-memory` entry's unknown stands.
//! - An allocation smaller than what was reported free failed on fragmentation or a
//!   concurrent allocation: it may or may not fit on a rerun. Context (unknown), with the
//!   allocator hint.
//! - Anything else stays with the `cuda-out-of-memory` entry (context): the job's own tensors
//!   may or may not fit next time.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, bytes, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const LARGER: &str = "cuda-oom/larger-than-gpu";
const FRAGMENTED: &str = "cuda-oom/fits-in-free-memory";
const OWN_FILL: &str = "cuda-oom/own-tensors-fill-gpu";

/// For [`OWN_FILL`]: the share of the memory in use that must be this process's, and the share
/// of the capacity that must be in use.
const OWN_SHARE: f64 = 0.95;
const FULL_SHARE: f64 = 0.90;
/// For [`OWN_FILL`]: idle memory below this share of the process's is not fragmentation worth
/// a rerun (a few hundred MiB of a filled card; where fragmentation is the cause, PyTorch holds a
/// quarter or more of its memory idle).
const IDLE_SHARE: f64 = 0.10;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: LARGER,
        class: EntryClass::Permanent,
        category: "gpu_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 26,
        hint: "One CUDA allocation asked for more memory than the whole GPU has: no rerun on this GPU can \
               succeed. Reduce the batch, input or model size (or shard it), or run on a larger GPU.",
    },
    Outcome {
        id: FRAGMENTED,
        class: EntryClass::Context,
        category: "gpu_oom",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 26,
        hint: "The CUDA allocation failed although more memory was reported free than it asked for: \
               fragmentation or another process allocating at the same time. A rerun may or may not fit; \
               try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and check what else shares the GPU.",
    },
    Outcome {
        id: OWN_FILL,
        class: EntryClass::Permanent,
        category: "gpu_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 26,
        hint: "The job alone had filled the GPU (no other process named, little memory reserved idle) when \
               it asked for more: the model, batch or input does not fit this device, and a rerun grows the \
               same way. Reduce the batch or \
               sequence size, use gradient checkpointing or mixed precision, shard the model, or run on a \
               larger GPU.",
    },
];

static TRIGGERS: &[&str] = &[r"(?i)\bTried to allocate [\d.]+ ?[KMGTP]i?B\b"];

static REQUEST: Lazy = Lazy::new(|| re(r"(?i)\bTried to allocate ([\d.]+) ?([KMGTP]i?B)\b"));
static CAPACITY: Lazy =
    Lazy::new(|| re(r"(?i)(?:\btotal capac\w* of ([\d.]+) ?([KMGTP]i?B)\b|\b([\d.]+) ?([KMGTP]i?B) total capacity\b)"));
static THIS_PROCESS: Lazy = Lazy::new(|| re(r"(?i)\bthis process has ([\d.]+) ?([KMGTP]i?B) memory in use\b"));
static OTHER_PROCESS: Lazy = Lazy::new(|| re(r"(?i)\bProcess \d+ has [\d.]+ ?[KMGTP]i?B memory in use\b"));
static IDLE: Lazy = Lazy::new(|| re(r"(?i)\b([\d.]+) ?([KMGTP]i?B) is reserved by PyTorch but unallocated\b"));
static FREE: Lazy =
    Lazy::new(|| re(r"(?i)(?:\bof which ([\d.]+) ?([KMGTP]i?B) (?:is )?free\b|[;,] ([\d.]+) ?([KMGTP]i?B) free\b)"));

/// The first size captured by `re` in `line` (either alternative's pair of groups).
fn size(re: &super::Regex, line: &str) -> Option<f64> {
    let c = re.captures(line)?;
    let (n, u) = match (c.get(1), c.get(2)) {
        (Some(n), Some(u)) => (n, u),
        _ => (c.get(3)?, c.get(4)?),
    };
    bytes(n.as_str(), u.as_str())
}

/// Whether the message shows this process alone filling the device (see the module docs).
fn fills_alone(near: &[&str], total: f64, free: f64, request: f64) -> bool {
    let used = total - free;
    let Some(own) = near.iter().find_map(|l| size(&THIS_PROCESS, l)) else { return false };
    let idle = near.iter().find_map(|l| size(&IDLE, l)).unwrap_or(0.0);
    !near.iter().any(|l| OTHER_PROCESS.is_match(l))
        && used >= FULL_SHARE * total
        && own >= OWN_SHARE * used
        && (idle < request || idle < IDLE_SHARE * own)
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    // The last failed allocation decides; its numbers are on its line or the next two.
    let &i = input.woken.last()?;
    let request = size(&REQUEST, input.lines.get(i)?)?;
    let near = &input.lines[i..input.lines.len().min(i + 3)];
    let capacity = near.iter().find_map(|l| size(&CAPACITY, l));
    let free = near.iter().find_map(|l| size(&FREE, l));
    let id = match (capacity, free) {
        (Some(total), _) if request > total => LARGER,
        (Some(total), Some(free)) if fills_alone(near, total, free, request) => OWN_FILL,
        (_, Some(free)) if request <= free => FRAGMENTED,
        _ => return None,
    };
    Some(Finding::text(OUTCOMES, id, i))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&REQUEST, &CAPACITY, &THIS_PROCESS, &OTHER_PROCESS, &IDLE, &FREE],
    analyze,
    examples: &[
        Example {
            text: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a \
                   total capacty of 12.00 GiB of which 9.02 GiB is free.",
            exit_code: Some(1),
            expect: Some(LARGER),
        },
        Example {
            text: "RuntimeError: CUDA out of memory. Tried to allocate 1.50 TiB (GPU 0; 79.15 GiB total \
                   capacity; 1.2 GiB already allocated; 77.0 GiB free; 1.3 GiB reserved in total by PyTorch)",
            exit_code: None,
            expect: Some(LARGER),
        },
        Example {
            text: "CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB \
                   already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)",
            exit_code: None,
            expect: Some(FRAGMENTED),
        },
        Example {
            text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total \
                   capacity of 23.65 GiB of which 21.06 MiB is free. Including non-PyTorch memory, this process \
                   has 23.61 GiB memory in use. Of the allocated memory 22.95 GiB is allocated by PyTorch, and \
                   30.40 MiB is reserved by PyTorch but unallocated.",
            exit_code: Some(1),
            expect: Some(OWN_FILL),
        },
        // Idle memory larger than the request, but a small share of the process's.
        Example {
            text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 392.00 MiB. GPU 0 has a total \
                   capacity of 10.57 GiB of which 38.19 MiB is free. Including non-PyTorch memory, this process \
                   has 10.53 GiB memory in use. Of the allocated memory 9.82 GiB is allocated by PyTorch, and \
                   538.49 MiB is reserved by PyTorch but unallocated.",
            exit_code: Some(1),
            expect: Some(OWN_FILL),
        },
        // A quarter of the process's memory idle: fragmentation may be the cause.
        Example {
            text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total \
                   capacity of 23.65 GiB of which 1.66 GiB is free. Including non-PyTorch memory, this process \
                   has 20.81 GiB memory in use. Of the allocated memory 12.09 GiB is allocated by PyTorch, and \
                   4.84 GiB is reserved by PyTorch but unallocated.",
            exit_code: Some(1),
            expect: None,
        },
        // Another process holds part of the GPU: it may be gone next time.
        Example {
            text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total \
                   capacity of 23.65 GiB of which 21.06 MiB is free. Process 4242 has 6.00 GiB memory in use. \
                   Including non-PyTorch memory, this process has 17.61 GiB memory in use.",
            exit_code: Some(1),
            expect: None,
        },
        // Older messages do not say whose the rest is.
        Example {
            text: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 90.00 MiB. GPU 0 has a \
                   total capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory 7.13 GiB is \
                   allocated by PyTorch, and 127.09 MiB is reserved by PyTorch but unallocated.",
            exit_code: Some(1),
            expect: None,
        },
        // Needs more than is free but less than the GPU: the cuda-out-of-memory entry's case.
        Example {
            text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total \
                   capacity of 31.47 GiB of which 12.73 GiB is free.",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 5.80 GiB total \
                   capacity; 5.60 GiB already allocated; 3.19 MiB free; 5.61 GiB reserved in total)",
            exit_code: None,
            expect: None,
        },
        // No numbers to weigh.
        Example { text: "Tried to allocate 2.00 GiB", exit_code: None, expect: None },
    ],
};
