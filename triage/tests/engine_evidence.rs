//! The engine's evidence over a real directory store: upstream statuses, budgets by cause,
//! and the evidence cache (fresh job fields, a new attempt is read anew).

mod support;

use std::sync::Arc;

use triage::backend::dir::DirBackend;
use triage::backend::{AuditEvent, Guard, JobBackend};
use triage::catalog::Catalog;
use triage::engine::{Cause, Engine, Policy};
use triage::model::{JobStatus, Verdict};

fn engine(store: &std::path::Path) -> Engine {
    Engine::new(Arc::new(DirBackend::open(store).unwrap()), Arc::new(Catalog::builtin()), Policy::default())
}

#[tokio::test]
async fn evidence_knows_upstream_causes_and_repeats() {
    let (_tmp, store) = support::demo_copy();
    let (_, ev) = engine(&store).pending(42).await.unwrap();
    let by = |id: i64| ev.iter().find(|e| e.job.id == id).unwrap();
    assert_eq!(by(9).upstream.len(), 1);
    assert_eq!(by(9).upstream[0].status, JobStatus::Completed);
    assert_eq!(by(4).cause, Cause::Infrastructure, "a preemption is charged to the preemption budget");
    assert_eq!(by(4).retries_used.preemptions, 1);
    assert_eq!(by(2).cause, Cause::Failure);
    assert!(by(11).failed_identically_twice());
    assert_eq!(by(11).retries_used.failures, 2);
    assert_eq!(by(6).hints.verdict, Verdict::Permanent);
}

#[tokio::test]
async fn cached_evidence_follows_the_job() {
    let (_tmp, store) = support::demo_copy();
    let engine = engine(&store);
    let (info, first) = engine.pending(42).await.unwrap();
    let before = first.iter().find(|e| e.job.id == 2).unwrap().clone();
    // The job moves on outside this engine: the cached parts must not hide it.
    let other = DirBackend::open(&store).unwrap();
    let job = other.job(42, 2).await.unwrap();
    other
        .retry_job(
            42,
            2,
            &Guard::pending_failed(&job, 1),
            &Default::default(),
            &AuditEvent::now("t", "retry", Some(2), "x"),
        )
        .await
        .unwrap();
    let now = engine.backend.job(42, 2).await.unwrap();
    let ev = engine.evidence(&info, now).await.unwrap();
    assert_eq!((ev.job.status, ev.job.attempt_id), (JobStatus::Ready, 2), "fresh job fields");
    assert_eq!(ev.tail, before.tail, "attempt 2 has not run: the latest finished attempt is still 1");
    // The same attempt again comes back identical.
    let again = engine.evidence(&info, engine.backend.job(42, 6).await.unwrap()).await.unwrap();
    let first6 = first.iter().find(|e| e.job.id == 6).unwrap();
    assert_eq!((again.signature.clone(), again.tail.clone()), (first6.signature.clone(), first6.tail.clone()));
}

#[tokio::test]
async fn a_signal_is_the_exit_status_for_the_catalog_and_the_exit_code_lists_alike() {
    // Job 5 was killed by signal 9; a runtime that reports it as -9 must not slip past a
    // policy that refuses to retry 137 (the catalog reads 128 + 9 too).
    let (_tmp, store) = support::demo_copy();
    let path = store.join("workflows/42/workflow.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut wf: serde_json::Value = serde_json::from_str(&text).unwrap();
    let job5 = wf["jobs"].as_array_mut().unwrap().iter_mut().find(|j| j["id"] == 5).unwrap();
    let attempt = job5["attempts"].as_array_mut().unwrap().last_mut().unwrap();
    attempt["return_code"] = (-9).into();
    assert_eq!(attempt["signal"], 9);
    std::fs::write(&path, wf.to_string()).unwrap();

    let mut engine = engine(&store);
    engine.policy.no_retry_on_exit_codes = vec![137];
    let (_, ev) = engine.pending(42).await.unwrap();
    let ev5 = ev.iter().find(|e| e.job.id == 5).unwrap();
    assert_eq!(ev5.return_code, Some(137));
    let c: triage::model::Classification =
        serde_json::from_str(r#"{"job_id": 5, "action": "retry", "reason": "oom", "memory": "64g"}"#).unwrap();
    let v = triage::engine::validate(ev5, &triage::engine::Proposal::by_agent("a", &c), &engine.policy);
    assert!(v.messages.iter().any(|m| m.contains("exit code 137 is in the policy's no_retry_on_exit_codes")), "{v:?}");
    assert!(!v.applicable());
}
