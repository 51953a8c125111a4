//! `--on-review CMD`: the command a site runs when jobs start waiting for a person (page
//! someone, post to a chat). Run through `sh -c` in its own process group with a timeout, its
//! output kept beside the watcher's agent runs; it learns what happened from its environment:
//! `TRIAGE_WORKFLOW_ID`, `TRIAGE_REVIEW_JOBS` (comma-separated job ids), `TRIAGE_REVIEW_PLAN`
//! (the review plan to run `triage review --plan` on). What it prints decides nothing.

use std::path::Path;
use std::time::Duration;

use crate::agent::clis::Invocation;
use crate::agent::process::{self, Exit};

/// How long a hook may run before its process group is killed.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Run `cmd` for `jobs` of `workflow_id`, now in `plan`; its output goes to `out_dir`.
/// Returns how it ended, in words for an event, or the signal that interrupted the watcher.
pub async fn run(
    cmd: &str,
    workflow_id: i64,
    jobs: &[i64],
    plan: &Path,
    out_dir: &Path,
) -> Result<String, nix::sys::signal::Signal> {
    let ids: Vec<String> = jobs.iter().map(i64::to_string).collect();
    let inv = Invocation {
        program: "sh".into(),
        args: vec!["-c".into(), cmd.into()],
        env: vec![
            ("TRIAGE_WORKFLOW_ID".into(), workflow_id.to_string()),
            ("TRIAGE_REVIEW_JOBS".into(), ids.join(",")),
            ("TRIAGE_REVIEW_PLAN".into(), plan.display().to_string()),
        ],
        stdin: None,
        cwd: None,
    };
    match process::run(&inv, out_dir, "on-review", HOOK_TIMEOUT).await {
        Ok(f) => match f.exit {
            Exit::Exited(Some(0)) => {
                Ok(format!("--on-review ran for jobs {} ({:.1} s)", ids.join(","), f.elapsed.as_secs_f64()))
            }
            Exit::Exited(code) => Ok(format!(
                "--on-review failed for jobs {} (exit {}); its output is in {}: {}",
                ids.join(","),
                code.map_or("by signal".into(), |c| c.to_string()),
                f.stderr.display(),
                f.stderr_text(300).trim()
            )),
            Exit::TimedOut => Ok(format!("--on-review ran past {} s and was killed", HOOK_TIMEOUT.as_secs())),
            Exit::Interrupted(sig) => Err(sig),
        },
        Err(e) => Ok(format!("--on-review could not start (sh -c {cmd:?}): {e}")),
    }
}
