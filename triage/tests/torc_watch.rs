//! `triage watch` on a real Torc server, with Torc's own runner making the failures: the
//! watcher starts before the workflow runs, triages the failures as they land (the catalog
//! decides; no agent), the retried job runs again under the runner and completes, the job
//! the catalog cannot decide waits in the review plan, and once a person has decided it the
//! workflow is complete and the watch ends by itself (`--until-complete`).

mod support;
mod torc_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::json_lines::JsonLines;
use torc_support::{
    JobSpec, TorcServer, created_workflow, jobs_by_name, stderr, torc_bin, torc_run, triage, triage_cmd, write_spec,
};

fn batches(lines: &[Value]) -> Vec<Value> {
    lines.iter().filter(|l| l["type"] == "batch").map(|l| l["plan"].clone()).collect()
}

/// Each job's outcome over every batch so far, by id (the last one wins).
fn decided(lines: &[Value]) -> std::collections::BTreeMap<i64, String> {
    let mut out = std::collections::BTreeMap::new();
    for plan in batches(lines) {
        for j in plan["jobs"].as_array().into_iter().flatten() {
            out.insert(j["job_id"].as_i64().unwrap_or(-1), j["outcome"].as_str().unwrap_or_default().to_string());
        }
    }
    out
}

#[test]
fn a_watcher_started_before_the_failures_triages_them_as_they_land_under_torcs_runner() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = TorcServer::start(&tmp.path().join("torc.db"));
    let url = server.url();
    let out = tmp.path().join("torc_output");
    let jobs = vec![
        JobSpec::new(
            "flaky",
            r#"if [ -f "$TORC_OUTPUT_DIR/flaky.marker" ]; then echo recovered; else touch "$TORC_OUTPUT_DIR/flaky.marker"; echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 1; fi"#,
        ),
        JobSpec::new("syntax", "python3 -c 'def broken(:'"),
        // Looks transient every time, and is not: the retry fails again the same way.
        JobSpec::new("stubborn", "echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 1"),
        JobSpec::new("unknown", "echo 'frobnicator wobbled: quux level 7' >&2; exit 3"),
        JobSpec::new("ok", "echo fine"),
        JobSpec::new("after_syntax", "echo downstream").after("syntax"),
    ];
    let spec = write_spec(tmp.path(), &jobs);
    let created = Command::new(torc_bin("torc"))
        .arg("create")
        .arg(&spec)
        .env("TORC_API_URL", &url)
        .env_remove("TORC_PASSWORD")
        .output()
        .expect("torc create");
    assert!(created.status.success(), "torc create: {}", String::from_utf8_lossy(&created.stderr));
    let wf = created_workflow(&created);
    let ids = jobs_by_name(&url, wf);
    let id = |name: &str| ids[name].0;

    // The watcher first, then the runner.
    let mut child = triage_cmd(
        tmp.path(),
        &url,
        &out,
        &[
            "watch",
            "--workflow",
            &wf.to_string(),
            "--interval",
            "0.5",
            "--settle",
            "1",
            "--until-complete",
            "--agent",
            "rules",
            "--json",
        ],
        &[("PATH", "/usr/bin:/bin"), ("CI", "true")],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start triage watch");
    let lines = JsonLines::follow(child.stdout.take().expect("stdout"));
    let snapshot = || lines.snapshot();
    let wait = |what: &str, f: &dyn Fn(&[Value]) -> bool| {
        lines.wait_for(what, Duration::from_secs(90), f, String::new);
    };
    wait("the watcher to start", &|l| !l.is_empty());

    torc_run(&url, &wf.to_string(), &out);
    wait("the four failures triaged", &|l| {
        let d = decided(l);
        [id("flaky"), id("syntax"), id("unknown"), id("stubborn")].iter().all(|j| d.contains_key(j))
    });
    let d = decided(&snapshot());
    assert_eq!(d[&id("flaky")], "applied");
    assert_eq!(d[&id("stubborn")], "applied");
    assert_eq!(d[&id("syntax")], "applied");
    assert_eq!(d[&id("unknown")], "needs_review");
    for plan in batches(&snapshot()) {
        for j in plan["jobs"].as_array().into_iter().flatten() {
            assert_ne!(j["job_id"], id("ok"), "a job that succeeded is never in a batch");
        }
    }

    // The retried jobs run again under Torc's runner (unless the first run already took them).
    let ran_again = |name: &str| {
        let (_, status, attempt, _) = jobs_by_name(&url, wf)[name].clone();
        attempt == 2 && (status == "completed" || status == "pending_failed")
    };
    if !(ran_again("flaky") && ran_again("stubborn")) {
        torc_run(&url, &wf.to_string(), &out);
    }
    // The second failure of the retried job: the same signature twice, so a person decides.
    wait("the stubborn job's second failure triaged", &|l| {
        batches(l)
            .iter()
            .flat_map(|p| p["jobs"].as_array().cloned().unwrap_or_default())
            .any(|j| j["job_id"] == id("stubborn") && j["attempt_id"] == 2 && j["outcome"] == "needs_review")
    });
    let now = jobs_by_name(&url, wf);
    assert_eq!((now["flaky"].1.as_str(), now["flaky"].2), ("completed", 2), "{now:?}");
    assert_eq!(now["syntax"].1, "failed");
    assert_eq!(now["after_syntax"].1, "canceled", "the fail canceled its dependent");
    assert_eq!(now["unknown"].1, "pending_failed", "waits for a person");

    // What became of the decisions, read back from Torc's events and results.
    let o = triage(tmp.path(), &url, &out, &["outcomes", "--workflow", &wf.to_string(), "--json"], &[]);
    assert!(o.status.success(), "outcomes: {}", stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).expect("outcomes JSON");
    let result = |job: i64, action: &str| {
        report["decisions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["job_id"] == job && d["action"] == action)
            .map(|d| d["result"].as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|| panic!("no {action} of job {job} in {report:#}"))
    };
    assert_eq!(result(id("flaky"), "retry"), "worked");
    assert_eq!(result(id("stubborn"), "retry"), "failed_again");
    assert_eq!(result(id("syntax"), "fail"), "held");
    assert_eq!(report["by_source"]["rules"]["worked"], 1, "{report:#}");
    assert_eq!(report["by_source"]["rules"]["failed_again"], 1, "{report:#}");

    // A person decides the last one through the review plan; the watch ends by itself.
    let plan = tmp.path().join("state/watch").join(format!("workflow-{wf}-review.json"));
    let mut review = triage_cmd(tmp.path(), &url, &out, &["review", "--plan", &plan.display().to_string()], &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("triage review");
    std::io::Write::write_all(&mut review.stdin.take().expect("stdin"), b"f\nf\n").expect("answer");
    let o = review.wait_with_output().expect("review");
    assert!(o.status.success(), "review: {}", stderr(&o));
    let o = triage(tmp.path(), &url, &out, &["apply", "--plan", &plan.display().to_string()], &[]);
    assert!(o.status.success(), "apply: {}", stderr(&o));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "the watcher did not end on a complete workflow: {:#?}", snapshot());
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(200));
    assert!(snapshot().iter().any(|l| l["event"]["kind"] == "complete"), "a complete event: {:#?}", snapshot());
    assert_eq!(jobs_by_name(&url, wf)["unknown"].1, "failed");
    assert_eq!(jobs_by_name(&url, wf)["stubborn"].1, "failed");
}
