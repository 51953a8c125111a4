//! Workflow specs whose jobs fail for real under Torc's runner.

use std::path::{Path, PathBuf};

use serde_json::json;

/// One job of a spec.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub name: String,
    pub command: String,
    pub depends_on: Vec<String>,
}

impl JobSpec {
    pub fn new(name: &str, command: &str) -> JobSpec {
        JobSpec { name: name.into(), command: command.into(), depends_on: vec![] }
    }

    pub fn after(mut self, upstream: &str) -> JobSpec {
        self.depends_on.push(upstream.into());
        self
    }
}

/// Seven jobs: a connection reset by the peer (transient; a bare refused connection would be
/// ambiguous to the catalog), SyntaxError, exit 137 (an OOM kill), flaky (fails on attempt 1,
/// succeeds on attempt 2 through a marker file), unknown, success, and one downstream of the
/// SyntaxError job.
pub fn e2e_jobs() -> Vec<JobSpec> {
    vec![
        JobSpec::new("conn_reset", r#"python3 -c "raise ConnectionResetError(104, 'Connection reset by peer')""#),
        JobSpec::new("syntax", "python3 -c 'def broken(:'"),
        // An OOM kill as the job's stderr shows one: the kernel's line, then SIGKILL (exit 137).
        // A bare SIGKILL gives no reason and stays unknown (issue 12).
        JobSpec::new("killed", "sh -c 'echo \"Out of memory: Killed process $$ (sh)\" >&2; kill -9 $$'; exit $?"),
        JobSpec::new(
            "flaky",
            r#"if [ -f "$TORC_OUTPUT_DIR/flaky.marker" ]; then echo recovered on attempt $TORC_ATTEMPT_ID; else touch "$TORC_OUTPUT_DIR/flaky.marker"; echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 1; fi"#,
        ),
        JobSpec::new("unknown", "echo 'frobnicator wobbled: quux level 7' >&2; exit 3"),
        JobSpec::new("ok", "echo fine"),
        JobSpec::new("after_syntax", "echo downstream").after("syntax"),
    ]
}

/// Write the spec (JSON; `use_pending_failed: true`, a runner that exits 1 s after it runs
/// out of jobs instead of Torc's 90 s) and return its path.
pub fn write_spec(dir: &Path, jobs: &[JobSpec]) -> PathBuf {
    let jobs: Vec<_> = jobs
        .iter()
        .map(|j| {
            let mut v = json!({"name": j.name, "command": j.command});
            if !j.depends_on.is_empty() {
                v["depends_on"] = json!(j.depends_on);
            }
            v
        })
        .collect();
    let spec = json!({
        "name": "triage_e2e",
        "use_pending_failed": true,
        "compute_node_wait_for_new_jobs_seconds": 1,
        "jobs": jobs,
    });
    let path = dir.join("spec.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&spec).expect("json")).expect("write spec");
    path
}
