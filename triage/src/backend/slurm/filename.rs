//! Where a batch job's stdout and stderr went: sbatch's `--output`/`--error` filename patterns
//! expanded the way Slurm 22.05's slurmstepd expands them for the batch step.
//!
//! Why: `scontrol show job` reports the expanded paths only while the controller holds the job,
//! and it expands fewer symbols than slurmstepd does (only `%A %a %j %u %x`, no padding, no `%%`,
//! no backslash handling), so for a job it has forgotten, or a pattern with other symbols, the
//! path has to be computed from the pattern. The rules (sbatch(1), "filename pattern", and
//! `fname_create` in Slurm 22.05's `src/slurmd/common/fname.c`):
//!
//! - `%%` is `%`; `%A` the array's job id (the job's own id outside arrays); `%a` the array task
//!   id (outside arrays Slurm prints NO_VAL, `4294967294`); `%j` the job's own id (an array task's
//!   own id: task 3 of array 48 may be job 48 or 50); `%J` the same for the batch step (no
//!   `.step`); `%s` `batch`; `%n` and `%t` 0 (the batch step is node 0, task 0); `%N` the short
//!   host name of the node running the batch script; `%u` the user name; `%x` the job name.
//! - A number between `%` and the letter zero-pads numeric values to that width (at most 10):
//!   `%3a` is `002`. Other letters keep the `%` as is (`%z` stays `%z`); Slurm drops the `%` and
//!   all but the last digit of a width before an unknown letter (`%12z` becomes `2z`).
//! - A backslash anywhere turns every replacement off; the backslashes are removed (`\\` is one
//!   backslash). Slurm 22.05 then appends a relative result to the working directory *without* a
//!   `/` (`out\%j` in `/tmp/sj` is `/tmp/sjout%j`); later releases insert it.
//! - A relative result is relative to the job's working directory (WorkDir).
//! - `none` (any case) is `/dev/null`; a pattern that is only a number `N` other than 0 names the
//!   output of task N only, and the batch step (task 0) writes to `/dev/null`.
//! - Defaults: no `--output` is `slurm-%j.out`, or `slurm-%A_%a.out` for an array task; no
//!   `--error` sends stderr where stdout goes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a pattern may refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternJob<'a> {
    /// The job's own id (for an array task, the task's own id: JobIDRaw, scontrol's JobId).
    pub job_id: u64,
    /// `(array job id, task id)` for an array task.
    pub array: Option<(u64, u32)>,
    /// The job name (`%x`).
    pub name: &'a str,
    /// The user name (`%u`).
    pub user: &'a str,
    /// The host the batch script ran on (`%N`; Slurm uses its short host name, the part before
    /// the first `.`, which on most clusters is the first node of NodeList). `None` leaves `%N`
    /// in the path unexpanded.
    pub first_node: Option<&'a str>,
    /// The job's working directory, which relative results are relative to.
    pub work_dir: &'a Path,
}

/// Slurm's NO_VAL, printed by `%a` for a job that is not an array task.
const NO_VAL: u32 = 0xffff_fffe;

/// The widest zero padding Slurm applies.
const MAX_WIDTH: usize = 10;

/// The path `pattern` (an `--output` or `--error` value) names for `job`'s batch step.
pub fn expand(pattern: &str, job: &PatternJob) -> PathBuf {
    if pattern.eq_ignore_ascii_case("none") || other_task_only(pattern) {
        return PathBuf::from("/dev/null");
    }
    let absolute = pattern.starts_with('/');
    if pattern.contains('\\') {
        let plain = without_backslashes(pattern);
        if absolute {
            return PathBuf::from(plain);
        }
        let mut joined = OsString::from(job.work_dir.as_os_str());
        joined.push(plain);
        return PathBuf::from(joined);
    }
    let expanded = substitute(pattern, job);
    if absolute { PathBuf::from(expanded) } else { job.work_dir.join(expanded) }
}

/// Where stdout goes without `--output`: `slurm-%j.out`, or `slurm-%A_%a.out` for an array task.
pub fn default_output(job: &PatternJob) -> PathBuf {
    expand(if job.array.is_some() { "slurm-%A_%a.out" } else { "slurm-%j.out" }, job)
}

/// Where stdout goes, given the job's `--output` pattern if it had one.
pub fn stdout_path(output: Option<&str>, job: &PatternJob) -> PathBuf {
    output.map_or_else(|| default_output(job), |p| expand(p, job))
}

/// Where stderr goes, given the job's `--error` and `--output` patterns: without `--error`, where
/// stdout goes.
pub fn stderr_path(error: Option<&str>, output: Option<&str>, job: &PatternJob) -> PathBuf {
    stdout_path(error.or(output), job)
}

/// Whether the pattern is a bare task number other than 0 (`--output=3`): only that task's output,
/// so the batch step's goes to `/dev/null`. Mirrors Slurm's `(int) strtoul(...)` on digits.
fn other_task_only(pattern: &str) -> bool {
    if pattern.is_empty() || !pattern.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    // strtoul saturates; the result is then truncated to a C int.
    let task = pattern.parse::<u64>().map_or(-1, |n| n as u32 as i32);
    task > 0
}

/// The pattern with escaping backslashes removed (`\\` is one backslash, a lone `\` vanishes).
fn without_backslashes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
        } else if chars.next_if_eq(&'\\').is_some() {
            out.push('\\');
        }
    }
    out
}

/// Replaces the `%` symbols, following Slurm's scanner byte for byte (all symbols are ASCII, so
/// every index used to slice is a character boundary).
fn substitute(pattern: &str, job: &PatternJob) -> String {
    let b = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 16);
    // `q` is the start of text not yet copied, `p` the scan position.
    let (mut q, mut p) = (0, 0);
    while p < b.len() {
        if b[p] != b'%' {
            p += 1;
            continue;
        }
        if b.get(p + 1) == Some(&b'%') {
            out.push_str(&pattern[q..=p]);
            p += 2;
            q = p;
            continue;
        }
        let percent = p;
        p += 1;
        let mut width = 0;
        if b.get(p).is_some_and(u8::is_ascii_digit) {
            out.push_str(&pattern[q..percent]);
            let digits_start = p;
            while b.get(p).is_some_and(u8::is_ascii_digit) {
                p += 1;
            }
            width = pattern[digits_start..p].parse::<usize>().map_or(MAX_WIDTH, |w| w.min(MAX_WIDTH));
            // Slurm resumes copying at the last digit.
            q = p - 1;
            if p == b.len() {
                break;
            }
        }
        let Some(&letter) = b.get(p) else { break };
        let number = |n: u64| format!("{n:0width$}");
        let value = match letter {
            b'a' => Some(number(job.array.map_or(u64::from(NO_VAL), |(_, task)| u64::from(task)))),
            b'A' => Some(number(job.array.map_or(job.job_id, |(array, _)| array))),
            b'j' | b'J' => Some(number(job.job_id)),
            b'n' | b't' => Some(number(0)),
            b's' => Some("batch".to_string()),
            b'N' => Some(job.first_node.map_or_else(|| pattern[percent..=p].to_string(), short_host)),
            b'u' => Some(job.user.to_string()),
            b'x' => Some(job.name.to_string()),
            _ => None,
        };
        if let Some(value) = value {
            if q < percent {
                out.push_str(&pattern[q..percent]);
            }
            out.push_str(&value);
            p += 1;
            q = p;
        }
    }
    out.push_str(&pattern[q..]);
    out
}

fn short_host(host: &str) -> String {
    host.split('.').next().unwrap_or(host).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(job_id: u64, name: &'static str) -> PatternJob<'static> {
        PatternJob {
            job_id,
            array: None,
            name,
            user: "root",
            first_node: Some("localhost"),
            work_dir: Path::new("/tmp/sj"),
        }
    }

    fn task(job_id: u64, array: u64, task: u32, name: &'static str) -> PatternJob<'static> {
        PatternJob { array: Some((array, task)), ..job(job_id, name) }
    }

    fn path(p: &str) -> PathBuf {
        PathBuf::from(p)
    }

    #[test]
    fn the_captured_examples() {
        // `--error=%x-%j.err` of job 1 named pyfail: scontrol said StdErr=/tmp/sj/pyfail-1.err.
        assert_eq!(expand("%x-%j.err", &job(1, "pyfail")), path("/tmp/sj/pyfail-1.err"));
        // `--error=%x-%A_%a.err` of task 2 of array 16 (its own id 18): arr-16_2.err.
        assert_eq!(expand("%x-%A_%a.err", &task(18, 16, 2, "arr")), path("/tmp/sj/arr-16_2.err"));
        // `--output=arrj-%j.out` on array 48 made arrj-48.out, arrj-49.out, arrj-50.out; 48 = task 3.
        assert_eq!(expand("arrj-%j.out", &task(48, 48, 3, "arrj")), path("/tmp/sj/arrj-48.out"));
        assert_eq!(expand("arrj-%j.out", &task(49, 48, 1, "arrj")), path("/tmp/sj/arrj-49.out"));
        // `--output=canc-%j.out`, no --error: StdErr=StdOut=/tmp/sj/canc-6.out.
        let canc = job(6, "canc");
        assert_eq!(stderr_path(None, Some("canc-%j.out"), &canc), path("/tmp/sj/canc-6.out"));
        assert_eq!(stdout_path(Some("canc-%j.out"), &canc), path("/tmp/sj/canc-6.out"));
    }

    #[test]
    fn defaults() {
        assert_eq!(default_output(&job(20, "depx")), path("/tmp/sj/slurm-20.out"));
        assert_eq!(default_output(&task(18, 16, 2, "arr")), path("/tmp/sj/slurm-16_2.out"));
        assert_eq!(stdout_path(None, &job(20, "depx")), path("/tmp/sj/slurm-20.out"));
        assert_eq!(stderr_path(None, None, &task(18, 16, 2, "arr")), path("/tmp/sj/slurm-16_2.out"));
        assert_eq!(stderr_path(Some("/logs/%j.err"), Some("o.out"), &job(20, "x")), path("/logs/20.err"));
    }

    #[test]
    fn every_symbol() {
        let j = PatternJob { first_node: Some("node07.cluster.example"), user: "alice", ..task(18, 16, 2, "arr") };
        assert_eq!(expand("%A|%a|%j|%J|%s|%n|%t|%N|%u|%x", &j), path("/tmp/sj/16|2|18|18|batch|0|0|node07|alice|arr"));
        let plain = job(7, "x");
        assert_eq!(expand("%A-%a", &plain), path("/tmp/sj/7-4294967294"), "outside arrays");
        let no_node = PatternJob { first_node: None, ..plain };
        assert_eq!(expand("out-%N-%3N.txt", &no_node), path("/tmp/sj/out-%N-%3N.txt"));
    }

    #[test]
    fn percent_percent_and_widths() {
        let j = task(18, 16, 2, "arr");
        assert_eq!(expand("100%%-%j", &j), path("/tmp/sj/100%-18"));
        assert_eq!(expand("%%j", &j), path("/tmp/sj/%j"));
        assert_eq!(expand("%%%j", &j), path("/tmp/sj/%18"));
        assert_eq!(expand("arr-%3a.out", &j), path("/tmp/sj/arr-002.out"));
        assert_eq!(expand("job%4j.out", &j), path("/tmp/sj/job0018.out"));
        assert_eq!(expand("%2t-%5n-%3s-%4x-%3u", &j), path("/tmp/sj/00-00000-batch-arr-root"));
        assert_eq!(expand("%12j", &j), path("/tmp/sj/0000000018"), "at most 10");
        assert_eq!(expand("%99999999999999999999999j", &j), path("/tmp/sj/0000000018"));
    }

    #[test]
    fn what_slurm_leaves_alone() {
        let j = job(5, "x");
        assert_eq!(expand("a%zb", &j), path("/tmp/sj/a%zb"));
        assert_eq!(expand("a%5zb", &j), path("/tmp/sj/a5zb"));
        assert_eq!(expand("a%12zb", &j), path("/tmp/sj/a2zb"));
        assert_eq!(expand("a%3%j", &j), path("/tmp/sj/a35"));
        assert_eq!(expand("x%3", &j), path("/tmp/sj/x3"));
        assert_eq!(expand("trail%", &j), path("/tmp/sj/trail%"));
        assert_eq!(expand("é%jß", &j), path("/tmp/sj/é5ß"));
    }

    #[test]
    fn backslash_turns_replacement_off() {
        let j = job(5, "x");
        assert_eq!(expand(r"/logs/\%x-%j.out", &j), path("/logs/%x-%j.out"));
        assert_eq!(expand(r"/logs/a\\b%j", &j), path(r"/logs/a\b%j"));
        // Slurm 22.05 appends the unexpanded name to WorkDir without a separator.
        assert_eq!(expand(r"out\%j", &j), path("/tmp/sjout%j"));
    }

    #[test]
    fn absolute_relative_none_and_task_numbers() {
        let j = job(5, "x");
        assert_eq!(expand("/var/log/%j.out", &j), path("/var/log/5.out"));
        assert_eq!(expand("logs/%j.out", &j), path("/tmp/sj/logs/5.out"));
        assert_eq!(expand("none", &j), path("/dev/null"));
        assert_eq!(expand("NONE", &j), path("/dev/null"));
        assert_eq!(expand("3", &j), path("/dev/null"), "task 3's output only");
        assert_eq!(expand("0", &j), path("/tmp/sj/0"), "task 0 is the batch step");
        assert_eq!(expand("000", &j), path("/tmp/sj/000"));
    }
}
