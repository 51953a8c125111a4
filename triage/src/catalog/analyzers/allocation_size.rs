//! A failed memory allocation weighed by its size.
//!
//! Programs that cannot get memory often say how much they asked for: numpy's `Unable to
//! allocate 3.46 GiB for an array`, R's `cannot allocate vector of size 2.5 Gb`, Rust's
//! `memory allocation of N bytes failed`, Erlang's `Cannot allocate N bytes of memory`,
//! AddressSanitizer's `failed to allocate 0x… bytes`, Kraken's `Failed attempt to allocate N
//! bytes`. The size decides what a rerun does:
//!
//! - **A terabyte or more in one allocation** (1 TiB): no node gives one process that. It is
//!   a shape, size or unit bug, an integer that wrapped (`18446744073709551553 bytes`), or a
//!   corrupt input. Permanent (a bug): more memory will not help.
//! - **256 GiB or more** in one allocation: more than the nodes of most clusters have, so a
//!   rerun of the same job with the same input fails the same way. Permanent; the fix is the
//!   input or the parameters that scale it, or a large-memory node chosen on purpose.
//! - Less: an ordinary shortage (more memory may well help). No finding; the entries decide
//!   (`python-memory-error`, `bad-alloc`, ...).
//!
//! PyTorch's `Tried to allocate` is GPU memory, which the `cuda-oom` analyzer weighs against
//! the GPU's capacity; here it counts only at a terabyte.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, bytes, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const TERABYTES: &str = "allocation-size/terabytes";
const BEYOND_NODE: &str = "allocation-size/beyond-a-node";

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: TERABYTES,
        class: EntryClass::Permanent,
        category: "code_bug",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 26,
        hint: "The program asked for a terabyte or more in one allocation: a shape, size or unit bug, an \
               integer that wrapped, or a corrupt input, not a memory shortage. More memory will not help; \
               fix the code or the input.",
    },
    Outcome {
        id: BEYOND_NODE,
        class: EntryClass::Permanent,
        category: "oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 20,
        hint: "The program asked for hundreds of gigabytes in one allocation, more than the nodes of most \
               clusters have: a rerun with the same input and settings fails the same way. Check the input's \
               size and the parameters that scale it (a smaller database, a larger k-mer, a chunk size), or \
               run it on a large-memory node on purpose.",
    },
];

/// A size with a unit (numpy, R, ASan, MATLAB-like messages).
const UNIT_RE: &str = r"(?i)\b(?:Unable to allocate|cannot allocate vector of size|failed to allocate)\s+(\d+(?:\.\d*)?)\s?([KMGTPE]i?B|[KMGTP]b|bytes)\b";
/// A count of bytes, decimal or hex, within a few words after "allocate" (Rust, Erlang, ASan,
/// Kraken's `Failed attempt to allocate 569289122376bytes`, XGBoost's `enough RAM N bytes`).
const BYTES_RE: &str = r"(?i)(?:\b(?:re)?allocat(?:e|ion|ing)\b[ -~]{0,20}?|\bCheck if you have enough RAM )\b(\d{4,}|0x[0-9a-f]+) ?(bytes)\b";
/// PyTorch's GPU request (a terabyte only).
const GPU_RE: &str = r"(?i)\bTried to allocate (\d+(?:\.\d+)?) ?([KMGTPE]i?B)\b";

static TRIGGERS: &[&str] = &[UNIT_RE, BYTES_RE, GPU_RE];

static UNIT: Lazy = Lazy::new(|| re(UNIT_RE));
static BYTES: Lazy = Lazy::new(|| re(BYTES_RE));
static GPU: Lazy = Lazy::new(|| re(GPU_RE));

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// One allocation this large is beyond any node.
const TERABYTE: f64 = 1024.0 * GIB;
/// One allocation this large is beyond the nodes of most clusters.
const NODE: f64 = 256.0 * GIB;

/// The size one regex reads from `line`, in bytes.
fn size(regex: &Lazy, line: &str) -> Option<f64> {
    let c = regex.captures(line)?;
    let number = c.get(1)?.as_str();
    let unit = c.get(2)?.as_str();
    if let Some(hex) = number.strip_prefix("0x").or_else(|| number.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|n| n as f64);
    }
    bytes(number, if unit.eq_ignore_ascii_case("bytes") { "" } else { unit })
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    input.woken.iter().rev().find_map(|&i| {
        let host = [&UNIT, &BYTES].into_iter().filter_map(|r| size(r, input.line(i))).fold(0.0, f64::max);
        let gpu = size(&GPU, input.line(i)).unwrap_or(0.0);
        let id = if host.max(gpu) >= TERABYTE {
            TERABYTES
        } else if host >= NODE {
            BEYOND_NODE
        } else {
            return None;
        };
        Some(Finding::text(OUTCOMES, id, i))
    })
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&UNIT, &BYTES, &GPU],
    analyze,
    examples: &[
        Example {
            text: "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.28 TiB for an array with shape (1000000, 1000000) and data type float64",
            exit_code: Some(1),
            expect: Some(TERABYTES),
        },
        Example {
            text: "memory allocation of 18446744073709551553 bytes failed",
            exit_code: Some(134),
            expect: Some(TERABYTES),
        },
        Example {
            text: "  eheap_alloc: Cannot allocate 976733209832459912 bytes of memory (of type \"heap_frag\").",
            exit_code: None,
            expect: Some(TERABYTES),
        },
        Example {
            text: "==7869==WARNING: AddressSanitizer failed to allocate 0x7f5afaad7acf bytes",
            exit_code: None,
            expect: Some(TERABYTES),
        },
        Example {
            text: "Possible cause 1: not enough RAM. Check if you have enough RAM 108847334315717446 bytes",
            exit_code: None,
            expect: Some(TERABYTES),
        },
        Example {
            text: "RuntimeError: CUDA out of memory. Tried to allocate 2.50 TiB (GPU 0; 79.15 GiB total capacity)",
            exit_code: Some(1),
            expect: Some(TERABYTES),
        },
        Example { text: "Error: cannot allocate vector of size 1.5 Tb", exit_code: Some(1), expect: Some(TERABYTES) },
        Example {
            text: "Loading database information...Failed attempt to allocate 569289122376bytes;\n\
                   you may not have enough free memory to load this database.",
            exit_code: Some(1),
            expect: Some(BEYOND_NODE),
        },
        Example {
            text: "MemoryError: Unable to allocate 300. GiB for an array with shape (200000, 200000) and data type float64",
            exit_code: Some(1),
            expect: Some(BEYOND_NODE),
        },
        Example { text: "Failed attempt to allocate 761044749164 bytes;", exit_code: None, expect: Some(BEYOND_NODE) },
        // Ordinary shortages: the entries decide.
        Example {
            text: "Unable to allocate 3.46 GiB for an array with shape (464, 1000, 1000)",
            exit_code: Some(1),
            expect: None,
        },
        Example { text: "memory allocation of 2181038096 bytes failed", exit_code: Some(134), expect: None },
        Example {
            text: "==9054==WARNING: AddressSanitizer failed to allocate 0x002bffffffd4 bytes",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "Loading database information...Failed attempt to allocate 45977025096bytes;",
            exit_code: None,
            expect: None,
        },
        Example { text: "Error: cannot allocate vector of size 4.5 Gb", exit_code: Some(1), expect: None },
        // GPU memory is the cuda-oom analyzer's below a terabyte.
        Example {
            text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 300.00 GiB (GPU 0; 79.15 GiB total capacity)",
            exit_code: Some(1),
            expect: None,
        },
    ],
};
