//! The real `triage` binary against a Torc URL, and small readers of its output.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::items;

/// The real `triage` binary against `url` (`--backend torc:URL --torc-output-dir OUT`), no
/// inherited TRIAGE_*/TORC_* settings, state kept in `dir`.
pub fn triage(dir: &Path, url: &str, out: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    triage_cmd(dir, url, out, args, env).output().expect("run triage")
}

/// [`triage`] as a command, to spawn.
pub fn triage_cmd(dir: &Path, url: &str, out: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_triage"));
    cmd.args(args)
        .args(["--backend", &format!("torc:{url}"), "--torc-output-dir"])
        .arg(out)
        .current_dir(dir)
        .env("TRIAGE_STATE_DIR", dir.join("state"))
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL")
        .env_remove("TRIAGE_CATALOG")
        .env_remove("TORC_PASSWORD")
        .env_remove("TORC_OUTPUT_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as JSON, or a panic showing both streams.
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", stdout(o), stderr(o)))
}

/// Every result row of one job, all runs.
pub fn results_of(url: &str, wf: i64, job: i64) -> Vec<Value> {
    items(&format!("{url}/results?workflow_id={wf}&job_id={job}&all_runs=true"))
}

/// The `outcome` of each job of a plan, by job id.
pub fn outcomes(plan: &Value) -> std::collections::BTreeMap<i64, String> {
    plan["jobs"]
        .as_array()
        .map(|js| {
            js.iter()
                .map(|j| {
                    (j["job_id"].as_i64().unwrap_or_default(), j["outcome"].as_str().unwrap_or_default().to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}
