//! Two movers at once, and a server killed in the middle of a move, on a real Torc 1.0 server:
//! every job is moved at most once, and an interrupted move is undone, never left `running`.
//!
//! "Moved once" is read from Torc itself: its retry endpoint writes one `job_retried` event per
//! accepted retry, a failed job has exactly one (failed) result row, and triage's own audit
//! events (`category: triage`) count one per move.

mod torc_support;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use torc_support::{
    Hook, JobSpec, Proxy, Ran, TorcServer, e2e_jobs, events, eventually, jobs_by_name, json, outcomes, results_of,
    stderr, triage, triage_cmd,
};
use triage::backend::torc::{TorcBackend, TorcOptions};
use triage::backend::{AuditEvent, Guard, JobBackend, MoveOutcome, ResourceChange};
use triage::model::JobStatus;

const TRANSIENT: &str = "echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 1";
const PERMANENT: &str = "python3 -c 'def broken(:'";

/// `n` transient and `m` permanent failures.
fn many(n: usize, m: usize) -> Vec<JobSpec> {
    let mut jobs: Vec<JobSpec> = (0..n).map(|i| JobSpec::new(&format!("t{i:02}"), TRANSIENT)).collect();
    jobs.extend((0..m).map(|i| JobSpec::new(&format!("p{i:02}"), PERMANENT)));
    jobs
}

/// Per job id: accepted retries (Torc's `job_retried` events) and triage audit records by action.
fn moves(url: &str, wf: i64) -> (BTreeMap<i64, usize>, BTreeMap<(i64, String), usize>) {
    let mut retried = BTreeMap::new();
    let mut audited = BTreeMap::new();
    for e in events(url, wf) {
        if e["event_type"] == "job_retried" {
            *retried.entry(e["job_id"].as_i64().unwrap_or_default()).or_default() += 1;
        }
        if e["category"] == "triage" {
            let key = (e["job_id"].as_i64().unwrap_or_default(), e["action"].as_str().unwrap_or_default().to_string());
            *audited.entry(key).or_default() += 1;
        }
    }
    (retried, audited)
}

fn open_intents(url: &str, wf: i64) -> Vec<Value> {
    events(url, wf).into_iter().filter(|e| e["category"] == "triage_intent").collect()
}

/// Each transient job ready at attempt 2, retried once; each permanent one failed with one
/// failed result; one audit record per job; no intent left.
fn assert_each_moved_once(url: &str, wf: i64, transient: &[&str], permanent: &[&str]) {
    let jobs = jobs_by_name(url, wf);
    let (retried, audited) = moves(url, wf);
    for name in transient {
        let (id, status, attempt, _) = &jobs[*name];
        assert_eq!((status.as_str(), *attempt), ("ready", 2), "{name}: {jobs:?}");
        assert_eq!(retried.get(id), Some(&1), "{name} retried once: {retried:?}");
        assert_eq!(audited.get(&(*id, "retry".to_string())), Some(&1), "{name}: {audited:?}");
    }
    for name in permanent {
        let (id, status, attempt, _) = &jobs[*name];
        assert_eq!((status.as_str(), *attempt), ("failed", 1), "{name}: {jobs:?}");
        assert_eq!(retried.get(id), None, "{name} never retried");
        let rs = results_of(url, wf, *id);
        assert_eq!(rs.len(), 1, "{name}: one result row: {rs:?}");
        assert_eq!(rs[0]["status"], "failed");
        assert_eq!(audited.get(&(*id, "fail".to_string())), Some(&1), "{name}: {audited:?}");
    }
    assert!(open_intents(url, wf).is_empty(), "open intents: {:?}", open_intents(url, wf));
}

#[test]
fn the_retry_endpoint_and_the_result_delete_let_one_racer_through() {
    let ran = Ran::new(&many(8, 4));
    let (url, wf) = (ran.server.url(), ran.wf);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().expect("runtime");
    let outcomes: Vec<(i64, bool, Vec<MoveOutcome>)> = rt.block_on(async {
        let open = || {
            let opts =
                TorcOptions { output_dir: ran.out.clone(), timeout: Duration::from_secs(30), ..TorcOptions::default() };
            std::sync::Arc::new(TorcBackend::open(&url, opts).expect("open backend"))
        };
        let (a, b) = (open(), open());
        let info = a.workflow(wf).await.expect("workflow");
        let pending = a.all_jobs(wf, Some(JobStatus::PendingFailed)).await.expect("list");
        assert_eq!(pending.len(), 12);
        let mut tasks = tokio::task::JoinSet::new();
        for job in pending {
            let guard = Guard::pending_failed(&job, info.run_id);
            let retry = job.name.starts_with('t');
            for (who, backend) in [("racer a", a.clone()), ("racer b", b.clone())] {
                let audit = AuditEvent::now(who, if retry { "retry" } else { "fail" }, Some(job.id), "race test");
                tasks.spawn(async move {
                    let r = if retry {
                        backend.retry_job(wf, job.id, &guard, &ResourceChange::default(), &audit).await
                    } else {
                        backend.fail_job(wf, job.id, &guard, &audit).await
                    };
                    (job.id, retry, r.unwrap_or_else(|e| panic!("job {}: {e}", job.id)))
                });
            }
        }
        let mut by_job: BTreeMap<i64, (bool, Vec<MoveOutcome>)> = BTreeMap::new();
        while let Some(r) = tasks.join_next().await {
            let (id, retry, outcome) = r.expect("task");
            by_job.entry(id).or_insert((retry, vec![])).1.push(outcome);
        }
        by_job.into_iter().map(|(id, (retry, o))| (id, retry, o)).collect()
    });
    for (id, retry, results) in &outcomes {
        let moved = results.iter().filter(|o| matches!(o, MoveOutcome::Moved { .. })).count();
        let stale = results.iter().filter(|o| matches!(o, MoveOutcome::Stale { .. })).count();
        assert_eq!((moved, stale), (1, 1), "job {id} (retry: {retry}): {results:?}");
    }
    let t: Vec<String> = (0..8).map(|i| format!("t{i:02}")).collect();
    let p: Vec<String> = (0..4).map(|i| format!("p{i:02}")).collect();
    let (t, p): (Vec<&str>, Vec<&str>) =
        (t.iter().map(String::as_str).collect(), p.iter().map(String::as_str).collect());
    assert_each_moved_once(&url, wf, &t, &p);
}

/// The windows the module docs name, made to happen: a rival's whole move runs while one
/// mover is held just before its `running` status change (retry) or its `DELETE` (fail).
#[test]
fn a_rival_move_inside_a_movers_window_is_caught_and_repaired() {
    let ran = Ran::new(&many(1, 1));
    let (url, wf) = (ran.server.url(), ran.wf);
    let proxy = Proxy::start(ran.server.port);
    let jobs = jobs_by_name(&url, wf);
    let (t, p) = (jobs["t00"].0, jobs["p00"].0);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let (late_retry, late_fail) = rt.block_on(async {
        let open = |u: &str| {
            let opts =
                TorcOptions { output_dir: ran.out.clone(), timeout: Duration::from_secs(30), ..TorcOptions::default() };
            std::sync::Arc::new(TorcBackend::open(u, opts).expect("open backend"))
        };
        let (direct, held) = (open(&url), open(&proxy.url()));
        let info = direct.workflow(wf).await.expect("workflow");
        let guard = Guard { status: JobStatus::PendingFailed, attempt_id: 1, run_id: info.run_id };
        let audit = |who: &str, what: &str, job| AuditEvent::now(who, what, Some(job), "window test");

        // retry: the held mover saw pending_failed, the rival retries, then the held mover's
        // `running` lands on the now-ready job; Torc's retry endpoint refuses it (attempt 2 is
        // not below max_retries 2) and the mover puts the job back to ready.
        let gate = proxy.gate("PUT", "/manage_status_change/running/");
        let (h, g, a) = (held.clone(), guard, audit("held", "retry", t));
        let late = tokio::spawn(async move { h.retry_job(wf, t, &g, &ResourceChange::default(), &a).await });
        tokio::task::spawn_blocking({
            let gate = gate.clone();
            move || gate.wait_hit()
        })
        .await
        .expect("gate");
        let first = direct.retry_job(wf, t, &guard, &ResourceChange::default(), &audit("rival", "retry", t)).await;
        assert!(matches!(first, Ok(MoveOutcome::Moved { attempt_id: 2, .. })), "{first:?}");
        gate.open();
        let late_retry = late.await.expect("task").expect("retry");

        // fail: the held mover's DELETE comes after the rival's whole fail: 404, stale.
        let gate = proxy.gate("DELETE", "/results/");
        let (h, g, a) = (held.clone(), guard, audit("held", "fail", p));
        let late = tokio::spawn(async move { h.fail_job(wf, p, &g, &a).await });
        tokio::task::spawn_blocking({
            let gate = gate.clone();
            move || gate.wait_hit()
        })
        .await
        .expect("gate");
        let first = direct.fail_job(wf, p, &guard, &audit("rival", "fail", p)).await;
        assert!(matches!(first, Ok(MoveOutcome::Moved { .. })), "{first:?}");
        gate.open();
        let late_fail = late.await.expect("task").expect("fail");
        (late_retry, late_fail)
    });
    assert!(matches!(late_retry, MoveOutcome::Stale { status: JobStatus::Ready, attempt_id: 2, .. }), "{late_retry:?}");
    assert!(matches!(late_fail, MoveOutcome::Stale { status: JobStatus::Failed, .. }), "{late_fail:?}");
    assert!(
        proxy.take_log().iter().any(|r| r.starts_with("PUT") && r.contains("/manage_status_change/ready/")),
        "the repair ran"
    );
    assert_each_moved_once(&url, wf, &["t00"], &["p00"]);
}

#[test]
fn two_triage_applies_at_once_move_each_job_once() {
    let ran = Ran::new(&many(10, 4));
    let (url, wf, dir) = (ran.server.url(), ran.wf.to_string(), ran.tmp.path());
    let plan = dir.join("plan.json");
    let args = ["run", "--agent", "rules", "--workflow", &wf, "--dry-run", "--plan-out", &plan.display().to_string()];
    let o = triage(dir, &url, &ran.out, &args, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let apply = ["apply", "--plan", &plan.display().to_string(), "--json"];
    let a = triage_cmd(dir, &url, &ran.out, &apply, &[]).stdout(std::process::Stdio::piped()).spawn().expect("a");
    let b = triage_cmd(dir, &url, &ran.out, &apply, &[]).stdout(std::process::Stdio::piped()).spawn().expect("b");
    let (a, b) = (a.wait_with_output().expect("a"), b.wait_with_output().expect("b"));
    let (oa, ob) = (outcomes(&json(&a)), outcomes(&json(&b)));
    assert_eq!(oa.len(), 14);
    for (id, x) in &oa {
        let y = &ob[id];
        let mut pair = [x.as_str(), y.as_str()];
        pair.sort();
        assert_eq!(pair, ["applied", "skipped"], "job {id}: one apply moves it, the other finds it moved");
    }
    let t: Vec<String> = (0..10).map(|i| format!("t{i:02}")).collect();
    let p: Vec<String> = (0..4).map(|i| format!("p{i:02}")).collect();
    let (t, p): (Vec<&str>, Vec<&str>) =
        (t.iter().map(String::as_str).collect(), p.iter().map(String::as_str).collect());
    assert_each_moved_once(&url, wf.parse().expect("id"), &t, &p);
}

#[test]
fn killing_the_server_mid_apply_leaves_no_job_running_and_none_moved_twice() {
    let mut ran = Ran::new(&e2e_jobs());
    let (wf, dir, out) = (ran.wf, ran.tmp.path().to_path_buf(), ran.out.clone());
    let db = ran.server.db.clone();
    let proxy = Proxy::start(ran.server.port);
    let plan = dir.join("plan.json").display().to_string();
    let o = triage(
        &dir,
        &proxy.url(),
        &out,
        &["run", "--agent", "rules", "--workflow", &wf.to_string(), "--dry-run", "--plan-out", &plan],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let ids = jobs_by_name(&ran.server.url(), wf);
    let (conn, syntax) = (ids["conn_reset"].0, ids["syntax"].0);
    let quick = [("TRIAGE_RESILIENCE", "off")];

    // 1. The server dies right after it set the first retried job to `running`.
    proxy.kill_after(Hook {
        method: "PUT".into(),
        path_contains: "/manage_status_change/running/".into(),
        pid: ran.server.pid(),
    });
    let o = triage(&dir, &proxy.url(), &out, &["apply", "--plan", &plan], &quick);
    assert!(proxy.is_down(), "the hook fired");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    ran.server.kill();
    let s2 = TorcServer::start(&db);
    let url2 = s2.url();
    let jobs = jobs_by_name(&url2, wf);
    assert_eq!((jobs["conn_reset"].1.as_str(), jobs["conn_reset"].2), ("running", 1), "left mid-move: {jobs:?}");
    assert_eq!(open_intents(&url2, wf).len(), 1);

    // 2. Restarted: the next apply undoes that move, then redoes it; the server dies again
    //    right after the fail's DELETE of the SyntaxError job's result.
    proxy.repoint(s2.port);
    proxy.kill_after(Hook { method: "DELETE".into(), path_contains: "/results/".into(), pid: s2.pid() });
    let o = triage(&dir, &proxy.url(), &out, &["apply", "--plan", &plan], &quick);
    assert!(stderr(&o).contains("[repaired]"), "the undo is reported: {}", stderr(&o));
    drop(s2);
    let s3 = TorcServer::start(&db);
    let url3 = s3.url();
    proxy.repoint(s3.port);
    let jobs = jobs_by_name(&url3, wf);
    assert_eq!((jobs["conn_reset"].1.as_str(), jobs["conn_reset"].2), ("ready", 2), "{jobs:?}");
    assert_eq!(jobs["syntax"].1, "pending_failed");
    assert!(results_of(&url3, wf, syntax).is_empty(), "its result row was deleted before the crash");

    // 3. A second run undoes the interrupted fail and applies the rest once.
    let o =
        triage(&dir, &proxy.url(), &out, &["run", "--agent", "rules", "--workflow", &wf.to_string(), "--json"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let run = json(&o);
    assert!(run["events"].as_array().unwrap().iter().any(|e| e["kind"] == "repaired"), "{}", run["events"]);
    let got = outcomes(&run);
    assert_eq!(got.get(&conn), None, "conn_reset was already moved: not in this run");
    assert_eq!(got.get(&syntax).map(String::as_str), Some("applied"));
    assert_each_moved_once(&url3, wf, &["conn_reset", "killed", "flaky"], &["syntax"]);
    let (_, audited) = moves(&url3, wf);
    assert_eq!(audited.get(&(conn, "recover".to_string())), Some(&1));
    assert_eq!(audited.get(&(syntax, "recover".to_string())), Some(&1));
    let restored = results_of(&url3, wf, syntax);
    assert_eq!(restored[0]["return_code"], 1, "the failed result keeps the attempt's fields: {restored:?}");
    eventually("after_syntax canceled", || jobs_by_name(&url3, wf)["after_syntax"].1 == "canceled");
    assert_eq!(jobs_by_name(&url3, wf)["unknown"].1, "pending_failed");
}

#[test]
fn an_interrupted_retry_with_more_memory_gets_its_resources_back_then_moves_once() {
    let mut ran = Ran::new(&e2e_jobs());
    let (wf, dir, out) = (ran.wf, ran.tmp.path().to_path_buf(), ran.out.clone());
    let proxy = Proxy::start(ran.server.port);
    let plan = dir.join("plan.json").display().to_string();
    let args = ["run", "--agent", "rules", "--workflow", &wf.to_string(), "--dry-run", "--plan-out", &plan];
    assert_eq!(triage(&dir, &proxy.url(), &out, &args, &[]).status.code(), Some(2));
    let before = jobs_by_name(&ran.server.url(), wf);
    let (killed, shared_rr) = (before["killed"].0, before["killed"].3);

    // The server dies right after the job was pointed at its own, bigger resources row.
    let path = format!("/torc-service/v1/jobs/{killed}");
    proxy.kill_after(Hook { method: "PUT".into(), path_contains: path, pid: ran.server.pid() });
    let o = triage(&dir, &proxy.url(), &out, &["apply", "--plan", &plan], &[("TRIAGE_RESILIENCE", "off")]);
    assert!(proxy.is_down() && o.status.code() == Some(1), "{}", stderr(&o));
    ran.server.kill();
    let server = TorcServer::start(&ran.server.db);
    proxy.repoint(server.port);
    let url = server.url();
    let mid = jobs_by_name(&url, wf);
    assert_eq!((mid["killed"].1.as_str(), mid["killed"].2), ("pending_failed", 1));
    assert_ne!(mid["killed"].3, shared_rr, "interrupted after it got its own row");

    let o =
        triage(&dir, &proxy.url(), &out, &["run", "--agent", "rules", "--workflow", &wf.to_string(), "--json"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(json(&o)["events"].as_array().unwrap().iter().any(|e| e["kind"] == "repaired"));
    assert_each_moved_once(&url, wf, &["conn_reset", "killed", "flaky"], &["syntax"]);
    let after = jobs_by_name(&url, wf);
    let own = torc_support::get(&format!("{url}/resource_requirements/{}", after["killed"].3));
    let shared = torc_support::get(&format!("{url}/resource_requirements/{shared_rr}"));
    assert_eq!((own["memory"].as_str(), shared["memory"].as_str()), (Some("2m"), Some("1m")), "{own} {shared}");
    assert!(after.values().all(|j| j.3 == shared_rr || j.0 == killed), "no other job touched: {after:?}");
    let recovered: Vec<Value> =
        events(&url, wf).into_iter().filter(|e| e["action"] == "recover" && e["job_id"] == killed).collect();
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(recovered[0]["details"]["resolution"], "rolled_back", "{recovered:?}");
}
