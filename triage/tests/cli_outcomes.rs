//! `triage outcomes` end to end on a copy of the demo store: `triage run` (the catalog
//! decides) moves the jobs, the test plays the runner (the next attempts complete, fail the
//! same way, fail differently, or do not run; a person resets a failed job), and the report
//! says which is which, per source, catalog entry and category.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::demo_copy;

fn triage(store: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_triage"))
        .arg("--backend")
        .arg(format!("dir:{}", store.display()))
        .args(args)
        .env("TRIAGE_STATE_DIR", state)
        .env("PATH", "/usr/bin:/bin")
        .env("CI", "true")
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL")
        .env_remove("TRIAGE_CATALOG")
        .output()
        .expect("run triage")
}

/// Play the runner: `edit` each job of the store (by id) under the store's lock.
fn runner(store: &Path, edit: impl Fn(i64, &mut Value)) {
    let dir = store.join("workflows/42");
    let _lock = triage::fsutil::FolderLock::acquire(&dir).expect("lock");
    let path = dir.join("workflow.json");
    let mut wf: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
    for j in wf["jobs"].as_array_mut().expect("jobs") {
        let id = j["id"].as_i64().expect("id");
        edit(id, j);
    }
    triage::fsutil::write_atomic(&path, &serde_json::to_vec_pretty(&wf).expect("JSON")).expect("write");
}

/// A finished attempt 2 of `job` with `rc` and `stderr` written to its file.
fn attempt_2(store: &Path, job: &mut Value, rc: i64, stderr: &str, status: &str) {
    let id = job["id"].as_i64().expect("id");
    let file = format!("job_stdio/job_wf42_j{id}_r1_a2.e");
    std::fs::write(store.join("workflows/42").join(&file), stderr).expect("write stderr");
    job["attempts"].as_array_mut().expect("attempts").push(json!({
        "attempt_id": 2, "run_id": 1, "return_code": rc,
        "started_at": "2026-11-21T01:00:00Z", "finished_at": "2026-11-21T01:05:00Z",
        "host": "node009", "stderr": file
    }));
    job["status"] = status.into();
}

#[test]
fn outcomes_tell_retries_that_worked_from_those_that_failed_again_and_fails_that_were_reversed() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let o = triage(&store, &state, &["run", "--workflow", "42", "--agent", "rules"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));

    // Nothing ran again yet.
    let o = triage(&store, &state, &["outcomes", "--workflow", "42", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(before["total"]["retries"], 4, "{before:#}");
    assert_eq!(before["total"]["not_run_yet"], 4);

    let same = std::fs::read_to_string(store.join("workflows/42/job_stdio/job_wf42_j3_r1_a1.e")).expect("stderr");
    runner(&store, |id, j| match id {
        2 => attempt_2(&store, j, 0, "", "completed"),
        3 => {
            let rc = j["attempts"][0]["return_code"].as_i64().expect("rc");
            attempt_2(&store, j, rc, &same, "pending_failed")
        }
        4 => attempt_2(&store, j, 139, "Segmentation fault (core dumped)\n", "pending_failed"),
        // A person reset the failed job 6 (it will run again).
        6 => {
            j["status"] = "ready".into();
            j["attempt_id"] = 2.into();
        }
        _ => {}
    });

    let o = triage(&store, &state, &["outcomes", "--workflow", "42", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let result = |job: i64| {
        r["decisions"]
            .as_array()
            .expect("decisions")
            .iter()
            .find(|d| d["job_id"] == job)
            .map(|d| d["result"].as_str().expect("result").to_string())
            .unwrap_or_else(|| panic!("no decision on job {job}: {r:#}"))
    };
    assert_eq!(result(2), "worked");
    assert_eq!(result(3), "failed_again");
    assert_eq!(result(4), "failed_differently");
    assert_eq!(result(5), "not_run_yet");
    assert_eq!(result(6), "reversed");
    assert_eq!(result(7), "held");
    let rules = &r["by_source"]["rules"];
    assert_eq!(
        (
            rules["retries"].as_u64(),
            rules["worked"].as_u64(),
            rules["failed_again"].as_u64(),
            rules["reversed"].as_u64()
        ),
        (Some(4), Some(1), Some(1), Some(1)),
        "{r:#}"
    );
    let d2 = r["decisions"].as_array().expect("decisions").iter().find(|d| d["job_id"] == 2).expect("job 2");
    assert_eq!(d2["category"], "network", "{d2:#}");
    assert!(d2["catalog_entry"].as_str().is_some_and(|e| !e.is_empty()), "{d2:#}");
    let by_cat = &r["by_category"]["network"];
    assert_eq!(by_cat["worked"], 1, "{r:#}");

    // The table names the same.
    let o = triage(&store, &state, &["outcomes", "--workflow", "42"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("failed_again") && text.contains("reversed") && text.contains("by catalog entry"), "{text}");
}
