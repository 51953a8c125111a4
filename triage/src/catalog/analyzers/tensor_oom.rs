//! A TensorFlow / XLA device-memory failure weighed by its numbers.
//!
//! TensorFlow (and JAX on GPU) allocate device memory through a BFC allocator that owns one
//! budget per process. When an allocation fails, TensorFlow names the tensor (`OOM when
//! allocating tensor with shape[16,1,892800,8,4,2,2] and type float on …/device:GPU:0 by
//! allocator GPU_0_bfc`) or the size (`Allocator (GPU_0_bfc) ran out of memory trying to allocate
//! 6.81GiB (rounded to 7313817600)`), and just before it prints the allocator's stats
//! (`Limit: 10625279591`, `InUse: 7350513920`, or `memory_limit_: …` and `Sum Total of in-use
//! chunks: 6.85GiB`). Everything in use under that limit is this process's own tensors.
//!
//! - The request alone is larger than the allocator's whole limit: no rerun of the same job can
//!   satisfy it. Permanent.
//! - The process's own tensors in use plus the request exceed the limit: the job's own
//!   footprint does not fit the device, and a rerun builds the same graph with the same batch.
//!   Permanent.
//! - The request fits in what the limit leaves free: fragmentation, or memory the allocator
//!   could not grow into because something else held it. Context (unknown).
//! - TensorFlow's start-up line `totalMemory: 7.66GiB freeMemory: 1.01GiB` showing much of the
//!   device already held by something else when the job started means the limit itself may
//!   be larger next time: only a request larger than the whole device stays permanent.
//! - Host (CPU) allocations, and messages without the allocator's numbers (JAX's bare
//!   `RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes`), stay with the
//!   `cuda-out-of-memory` entry (context).
//!
//! XLA's compiler also fails a program that cannot fit the device's memory at all, before it
//! runs: `RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space
//! hbm. Used 21.95G of 15.48G hbm. Exceeded hbm capacity by 6.47G.` The program's static
//! requirement is larger than the device: permanent.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, bytes, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const LARGER: &str = "tensor-oom/larger-than-limit";
const OWN_FILL: &str = "tensor-oom/own-tensors-over-limit";
const FITS: &str = "tensor-oom/fits-in-free-limit";
const PROGRAM: &str = "tensor-oom/program-exceeds-device";

/// Below this share of the device free at start-up, something else held the device.
const FREE_AT_START: f64 = 0.8;
/// How far from the failing line the allocator's stats are looked for.
const STATS_WITHIN: usize = 400;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: LARGER,
        class: EntryClass::Permanent,
        category: "gpu_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 26,
        hint: "One tensor asked for more device memory than the allocator's whole limit: no rerun of the same \
               job can succeed. Reduce the batch, input or model size (or shard it), or run on a larger GPU.",
    },
    Outcome {
        id: OWN_FILL,
        class: EntryClass::Permanent,
        category: "gpu_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 26,
        hint: "The job's own tensors in use plus the failed request exceed the allocator's limit: the model, \
               batch or input does not fit this device, and a rerun builds the same graph. Reduce the batch or \
               input size, use mixed precision, shard the model, or run on a larger GPU.",
    },
    Outcome {
        id: FITS,
        class: EntryClass::Context,
        category: "gpu_oom",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 26,
        hint: "The allocation failed although the allocator's limit left room for it: fragmentation, or memory \
               the allocator could not grow into because another process held it. A rerun may or may not fit; \
               check what else shares the GPU.",
    },
    Outcome {
        id: PROGRAM,
        class: EntryClass::Permanent,
        category: "gpu_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 26,
        hint: "The XLA compiler found that the program needs more device memory than the device has, before \
               running it: every rerun of the same program fails the same way. Reduce the batch or sequence \
               size, use rematerialization or sharding, or run on a device with more memory.",
    },
];

static TRIGGERS: &[&str] = &[
    r"(?i)\bOOM when allocating tensor with shape\s?\[[\d, ]*\]",
    r"(?i)\bran out of memory trying to allocate [\d.]+ ?[KMGT]?i?B \(rounded to \d+\)",
    r"(?i)\bOut of memory while trying to allocate \d+ bytes",
    r"(?i)\bRan out of memory in memory space \w+\. Used [\d.]+ ?[KMGT]?i?B? of [\d.]+ ?[KMGT]?i?B? \w+",
];

/// `shape[…] and type …`: the dimensions and the element type (older messages name the type
/// as `T=DT_FLOAT` on the node line that follows).
static SHAPE: Lazy = Lazy::new(|| re(r"(?i)\bshape\s?\[([\d, ]*)\](?: and type (\w+))?"));
static NODE_TYPE: Lazy = Lazy::new(|| re(r"\bT=DT_([A-Z0-9]+)\b"));
/// The request in bytes, where the line says it.
static REQUEST_BYTES: Lazy = Lazy::new(|| re(r"(?i)(?:\(rounded to (\d+)\)|\ballocate (\d+) bytes\b)"));
/// A host allocation (not the device's memory).
static HOST: Lazy = Lazy::new(|| re(r"(?i)(?:/device:CPU:\d|\ballocator (?:mkl)?cpu\b)"));
/// The allocator's limit.
static LIMIT: Lazy = Lazy::new(|| re(r"(?:^|\s)Limit:\s+(\d+)(?:\s|$)|\bmemory_limit_: (\d+)\b"));
/// The allocator's bytes in use.
static IN_USE: Lazy =
    Lazy::new(|| re(r"(?:^|\s)InUse:\s+(\d+)(?:\s|$)|\bSum Total of in-use chunks: ([\d.]+) ?([KMGT]?i?B)\b"));
/// TensorFlow's start-up report of the device.
static DEVICE: Lazy = Lazy::new(|| re(r"(?i)\btotalMemory: ([\d.]+) ?([KMGT]i?B) freeMemory: ([\d.]+) ?([KMGT]i?B)\b"));
/// XLA's compile-time verdict: used, capacity (and by how much it was exceeded).
static PROGRAM_USE: Lazy = Lazy::new(|| {
    re(
        r"(?i)\bRan out of memory in memory space \w+\. Used ([\d.]+) ?([KMGT]?)i?B? of ([\d.]+) ?([KMGT]?)i?B? \w+\.(?:\s*Exceeded \w+ capacity by ([\d.]+) ?([KMGT]?)i?B?)?",
    )
});

/// Bytes per element of a TensorFlow dtype name (`None`: unknown or variable-size).
fn element_size(dtype: &str) -> Option<f64> {
    Some(match dtype.to_ascii_lowercase().as_str() {
        "bool" | "int8" | "uint8" | "qint8" | "quint8" => 1.0,
        "half" | "float16" | "bfloat16" | "int16" | "uint16" | "qint16" | "quint16" => 2.0,
        "float" | "float32" | "int32" | "uint32" | "qint32" => 4.0,
        "double" | "float64" | "int64" | "uint64" | "complex64" => 8.0,
        "complex128" => 16.0,
        _ => return None,
    })
}

/// The bytes failed line `i` asked for: the tensor's shape times its element size, the size
/// the line states, or the size of the allocator's report just before it.
fn request(lines: &[&str], i: usize) -> Option<f64> {
    let line = lines[i];
    if let Some(c) = SHAPE.captures(line) {
        let dtype = c.get(2).map(|t| t.as_str()).or_else(|| {
            let next = lines.get(i + 1).copied().unwrap_or_default();
            [line, next].iter().find_map(|l| NODE_TYPE.captures(l)?.get(1).map(|t| t.as_str()))
        });
        let dims: Option<Vec<f64>> = c
            .get(1)?
            .as_str()
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| d.parse::<f64>().ok())
            .collect();
        if let (Some(size), Some(dims)) = (dtype.and_then(element_size), dims) {
            return Some(dims.iter().product::<f64>() * size);
        }
    }
    let stated = |l: &&str| {
        let c = REQUEST_BYTES.captures(l)?;
        c.get(1).or_else(|| c.get(2))?.as_str().parse::<f64>().ok()
    };
    std::iter::once(&line).chain(lines[i.saturating_sub(STATS_WITHIN)..i].iter().rev()).find_map(stated)
}

/// A number captured by `re` in `line`: the plain count in group 1, or a size in groups 2-3.
fn amount(re: &super::Regex, line: &str) -> Option<f64> {
    let c = re.captures(line)?;
    if let Some(n) = c.get(1) {
        return n.as_str().parse().ok();
    }
    let n = c.get(2)?;
    match c.get(3) {
        Some(u) => bytes(n.as_str(), u.as_str()),
        None => n.as_str().parse().ok(),
    }
}

/// The allocator's stats nearest to line `i`: looked for before it first (TensorFlow prints
/// them just before the failing op), then after it (a size line followed by its summary).
fn nearest(lines: &[&str], i: usize, re: &super::Regex) -> Option<f64> {
    let before = lines[i.saturating_sub(STATS_WITHIN)..i].iter().rev();
    let after = lines[i..lines.len().min(i + STATS_WITHIN)].iter();
    before.chain(after).find_map(|l| amount(re, l))
}

/// XLA's compile-time report: whether the program exceeds the device.
fn program_exceeds(line: &str) -> Option<bool> {
    let c = PROGRAM_USE.captures(line)?;
    let unit = |g: usize| c.get(g).map_or("", |u| u.as_str());
    let used = bytes(c.get(1)?.as_str(), unit(2))?;
    let capacity = bytes(c.get(3)?.as_str(), unit(4))?;
    let over = match c.get(5) {
        Some(n) => bytes(n.as_str(), unit(6))?,
        None => 0.0,
    };
    Some(used > capacity || over > 0.0)
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    // The last failure decides.
    let &i = input.woken.last()?;
    let lines = input.lines;
    let line = *lines.get(i)?;
    let found = |id| Some(Finding::text(OUTCOMES, id, i));
    if let Some(exceeds) = program_exceeds(line) {
        return if exceeds { found(PROGRAM) } else { None };
    }
    if HOST.is_match(line) {
        return None;
    }
    let request = request(lines, i)?;
    let limit = nearest(lines, i, &LIMIT)?;
    let in_use = nearest(lines, i, &IN_USE);
    // Something else held much of the device when the job started: the limit may be larger
    // next time, so only a request beyond the whole device is certain.
    let shared = lines.iter().find_map(|l| {
        let c = DEVICE.captures(l)?;
        let total = bytes(c.get(1)?.as_str(), c.get(2)?.as_str())?;
        let free = bytes(c.get(3)?.as_str(), c.get(4)?.as_str())?;
        (free < FREE_AT_START * total).then_some(total)
    });
    match (shared, in_use) {
        (Some(total), _) if request > total => found(LARGER),
        (Some(_), _) => None,
        (None, _) if request > limit => found(LARGER),
        (None, Some(used)) if used + request > limit => found(OWN_FILL),
        (None, Some(_)) => found(FITS),
        (None, None) => None,
    }
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&SHAPE, &NODE_TYPE, &REQUEST_BYTES, &HOST, &LIMIT, &IN_USE, &DEVICE, &PROGRAM_USE],
    analyze,
    examples: &[
        // The job's own tensors (7.35 GB) plus a 7.3 GB float tensor exceed the 10.6 GB limit.
        Example {
            text: "2018-06-08 17:26:00.908082: I tensorflow/core/common_runtime/bfc_allocator.cc:680] Stats: \n\
                   Limit:                 10625279591\n\
                   InUse:                  7350513920\n\
                   MaxInUse:               7464792320\n\
                   NumAllocs:                      82\n\
                   \n\
                   2018-06-08 17:26:00.908130: W tensorflow/core/framework/op_kernel.cc:1202] OP_REQUIRES failed at \
                   tile_ops.cc:123 : Resource exhausted: OOM when allocating tensor with shape[16,1,892800,8,4,2,2] \
                   and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            exit_code: Some(1),
            expect: Some(OWN_FILL),
        },
        // A 3.9 MB int8 tensor with the 2.4 GB limit all but used up by the job.
        Example {
            text: "I tensorflow/core/common_runtime/bfc_allocator.cc:964] total_region_allocated_bytes_: 2397175808 \
                   memory_limit_: 2397175808 available bytes: 0 curr_region_allocation_bytes_: 4794351616\n\
                   I tensorflow/core/common_runtime/bfc_allocator.cc:970] Stats: \n\
                   Limit:                  2397175808\n\
                   InUse:                  2395943424\n\
                   W tensorflow/core/framework/op_kernel.cc:1655] OP_REQUIRES failed at reduction_gpu_kernels.cu.h:917 \
                   : Resource exhausted: OOM when allocating tensor with shape[3932928] and type int8 on \
                   /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            exit_code: None,
            expect: Some(OWN_FILL),
        },
        // 2048 x 436631 floats (3.6 GB) on top of 7.6 GB in use, under a 10.9 GB limit.
        Example {
            text: "I tensorflow/core/common_runtime/bfc_allocator.cc:645] Sum Total of in-use chunks: 7.09GiB\n\
                   I tensorflow/core/common_runtime/bfc_allocator.cc:647] Stats: \n\
                   Limit:                 10925244416\n\
                   InUse:                  7613320960\n\
                   tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with \
                   shape[2048,436631] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            exit_code: Some(1),
            expect: Some(OWN_FILL),
        },
        Example {
            text: "W tensorflow/core/common_runtime/bfc_allocator.cc:275] Allocator (GPU_0_bfc) ran out of memory \
                   trying to allocate 14.90GiB (rounded to 16000000000).  Current allocation summary follows.\n\
                   I tensorflow/core/common_runtime/bfc_allocator.cc:818] total_region_allocated_bytes_: 4294967296 \
                   memory_limit_: 10562958132 available bytes: 6267990836 curr_region_allocation_bytes_: 8589934592",
            exit_code: None,
            expect: Some(LARGER),
        },
        Example {
            text: "I tensorflow/core/common_runtime/bfc_allocator.cc:818] total_region_allocated_bytes_: 8590983168 \
                   memory_limit_: 10562958132 available bytes: 1971974964 curr_region_allocation_bytes_: 8589934592\n\
                   I tensorflow/core/common_runtime/bfc_allocator.cc:824] Stats:\n\
                   Limit:                 10562958132\n\
                   InUse:                  4467985408\n\
                   W tensorflow/core/framework/op_kernel.cc:1273] OP_REQUIRES failed at conv_ops.cc:446 : Resource \
                   exhausted: OOM when allocating tensor with shape[1,64,512,512,16] and type float on \
                   /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            exit_code: Some(1),
            expect: Some(FITS),
        },
        // Older messages: the type is on the node line, the size in the allocator's report.
        Example {
            text: "W tensorflow/core/common_runtime/bfc_allocator.cc:275] Allocator (GPU_0_bfc) ran out of memory \
                   trying to allocate 234.62MiB (rounded to 246016000).  Current allocation summary follows.\n\
                   Limit:                 11286970368\n\
                   InUse:                 11185000000\n\
                   ResourceExhaustedError (see above for traceback): OOM when allocating tensor with shape[123008,500]\n\
                   \t [[Node: training_10/Adam/mul_23 = Mul[T=DT_FLOAT, _device=\"/job:localhost/replica:0/task:0/device:GPU:0\"]",
            exit_code: Some(1),
            expect: Some(OWN_FILL),
        },
        Example {
            text: "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran \
                   out of memory in memory space hbm. Used 21.95G of 15.48G hbm. Exceeded hbm capacity by 6.47G.",
            exit_code: Some(1),
            expect: Some(PROGRAM),
        },
        Example {
            text: "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out \
                   of memory in memory space smem. Used 1.00M of 1.00M smem. Exceeded smem capacity by 1.7K.",
            exit_code: Some(1),
            expect: Some(PROGRAM),
        },
        // Something else held most of the device at start-up: the limit may be larger next time.
        Example {
            text: "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1405] Found device 0 with properties: \n\
                   totalMemory: 7.66GiB freeMemory: 1.01GiB\n\
                   Limit:                   367001600\n\
                   InUse:                   301989888\n\
                   ResourceExhaustedError: OOM when allocating tensor with shape[1,64,512,512] and type float on \
                   /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            exit_code: Some(1),
            expect: None,
        },
        // Host memory, not the device's.
        Example {
            text: "Limit:                 68719476736\n\
                   InUse:                 68000000000\n\
                   ResourceExhaustedError: OOM when allocating tensor with shape[100000,100000] and type float on \
                   /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
            exit_code: Some(1),
            expect: None,
        },
        // No allocator numbers: the device's size is not known.
        Example {
            text: "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate \
                   4770354232 bytes.\nBufferAssignment OOM Debugging.\n                 total allocation:   14.44GiB",
            exit_code: Some(1),
            expect: None,
        },
        Example {
            text: "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with \
                   shape[64,512,512] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            exit_code: Some(1),
            expect: None,
        },
    ],
};
