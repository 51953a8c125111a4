//! Requests that create a row, whose answer is lost after the server committed them, on a real
//! Torc 1.0 server: triage does not send them again (which would create a second row), even
//! with retries on. The move fails instead, and what the server did commit is accounted for.

mod torc_support;

use std::time::Duration;

use serde_json::Value;
use torc_support::{JobSpec, Lost, Proxy, Ran, events, items, jobs_by_name};
use triage::backend::torc::{TorcBackend, TorcOptions};
use triage::backend::{AuditEvent, Guard, JobBackend, ResourceChange};
use triage::model::{JobStatus, Memory};
use triage::resilience::Backoff;
use triage::resilience::Resilience;

const TRANSIENT: &str = "echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 1";

/// A backend through `url` that retries whatever it may, 4 attempts in all.
fn retrying(url: &str, ran: &Ran) -> TorcBackend {
    let r = Resilience {
        retry_attempts: 4,
        retry_initial_ms: 50,
        retry_multiplier: 1.0,
        retry_max_ms: 50,
        retry_jitter: 0.0,
        ..Resilience::default()
    };
    let opts =
        TorcOptions { output_dir: ran.out.clone(), timeout: Duration::from_secs(30), backoff: Backoff::new(&r, 0) };
    TorcBackend::open(url, opts).expect("open backend")
}

fn posts(log: &[String], path: &str) -> usize {
    log.iter().filter(|r| r.starts_with("POST ") && r.contains(path)).count()
}

fn intents(url: &str, wf: i64) -> Vec<Value> {
    events(url, wf).into_iter().filter(|e| e["category"] == "triage_intent").collect()
}

/// The intent event is committed, a 503 comes back: one intent in Torc, not two.
#[test]
fn an_intent_whose_answer_was_lost_is_not_posted_again() {
    let ran = Ran::new(&[JobSpec::new("t00", TRANSIENT)]);
    let (url, wf) = (ran.server.url(), ran.wf);
    let t = jobs_by_name(&url, wf)["t00"].0;
    let proxy = Proxy::start(ran.server.port);
    proxy.lose_answer("POST", "/torc-service/v1/events", Lost::Status(503));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let moved = rt.block_on(async {
        let b = retrying(&proxy.url(), &ran);
        let guard =
            Guard { status: JobStatus::PendingFailed, attempt_id: 1, run_id: b.workflow(wf).await.unwrap().run_id };
        let audit = AuditEvent::now("test", "retry", Some(t), "lost answer");
        b.retry_job(wf, t, &guard, &ResourceChange::default(), &audit).await
    });
    let log = proxy.take_log();
    assert_eq!(posts(&log, "/events"), 1, "the event was posted once: {log:#?}\n{moved:?}");
    let held = intents(&url, wf);
    assert_eq!(held.len(), 1, "Torc holds the one intent it committed: {held:?}");
    let err = moved.expect_err("the move stops: it cannot know its intent's id");
    assert!(err.to_string().contains("503"), "{err}");
    assert_eq!((held[0]["job_id"].as_i64(), held[0]["attempt_id"].as_i64()), (Some(t), Some(1)));
    assert!(events(&url, wf).iter().all(|e| e["category"] != "triage"), "no audit: nothing moved");
    let job = &jobs_by_name(&url, wf)["t00"];
    assert_eq!((job.1.as_str(), job.2), ("pending_failed", 1), "the job was not touched");
}

/// The job's own resources row is committed, the connection closes before the answer: one
/// such row in Torc, and the job keeps its old row, at the same attempt.
#[test]
fn a_resources_row_whose_answer_was_lost_is_not_posted_again() {
    let ran = Ran::new(&[JobSpec::new("t00", TRANSIENT)]);
    let (url, wf) = (ran.server.url(), ran.wf);
    let (t, _, _, shared_rr) = jobs_by_name(&url, wf)["t00"].clone();
    let proxy = Proxy::start(ran.server.port);
    proxy.lose_answer("POST", "/torc-service/v1/resource_requirements", Lost::Drop);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let moved = rt.block_on(async {
        let b = retrying(&proxy.url(), &ran);
        let guard =
            Guard { status: JobStatus::PendingFailed, attempt_id: 1, run_id: b.workflow(wf).await.unwrap().run_id };
        let change = ResourceChange { memory: Some("2g".parse::<Memory>().unwrap()), runtime: None };
        let audit = AuditEvent::now("test", "retry", Some(t), "lost answer");
        b.retry_job(wf, t, &guard, &change, &audit).await
    });
    let log = proxy.take_log();
    assert_eq!(posts(&log, "/resource_requirements"), 1, "the row was posted once: {log:#?}\n{moved:?}");
    let name = format!("triage_j{t}_a2");
    let rows: Vec<Value> = items(&format!("{url}/resource_requirements?workflow_id={wf}"))
        .into_iter()
        .filter(|r| r["name"] == name)
        .collect();
    assert_eq!(rows.len(), 1, "Torc holds the one row it committed: {rows:?}");
    let err = moved.expect_err("the move stops and is undone");
    let job = &jobs_by_name(&url, wf)["t00"];
    assert_eq!((job.1.as_str(), job.2, job.3), ("pending_failed", 1, shared_rr), "undone: {err}");
    assert!(intents(&url, wf).is_empty(), "the undone move closed its intent");
}
