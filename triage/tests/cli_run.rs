//! `triage run`, `apply` and `review` end to end in rules mode on copies of the demo store,
//! through the real binary: dry run byte-for-byte, apply twice, concurrent applies, a stale
//! plan, a review from piped answers, the GitHub step summary.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::{demo_copy, snapshot, stderr, stdout};

/// `triage` with a private state directory and the store as backend.
fn triage_in(store: &Path, state: &Path, args: &[&str]) -> Output {
    cmd(store, state, args).output().expect("run triage")
}

fn cmd(store: &Path, state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_triage"));
    c.arg("--backend").arg(format!("dir:{}", store.display())).args(args);
    c.env("TRIAGE_STATE_DIR", state)
        .env("PATH", "/usr/bin:/bin") // no agent CLI: auto means rules
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL")
        .env_remove("TRIAGE_CATALOG")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("CI", "true");
    c
}

fn jobs(store: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(store.join("workflows/42/workflow.json")).unwrap();
    let wf: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut by_id = serde_json::Map::new();
    for j in wf["jobs"].as_array().unwrap() {
        by_id.insert(j["id"].to_string(), j.clone());
    }
    serde_json::Value::Object(by_id)
}

fn events(store: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(store.join("workflows/42/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn plan_of(out: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(out), stderr(out)))
}

fn outcome(plan: &serde_json::Value, job: i64) -> String {
    plan["jobs"].as_array().unwrap().iter().find(|j| j["job_id"] == job).unwrap()["outcome"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn dry_run_shows_a_plan_and_changes_nothing() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let before = snapshot(&store);
    let out = triage_in(&store, &state, &["run", "--workflow", "42", "--dry-run", "--json"]);
    assert_eq!(out.status.code(), Some(2), "some jobs need a person: {}", stderr(&out));
    let plan = plan_of(&out);
    for k in ["workflow_id", "dry_run", "agent", "catalog_version", "jobs", "events", "summary"] {
        assert!(plan.get(k).is_some(), "plan lacks {k}");
    }
    assert_eq!(plan["agent"], "rules");
    assert_eq!(plan["dry_run"], true);
    let job = &plan["jobs"][0];
    for k in ["job_id", "proposed", "validation", "outcome"] {
        assert!(job.get(k).is_some(), "job lacks {k}: {job}");
    }
    assert_eq!(job["proposed"]["source"], "rules");
    assert!(plan["events"].as_array().unwrap().iter().any(|e| e["kind"] == "degraded"), "degraded mode is announced");
    assert_eq!(outcome(&plan, 6), "would_apply");
    assert_eq!(outcome(&plan, 10), "needs_review");
    assert_eq!(outcome(&plan, 11), "needs_review");
    assert_eq!(snapshot(&store), before, "a dry run changes nothing, byte for byte");
    assert!(stderr(&out).contains("no agent CLI"), "{}", stderr(&out));
}

#[test]
fn apply_twice_changes_nothing_the_second_time() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let out = triage_in(&store, &state, &["run", "--workflow", "42", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let plan = plan_of(&out);
    assert_eq!(plan["summary"]["applied"], 6, "{}", plan["summary"]);
    let j = jobs(&store);
    assert_eq!((j["5"]["status"].as_str(), j["5"]["attempt_id"].as_u64()), (Some("ready"), Some(2)));
    assert_eq!(j["5"]["resources"]["memory"], "48g", "OOM retried with the policy's growth");
    assert_eq!(j["6"]["status"], "failed");
    assert_eq!(j["12"]["status"], "canceled", "failing 6 cancels 12");
    assert_eq!(j["13"]["status"], "blocked", "13 waits for 3, which is retried");
    assert_eq!(j["10"]["status"], "pending_failed");
    let first = snapshot(&store);
    let n_events = events(&store).len();
    assert_eq!(n_events, 7, "6 moves and 1 cancel");
    let again = triage_in(&store, &state, &["run", "--workflow", "42", "--json"]);
    let plan2 = plan_of(&again);
    assert_eq!(plan2["summary"]["applied"], 0);
    assert_eq!(plan2["summary"]["jobs"], 3, "only the jobs needing a person remain");
    let after: Vec<_> = snapshot(&store).into_iter().filter(|(p, _)| !p.ends_with(".lock")).collect();
    let first: Vec<_> = first.into_iter().filter(|(p, _)| !p.ends_with(".lock")).collect();
    assert_eq!(after, first);
}

#[test]
fn a_plan_applies_once_even_when_applied_twice_or_concurrently() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let plan_path = tmp.path().join("plan.json");
    let out =
        triage_in(&store, &state, &["run", "--workflow", "42", "--dry-run", "--plan-out", plan_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(plan_path.with_extension("md").is_file(), "the Markdown report is written beside the plan");
    let report = std::fs::read_to_string(plan_path.with_extension("md")).unwrap();
    assert!(report.contains("## Job 11") && report.contains("failed identically"), "{report}");
    // Two applies at once.
    let children: Vec<_> = (0..2)
        .map(|_| {
            cmd(&store, &state, &["apply", "--plan", plan_path.to_str().unwrap(), "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let applied: u64 = outs.iter().map(|o| plan_of(o)["summary"]["applied"].as_u64().unwrap()).sum();
    assert_eq!(applied, 6, "each job applied by exactly one of the two");
    let ev = events(&store);
    let mut moved: Vec<i64> =
        ev.iter().filter(|e| e["what"] != "cancel").map(|e| e["job_id"].as_i64().unwrap()).collect();
    moved.sort();
    assert_eq!(moved, vec![2, 3, 4, 5, 6, 7], "each job moved once");
    // And once more: everything skipped, nothing changes.
    let before = snapshot(&store);
    let third = triage_in(&store, &state, &["apply", "--plan", plan_path.to_str().unwrap(), "--json"]);
    let p3 = plan_of(&third);
    assert_eq!(p3["summary"]["applied"], 0);
    assert_eq!(p3["summary"]["skipped"], 6);
    assert_eq!(third.status.code(), Some(2), "the three unreviewed jobs still need a person");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn a_stale_plan_skips_jobs_that_moved_on() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let plan_path = tmp.path().join("plan.json");
    triage_in(&store, &state, &["run", "--workflow", "42", "--dry-run", "--plan-out", plan_path.to_str().unwrap()]);
    // Someone else retries job 2 meanwhile (a run that applies).
    let wf = store.join("workflows/42/workflow.json");
    let text = std::fs::read_to_string(&wf).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for j in v["jobs"].as_array_mut().unwrap() {
        if j["id"] == 2 {
            j["status"] = "ready".into();
            j["attempt_id"] = 2.into();
        }
    }
    std::fs::write(&wf, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = triage_in(&store, &state, &["apply", "--plan", plan_path.to_str().unwrap(), "--json"]);
    let plan = plan_of(&out);
    assert_eq!(outcome(&plan, 2), "skipped");
    let j2 = plan["jobs"].as_array().unwrap().iter().find(|j| j["job_id"] == 2).unwrap();
    assert!(j2["notes"][0].as_str().unwrap().contains("moved on"), "{j2}");
    assert_eq!(outcome(&plan, 6), "applied");
    assert_eq!(jobs(&store)["2"]["attempt_id"], 2, "not moved twice");
}

#[test]
fn review_from_piped_answers_then_apply() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let plan_path = tmp.path().join("plan.json");
    triage_in(&store, &state, &["run", "--workflow", "42", "--dry-run", "--plan-out", plan_path.to_str().unwrap()]);
    let reviewed = tmp.path().join("reviewed.json");
    let mut child = cmd(
        &store,
        &state,
        &["review", "--plan", plan_path.to_str().unwrap(), "--out", reviewed.to_str().unwrap(), "--reviewer", "ana"],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Jobs needing review, in order: 9 (missing input), 10 (unknown), 11 (identical twice).
    child.stdin.take().unwrap().write_all(b"f\nbanana\nr\ns\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("`banana` is not an answer"), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&reviewed).unwrap()).unwrap();
    let j = |id: i64| plan["jobs"].as_array().unwrap().iter().find(|j| j["job_id"] == id).unwrap().clone();
    assert_eq!((j(9)["proposed"]["action"].as_str(), j(9)["proposed"]["source"].as_str()), (Some("fail"), Some("ana")));
    assert_eq!(j(9)["proposed"]["authority"], "review");
    assert_eq!(j(10)["proposed"]["action"], "retry");
    assert_eq!(j(11)["outcome"], "needs_review", "skipped stays for later");
    let out = triage_in(&store, &state, &["apply", "--plan", reviewed.to_str().unwrap(), "--json"]);
    let applied = plan_of(&out);
    assert_eq!(outcome(&applied, 9), "applied");
    assert_eq!(outcome(&applied, 10), "applied");
    let js = jobs(&store);
    assert_eq!(js["9"]["status"], "failed");
    assert_eq!((js["10"]["status"].as_str(), js["10"]["attempt_id"].as_u64()), (Some("ready"), Some(2)));
    assert_eq!(js["11"]["status"], "pending_failed");
    let ev = events(&store);
    let e10 = ev.iter().find(|e| e["job_id"] == 10).unwrap();
    assert!(e10["why"].as_str().unwrap().contains("ana decided retry"), "{e10}");
    assert_eq!(e10["details"]["authority"], "review", "{e10}");
}

#[test]
fn the_word_review_in_a_plan_confers_nothing() {
    // A plan whose waiting entries were edited to say `source: review` (the old marker of a
    // person's decision) without going through `triage review`: apply leaves them alone.
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let plan_path = tmp.path().join("plan.json");
    triage_in(&store, &state, &["run", "--workflow", "42", "--dry-run", "--plan-out", plan_path.to_str().unwrap()]);
    let mut plan: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let mut forged = 0;
    for j in plan["jobs"].as_array_mut().unwrap() {
        if j["outcome"] == "needs_review" {
            j["proposed"] = serde_json::json!({"action": "retry", "reason": "a person said so", "source": "review"});
            forged += 1;
        }
    }
    assert!(forged >= 3, "{plan}");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let before = jobs(&store);
    let out = triage_in(&store, &state, &["apply", "--plan", plan_path.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let after = jobs(&store);
    for id in ["9", "10", "11"] {
        assert_eq!(after[id], before[id], "job {id} was moved by a plan that only claimed a review");
    }
}

#[test]
fn github_step_summary_gets_the_table() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let summary: PathBuf = tmp.path().join("summary.md");
    let out = cmd(&store, &state, &["run", "--workflow", "42", "--dry-run"])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.contains("# Triage of workflow 42") && text.contains("| 6 | postprocess | fail | rules |"), "{text}");
}

#[test]
fn a_policy_changes_the_verdicts() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let policy = tmp.path().join("policy.toml");
    std::fs::write(&policy, "no_retry_on_exit_codes = [134]\nmemory_cap = \"32g\"\n").unwrap();
    let out = triage_in(
        &store,
        &state,
        &["run", "--workflow", "42", "--dry-run", "--json", "--policy", policy.to_str().unwrap()],
    );
    let plan = plan_of(&out);
    let j = |id: i64| plan["jobs"].as_array().unwrap().iter().find(|j| j["job_id"] == id).unwrap().clone();
    assert_eq!(j(3)["validation"]["status"], "rejected", "exit 134 is denied: {}", j(3));
    assert_eq!(j(5)["validation"]["status"], "rejected", "32g is the cap: no room to grow: {}", j(5));
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "max_retrys = 3\n").unwrap();
    let out = triage_in(&store, &state, &["run", "--workflow", "42", "--dry-run", "--policy", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad.toml") && stderr(&out).contains("max_retrys"), "{}", stderr(&out));
}
