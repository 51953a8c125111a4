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
