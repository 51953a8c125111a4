//! The logs knowledge: what a failed job's stderr says, cheaply and comparably.
//!
//! - [`tail`](tail_lines): the last lines or bytes of a log file, read backwards from the end,
//!   so the cost is the tail's, not the file's (a 1 GiB stderr costs one block);
//!   [`LogTail::read`] does it for the file a backend names for an attempt.
//! - [`signature`]: a stable fingerprint of a stderr tail with the noise (times, ranks, hosts,
//!   ids, per-job paths) folded away, so the thousands of jobs that died the same way form one
//!   group, and the agent explains each cause once.
//! - [`attempt_diff`]: how the last two attempts' tails differ, to tell "failed the same way
//!   again" from "got further this time".
//!
//! Pure: data in, data out; the only I/O is reading a file the caller names.

mod backward;
mod diff;
mod log_tail;
mod normalize;
#[cfg(test)]
mod normalize_reference;
mod normalize_scan;
mod rule;
mod signature;
mod tail;

pub use diff::{AttemptDiff, attempt_diff};
pub use log_tail::{LogTail, TailSize};
pub use normalize::normalize_line;
pub use signature::{
    Fingerprint, Signature, SignatureError, fingerprint, signature, signature_summary, signature_with,
};
pub use tail::{Cut, Tail, TailError, TailOptions, tail_bytes, tail_bytes_from, tail_lines, tail_lines_from};

/// Compile the patterns every [`fingerprint`] uses (normalization, and the rules that tell an
/// error line from chatter), which are otherwise compiled by the first fingerprint that needs
/// each. A long-running process (the MCP server) calls it once at start, so that its first
/// answer does not pay for it; the work and the memory are what the first fingerprints of real
/// stderr would spend anyway.
pub fn warm_up() {
    normalize::warm_up();
    signature::warm_up();
}
