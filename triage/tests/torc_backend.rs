//! The Torc backend against a real Torc 1.0 server, with jobs that really failed under Torc's
//! own job runner (`torc run`), checked through Torc's REST API. No mocks.
//!
//! Needs Torc 1.0's binaries (see `torc_support`: `TORC_BIN_DIR`, else
//! `~/.cache/triage/torc-1.0.0/bin`); the races and the crash tests are in `torc_races.rs`.

mod torc_support;

use std::process::Command;

use serde_json::Value;
use torc_support::{
    Proxy, Ran, TorcServer, e2e_jobs, events, eventually, free_port, get, jobs_by_name, json, results_of, stderr,
    stdout, torc_bin, torc_run, triage,
};

#[test]
fn rules_run_moves_jobs_through_torc_and_torc_runs_the_retries() {
    let ran = Ran::new(&e2e_jobs());
    let (url, wf, out, dir) = (ran.server.url(), ran.wf, ran.out.clone(), ran.tmp.path());
    let before = jobs_by_name(&url, wf);
    for name in ["conn_reset", "syntax", "killed", "flaky", "unknown"] {
        assert_eq!(before[name].1, "pending_failed", "{name} after torc run: {before:?}");
    }
    assert_eq!(before["ok"].1, "completed");
    assert_eq!(before["after_syntax"].1, "blocked");
    let default_rr = before["killed"].3;

    let o = triage(dir, &url, &out, &["run", "--agent", "rules", "--workflow", &wf.to_string(), "--json"], &[]);
    assert_eq!(o.status.code(), Some(2), "the unknown one needs a person:\n{}", stderr(&o));
    let plan = json(&o);
    let outcome = |id: i64| {
        plan["jobs"].as_array().and_then(|js| js.iter().find(|j| j["job_id"] == id)).map(|j| j["outcome"].clone())
    };
    for name in ["conn_reset", "syntax", "killed", "flaky"] {
        assert_eq!(outcome(before[name].0), Some(Value::from("applied")), "{name}: {plan}");
    }
    assert_eq!(outcome(before["unknown"].0), Some(Value::from("needs_review")));

    // Through Torc's API: the transient ones ready at attempt 2, the permanent one failed and
    // its downstream job canceled, the unknown one untouched.
    let after = jobs_by_name(&url, wf);
    for name in ["conn_reset", "killed", "flaky"] {
        assert_eq!((after[name].1.as_str(), after[name].2), ("ready", 2), "{name}: {after:?}");
    }
    assert_eq!((after["syntax"].1.as_str(), after["syntax"].2), ("failed", 1));
    assert_eq!((after["unknown"].1.as_str(), after["unknown"].2), ("pending_failed", 1));
    eventually("after_syntax canceled by Torc's cascade", || jobs_by_name(&url, wf)["after_syntax"].1 == "canceled");
    let failed = results_of(&url, wf, after["syntax"].0);
    assert_eq!(failed.len(), 1, "one result for the failed attempt: {failed:?}");
    assert_eq!((failed[0]["status"].as_str(), failed[0]["return_code"].as_i64()), (Some("failed"), Some(1)));

    // exit 137 asked for more memory: a resources row of its own; the shared one unchanged.
    assert_ne!(after["killed"].3, default_rr, "killed got its own resource requirements row");
    assert_eq!(after["conn_reset"].3, default_rr);
    let own = get(&format!("{url}/resource_requirements/{}", after["killed"].3));
    let shared = get(&format!("{url}/resource_requirements/{default_rr}"));
    assert_eq!((own["memory"].as_str(), shared["memory"].as_str()), (Some("2m"), Some("1m")), "{own} {shared}");

    // The audit trail is in Torc's events; no intent is left open.
    let evs = events(&url, wf);
    let audits: Vec<_> = evs.iter().filter(|e| e["category"] == "triage").collect();
    assert_eq!(audits.len(), 4, "{audits:?}");
    assert!(audits.iter().all(|e| e["who"].as_str().is_some_and(|w| w.contains("rules")) && e["why"] != ""));
    assert!(!evs.iter().any(|e| e["category"] == "triage_intent"), "open intents: {evs:?}");

    // Torc's runner picks the retries up: the flaky one completes, its attempt-2 files beside
    // attempt 1's.
    torc_run(&url, &wf.to_string(), &out);
    let last = jobs_by_name(&url, wf);
    assert_eq!((last["flaky"].1.as_str(), last["flaky"].2), ("completed", 2), "{last:?}");
    let stdio = |j: i64, a: i64, ext: &str| out.join(format!("job_stdio/job_wf{wf}_j{j}_r1_a{a}.{ext}"));
    let flaky = last["flaky"].0;
    assert!(std::fs::read_to_string(stdio(flaky, 1, "e")).unwrap_or_default().contains("ConnectionResetError"));
    assert!(stdio(flaky, 2, "e").is_file());
    assert!(std::fs::read_to_string(stdio(flaky, 2, "o")).unwrap_or_default().contains("recovered on attempt 2"));
    // The others failed again, at attempt 2, and wait in pending_failed with both attempts.
    assert_eq!((last["conn_reset"].1.as_str(), last["conn_reset"].2), ("pending_failed", 2));
    assert_eq!(results_of(&url, wf, last["conn_reset"].0).len(), 2);

    // Both attempts are visible to triage: the engine sees the repeat (it needs both tails)...
    let args = ["run", "--agent", "rules", "--workflow", &wf.to_string(), "--dry-run", "--json"];
    let again = json(&triage(dir, &url, &out, &args, &[]));
    let conn = again["jobs"].as_array().and_then(|js| js.iter().find(|j| j["job_id"] == last["conn_reset"].0)).cloned();
    let conn = conn.unwrap_or_default();
    assert_eq!(conn["attempt_id"], 2, "{conn}");
    assert!(conn["validation"].to_string().contains("identically"), "the repeat is seen: {conn}");
    // ... and the tail of attempt 1 on request.
    let logs = triage(
        dir,
        &url,
        &out,
        &["logs", "--workflow", &wf.to_string(), "--job", &flaky.to_string(), "--attempt", "1"],
        &[],
    );
    assert!(stdout(&logs).contains("ConnectionResetError"), "{}", stderr(&logs));
}

#[test]
fn listing_is_bulk_and_a_missing_stderr_is_reported_per_job() {
    let ran = Ran::new(&e2e_jobs());
    let proxy = Proxy::start(ran.server.port);
    let (wf, dir) = (ran.wf.to_string(), ran.tmp.path());
    let unknown = jobs_by_name(&ran.server.url(), ran.wf)["unknown"].0;
    std::fs::remove_file(ran.out.join(format!("job_stdio/job_wf{wf}_j{unknown}_r1_a1.e"))).expect("remove stderr");
    let o = triage(
        dir,
        &proxy.url(),
        &ran.out,
        &["run", "--agent", "rules", "--workflow", &wf, "--dry-run", "--json"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let plan = json(&o);
    assert_eq!(plan["jobs"].as_array().map(Vec::len), Some(5), "{plan}");
    let log = proxy.take_log();
    // Workflow, jobs, results, dependencies, resources: a fixed number, not one per job.
    assert!(log.len() <= 8, "{} requests: {log:#?}", log.len());
    assert!(!log.iter().any(|r| r.contains("job_id=")), "per-job requests: {log:#?}");
    assert!(plan["jobs"].as_array().is_some_and(|js| js.iter().any(|j| j["job_id"] == unknown)), "{plan}");
    // Asked for directly, the missing file is an error about that job, naming the fix.
    let args = ["logs", "--workflow", &wf, "--job", &unknown.to_string()];
    let o = triage(dir, &proxy.url(), &ran.out, &args, &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains(&format!("job {unknown} attempt 1 has no stderr log")) && err.contains("--torc-output-dir"),
        "{err}"
    );
    // A URL without Torc's API prefix is named as such.
    let bare = format!("http://127.0.0.1:{}", ran.server.port);
    let o = triage(dir, &bare, &ran.out, &["run", "--agent", "rules", "--workflow", &wf, "--dry-run"], &[]);
    assert!(stderr(&o).contains("must include Torc's API prefix"), "{}", stderr(&o));
}

#[test]
fn bad_urls_dead_servers_and_credentials_get_clear_errors() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, out) = (tmp.path(), tmp.path().join("torc_output"));
    let run = |url: &str, env: &[(&str, &str)]| {
        let o = triage(dir, url, &out, &["run", "--agent", "rules", "--workflow", "1", "--dry-run"], env);
        assert_eq!(o.status.code(), Some(1), "{url}: {}", stderr(&o));
        stderr(&o)
    };
    let off = [("TRIAGE_RESILIENCE", "off")];
    let dead = run(&format!("http://127.0.0.1:{}/torc-service/v1", free_port()), &off);
    assert!(dead.contains("cannot connect") && dead.contains("torc-server running"), "{dead}");

    let htpasswd = dir.join("htpasswd");
    let st = Command::new(torc_bin("torc-htpasswd"))
        .args(["add", "--file"])
        .arg(&htpasswd)
        .args(["--password", "violet-Kestrel-73-orbit", "--cost", "4", "alice"])
        .output()
        .expect("torc-htpasswd");
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let server = TorcServer::start_with(
        &dir.join("auth.db"),
        &["--require-auth", "--auth-file", &htpasswd.display().to_string()],
    );
    let url = server.url();
    let anonymous = run(&url, &off);
    assert!(anonymous.contains("401") && anonymous.contains("TORC_PASSWORD"), "{anonymous}");
    let wrong = run(&url, &[("TORC_USERNAME", "alice"), ("TORC_PASSWORD", "nope")]);
    assert!(wrong.contains("401") && wrong.contains("`alice`"), "{wrong}");
    let right = run(&url, &[("TORC_USERNAME", "alice"), ("TORC_PASSWORD", "violet-Kestrel-73-orbit")]);
    assert!(right.contains("workflow 1 not found"), "logged in, the error is about the workflow: {right}");
}
