//! Attempt diff: how a job's last two attempts' stderr tails compare.
//!
//! Why: "failed the same way again" argues against a blind retry, "got further this time" for
//! one. Raw tails always differ (times, ranks, hosts), so the comparison is made on normalized
//! lines ([`normalize_line`]); the diff shown is of the raw lines, but a line whose normalized
//! form did not change counts as context, so it shows only what really changed.
//!
//! `identical` means "the same failure": the normalized lines are at least
//! [`SAME_FAILURE_RATIO`] similar, **or** the two tails have the same [`signature`] (the same
//! error at the end, after more or less output before it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use similar::udiff::UnifiedHunkHeader;
use similar::{Algorithm, DiffOp, capture_diff_slices, get_diff_ratio, group_diff_ops};

use super::normalize::normalize_line;
use super::signature::signature;

/// Normalized lines at least this similar are the same failure.
pub const SAME_FAILURE_RATIO: f32 = 0.9;
/// The unified diff is cut after this many lines.
const MAX_DIFF_LINES: usize = 200;
/// A line of the unified diff is cut after this many characters.
const MAX_LINE_CHARS: usize = 500;
/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;

/// How the latest attempt's tail compares with the previous one's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptDiff {
    /// Similarity of the normalized lines: 0 nothing in common, 1 the same lines.
    pub ratio: f32,
    /// The same failure: `ratio` ≥ 0.9, or the same signature.
    pub identical: bool,
    /// Both tails have the same failure signature.
    pub same_signature: bool,
    /// Unified diff of the raw lines (`--- attempt N-1`, `+++ attempt N`), changes judged on
    /// normalized lines; empty when nothing changed; at most 200 lines.
    pub unified: String,
}

/// Compares the previous attempt's tail with the latest one's.
pub fn attempt_diff(previous: &str, latest: &str) -> AttemptDiff {
    let old: Vec<&str> = previous.lines().collect();
    let new: Vec<&str> = latest.lines().collect();
    let old_norm: Vec<String> = old.iter().map(|l| normalize_line(l)).collect();
    let new_norm: Vec<String> = new.iter().map(|l| normalize_line(l)).collect();
    let ops = capture_diff_slices(Algorithm::Patience, &old_norm, &new_norm);
    let ratio = get_diff_ratio(&ops, old.len(), new.len());
    let same_signature = signature(previous) == signature(latest);
    let changed = ops.iter().any(|op| !matches!(op, DiffOp::Equal { .. }));
    let unified = if changed { unified(ops, &old, &new) } else { String::new() };
    AttemptDiff { ratio, identical: ratio >= SAME_FAILURE_RATIO || same_signature, same_signature, unified }
}

fn unified(ops: Vec<DiffOp>, old: &[&str], new: &[&str]) -> String {
    let mut lines = vec!["--- attempt N-1".to_owned(), "+++ attempt N".to_owned()];
    for hunk in group_diff_ops(ops, CONTEXT_LINES) {
        lines.push(format!("{}", UnifiedHunkHeader::new(&hunk)));
        for op in &hunk {
            match *op {
                DiffOp::Equal { new_index, len, .. } => {
                    lines.extend(new[new_index..new_index + len].iter().map(|l| line(' ', l)));
                }
                DiffOp::Delete { old_index, old_len, .. } => {
                    lines.extend(old[old_index..old_index + old_len].iter().map(|l| line('-', l)));
                }
                DiffOp::Insert { new_index, new_len, .. } => {
                    lines.extend(new[new_index..new_index + new_len].iter().map(|l| line('+', l)));
                }
                DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                    lines.extend(old[old_index..old_index + old_len].iter().map(|l| line('-', l)));
                    lines.extend(new[new_index..new_index + new_len].iter().map(|l| line('+', l)));
                }
            }
        }
    }
    if lines.len() > MAX_DIFF_LINES {
        let cut = lines.len() - (MAX_DIFF_LINES - 1);
        lines.truncate(MAX_DIFF_LINES - 1);
        lines.push(format!("[… {cut} more diff lines cut …]"));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn line(tag: char, text: &str) -> String {
    let text = text.trim_end_matches('\r');
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => format!("{tag}{}…", &text[..i]),
        None => format!("{tag}{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OOM_A: &str = "epoch 1 step 100 loss 0.52\n\
        [2024-03-21 02:07:08] loading shard 17 on node023\n\
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB\n";
    const OOM_B: &str = "epoch 1 step 2300 loss 0.48\n\
        [2024-03-22 11:00:59] loading shard 3 on node117\n\
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of 79.15 GiB\n";

    #[test]
    fn identical_tails() {
        let d = attempt_diff(OOM_A, OOM_A);
        assert_eq!(d.ratio, 1.0);
        assert!(d.identical && d.same_signature);
        assert_eq!(d.unified, "");
        let empty = attempt_diff("", "");
        assert!(empty.identical && empty.ratio == 1.0);
    }

    #[test]
    fn noise_only_differences_are_the_same_failure() {
        let d = attempt_diff(OOM_A, OOM_B);
        assert_eq!(d.ratio, 1.0, "{d:?}");
        assert!(d.identical && d.same_signature);
        assert_eq!(d.unified, "");
    }

    #[test]
    fn same_error_after_different_output_is_the_same_failure() {
        let longer = format!("downloading weights\nweights ready\nbuilding index\n{OOM_B}");
        let d = attempt_diff(OOM_A, &longer);
        assert!(d.ratio < SAME_FAILURE_RATIO, "{d:?}");
        assert!(d.same_signature && d.identical);
        assert!(d.unified.contains("+downloading weights"), "{}", d.unified);
    }

    #[test]
    fn real_differences_are_not() {
        let progressed = "epoch 1 step 100 loss 0.52\n\
            [2024-03-21 02:07:08] loading shard 17 on node023\n\
            Traceback (most recent call last):\n  File \"/tmp/j/eval.py\", line 9, in evaluate\n\
            ZeroDivisionError: division by zero\n";
        let d = attempt_diff(OOM_A, progressed);
        assert!(!d.identical && !d.same_signature, "{d:?}");
        assert!(d.ratio < SAME_FAILURE_RATIO);
        assert!(d.unified.starts_with("--- attempt N-1\n+++ attempt N\n@@ "), "{}", d.unified);
        assert!(d.unified.contains("-torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"));
        assert!(d.unified.contains("+ZeroDivisionError: division by zero"));
        // Unchanged (after normalization) lines are context, shown as in the latest attempt.
        assert!(d.unified.contains("\n [2024-03-21 02:07:08] loading shard 17 on node023\n"));
    }

    #[test]
    fn diff_is_bounded() {
        let old: String = (0..1000).map(|i| format!("old line {i} alpha\n")).collect();
        let new: String = (0..1000).map(|i| format!("new text {i} beta\n")).collect();
        let d = attempt_diff(&old, &new);
        assert_eq!(d.unified.lines().count(), MAX_DIFF_LINES);
        assert!(d.unified.trim_end().ends_with("more diff lines cut …]"));
        assert!(!d.identical && d.ratio == 0.0);
        let json = serde_json::to_value(&d).unwrap();
        assert!(json["unified"].is_string() && json["identical"] == false);
    }
}
