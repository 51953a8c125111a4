//! The directory store against real files: listing, paging, logs, guarded moves, cascades,
//! concurrency, and every malformed store we could think of.

mod support;

use std::path::Path;

use triage::backend::dir::DirBackend;
use triage::backend::{
    AuditEvent, BackendError, Guard, JobBackend, LogStream, MoveOutcome, PageRequest, ResourceChange,
};
use triage::engine::read_tail;
use triage::logs::TailSize;
use triage::model::{JobStatus, Memory};

fn audit(why: &str) -> AuditEvent {
    AuditEvent::now("test", "move", None, why)
}

fn events(store: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(store.join("workflows/42/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("events.jsonl line is JSON"))
        .collect()
}

#[tokio::test]
async fn lists_pending_failed_jobs_with_paging() {
    let (_tmp, store) = support::demo_copy();
    let b = DirBackend::open(&store).unwrap();
    let all = b.all_jobs(42, Some(JobStatus::PendingFailed)).await.unwrap();
    let ids: Vec<i64> = all.iter().map(|j| j.id).collect();
    assert_eq!(ids, vec![2, 3, 4, 5, 6, 7, 9, 10, 11]);
    let p1 = b.list_jobs(42, Some(JobStatus::PendingFailed), PageRequest { offset: 0, limit: 4 }).await.unwrap();
    assert_eq!((p1.jobs.len(), p1.total, p1.next_offset), (4, 9, Some(4)));
    let p3 = b.list_jobs(42, Some(JobStatus::PendingFailed), PageRequest { offset: 8, limit: 4 }).await.unwrap();
    assert_eq!((p3.jobs.len(), p3.next_offset), (1, None));
    assert_eq!(p3.jobs[0].id, 11);
    let wf = b.workflow(42).await.unwrap();
    assert!(wf.use_pending_failed);
    assert_eq!(wf.run_id, 1);
}

#[tokio::test]
async fn reads_log_tails_by_attempt() {
    let (_tmp, store) = support::demo_copy();
    let b = DirBackend::open(&store).unwrap();
    let t = read_tail(&b, 42, 6, None, LogStream::Stderr, TailSize::Lines(1)).await.unwrap();
    assert_eq!(t.text, "SyntaxError: '{' was never closed\n");
    assert_eq!(t.attempt_id, 1);
    let first = read_tail(&b, 42, 11, Some(1), LogStream::Stderr, TailSize::Lines(50)).await.unwrap();
    let second = read_tail(&b, 42, 11, None, LogStream::Stderr, TailSize::Lines(50)).await.unwrap();
    assert_eq!(second.attempt_id, 2);
    assert!(first.text.contains("02:03:11") && second.text.contains("02:41:57"));
    let err = read_tail(&b, 42, 11, Some(7), LogStream::Stderr, TailSize::Lines(5)).await.unwrap_err();
    assert!(matches!(err, BackendError::AttemptNotFound { .. }), "{err}");
    assert!(err.to_string().contains("recorded attempts: 1, 2"), "{err}");
    let err = read_tail(&b, 42, 999, None, LogStream::Stderr, TailSize::Lines(5)).await.unwrap_err();
    assert!(err.to_string().contains("job 999 not found in workflow 42"), "{err}");
}

#[tokio::test]
async fn retry_moves_once_and_records_why() {
    let (_tmp, store) = support::demo_copy();
    let b = DirBackend::open(&store).unwrap();
    let job = b.job(42, 5).await.unwrap();
    let guard = Guard::pending_failed(&job, 1);
    let change = ResourceChange { memory: Some("48g".parse::<Memory>().unwrap()), runtime: None };
    let out = b.retry_job(42, 5, &guard, &change, &audit("CUDA OOM: more memory")).await.unwrap();
    assert_eq!(out, MoveOutcome::Moved { status: JobStatus::Ready, attempt_id: 2, canceled: vec![] });
    let after = b.job(42, 5).await.unwrap();
    assert_eq!((after.status, after.attempt_id), (JobStatus::Ready, 2));
    assert_eq!(after.resources.memory.unwrap().to_string(), "48g");
    // The same guard again: the job moved on, nothing changes.
    let again = b.retry_job(42, 5, &guard, &change, &audit("again")).await.unwrap();
    assert_eq!(again, MoveOutcome::Stale { status: JobStatus::Ready, attempt_id: 2, run_id: 1 });
    assert_eq!(b.job(42, 5).await.unwrap().attempt_id, 2);
    let ev = events(&store);
    assert_eq!(ev.len(), 1, "one move, one event: {ev:?}");
    assert_eq!(ev[0]["why"], "CUDA OOM: more memory");
    assert_eq!(ev[0]["job_id"], 5);
    assert_eq!(ev[0]["details"]["from"]["resources"]["memory"], "32g");
    assert_eq!(ev[0]["details"]["to"]["resources"]["memory"], "48g");
}

#[tokio::test]
async fn fail_cancels_not_yet_run_dependents() {
    let (_tmp, store) = support::demo_copy();
    let b = DirBackend::open(&store).unwrap();
    let job = b.job(42, 6).await.unwrap();
    let out = b.fail_job(42, 6, &Guard::pending_failed(&job, 1), &audit("SyntaxError")).await.unwrap();
    assert_eq!(out, MoveOutcome::Moved { status: JobStatus::Failed, attempt_id: 1, canceled: vec![12] });
    assert_eq!(b.job(42, 12).await.unwrap().status, JobStatus::Canceled);
    // Untouched: the other pending upstream of 12, and unrelated jobs.
    assert_eq!(b.job(42, 7).await.unwrap().status, JobStatus::PendingFailed);
    assert_eq!(b.job(42, 13).await.unwrap().status, JobStatus::Blocked);
    let ev = events(&store);
    assert_eq!(ev.iter().map(|e| e["what"].as_str().unwrap()).collect::<Vec<_>>(), ["move", "cancel"]);
    assert_eq!(ev[1]["job_id"], 12);
}

#[tokio::test]
async fn racing_movers_move_a_job_exactly_once() {
    let (_tmp, store) = support::demo_copy();
    let job = DirBackend::open(&store).unwrap().job(42, 2).await.unwrap();
    let guard = Guard::pending_failed(&job, 1);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            // Separate handles: separate lock file descriptions, as in separate processes.
            let b = DirBackend::open(&store).unwrap();
            if i % 2 == 0 {
                b.retry_job(42, 2, &guard, &ResourceChange::default(), &audit("race")).await.unwrap()
            } else {
                b.fail_job(42, 2, &guard, &audit("race")).await.unwrap()
            }
        }));
    }
    let mut moved = 0;
    for t in tasks {
        if matches!(t.await.unwrap(), MoveOutcome::Moved { .. }) {
            moved += 1;
        }
    }
    assert_eq!(moved, 1);
    assert_eq!(events(&store).len(), 1);
}

#[tokio::test]
async fn log_paths_that_escape_the_folder_are_refused() {
    let (_tmp, store) = support::demo_copy();
    let wf_path = store.join("workflows/42/workflow.json");
    let text = std::fs::read_to_string(&wf_path).unwrap();
    let outside = store.parent().unwrap().join("secret.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(&outside, store.join("workflows/42/job_stdio/link.e")).unwrap();
    for evil in ["../../../secret.txt", "/etc/passwd", "job_stdio/../../x", "job_stdio/link.e"] {
        let bad = text.replacen("job_stdio/job_wf42_j6_r1_a1.e", evil, 1);
        std::fs::write(&wf_path, bad).unwrap();
        let b = DirBackend::open(&store).unwrap();
        let err = read_tail(&b, 42, 6, None, LogStream::Stderr, TailSize::Lines(5)).await.unwrap_err();
        assert!(matches!(err, BackendError::PathEscapes { .. }), "{evil}: {err}");
        assert!(err.to_string().contains("escapes the workflow folder"), "{err}");
    }
}

/// Each malformed store is refused with the file, the place and the fix; none panics.
#[tokio::test]
async fn malformed_stores_get_errors_naming_file_and_fix() {
    type Mutation<'a> = &'a dyn Fn(&str) -> String;
    let cases: &[(&str, Mutation, &[&str])] = &[
        (
            "truncated",
            &|t| t[..t.len() / 2].to_string(),
            &["workflow.json:", "EOF while parsing", "triage schema store"],
        ),
        ("not json", &|_| "hello".into(), &["workflow.json:1:1", "expected value"]),
        (
            "unknown field",
            &|t| t.replacen("\"use_pending_failed\"", "\"use_pending_faild\"", 1),
            &["unknown field `use_pending_faild`"],
        ),
        (
            "bad status",
            &|t| t.replacen("\"pending_failed\"", "\"pending-failled\"", 1),
            &["unknown variant `pending-failled`"],
        ),
        ("bad memory", &|t| t.replacen("\"4g\"", "\"4 bananas\"", 1), &["invalid memory `4 bananas`", "like `512m`"]),
        (
            "bad runtime",
            &|t| t.replacen("\"PT30M\"", "\"half an hour\"", 1),
            &["invalid runtime `half an hour`", "PT2H"],
        ),
        ("format 2", &|t| t.replacen("\"format\": 1", "\"format\": 2", 1), &["`format` is 2"]),
        ("id mismatch", &|t| t.replacen("\"id\": 42", "\"id\": 43", 1), &["`id` is 43", "workflow 42"]),
        ("duplicate job", &|t| t.replacen("\"id\": 2,", "\"id\": 1,", 1), &["job id 1 appears twice"]),
        (
            "dangling dependency",
            &|t| t.replacen("\"depends_on\": [\n        8\n      ]", "\"depends_on\": [\n        99\n      ]", 1),
            &["names job 99"],
        ),
        ("empty file", &|_| String::new(), &["workflow.json:1:0", "EOF"]),
    ];
    for (name, mutate, expect) in cases {
        let (_tmp, store) = support::demo_copy();
        let wf_path = store.join("workflows/42/workflow.json");
        let text = std::fs::read_to_string(&wf_path).unwrap();
        let bad = mutate(&text);
        assert_ne!(bad, text, "case `{name}` did not change the file");
        std::fs::write(&wf_path, bad).unwrap();
        let err = DirBackend::open(&store).unwrap().workflow(42).await.unwrap_err().to_string();
        assert!(err.contains("workflows/42/workflow.json"), "{name}: no file in `{err}`");
        for e in *expect {
            assert!(err.contains(e), "{name}: `{e}` not in `{err}`");
        }
    }
}

#[tokio::test]
async fn missing_store_and_workflow_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let err = DirBackend::open(tmp.path().join("nope")).unwrap_err().to_string();
    assert!(err.contains("--backend dir:PATH") && err.contains("cp -r fixtures/demo triage-store"), "{err}");
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let err = DirBackend::open(tmp.path().join("empty")).unwrap_err().to_string();
    assert!(err.contains("no `workflows` folder"), "{err}");
    let (_t, store) = support::demo_copy();
    let err = DirBackend::open(&store).unwrap().workflow(7).await.unwrap_err().to_string();
    assert!(err.contains("workflow 7 not found") && err.contains("found: 42"), "{err}");
}

#[tokio::test]
async fn reads_leave_the_store_byte_for_byte_unchanged() {
    let (_tmp, store) = support::demo_copy();
    let before = support::snapshot(&store);
    let b = DirBackend::open(&store).unwrap();
    for job in b.all_jobs(42, None).await.unwrap() {
        let _ = read_tail(&b, 42, job.id, None, LogStream::Stderr, TailSize::Lines(50)).await;
    }
    // A stale move changes nothing either.
    let stale = Guard { status: JobStatus::PendingFailed, attempt_id: 9, run_id: 1 };
    let out = b.fail_job(42, 2, &stale, &audit("stale")).await.unwrap();
    assert!(matches!(out, MoveOutcome::Stale { .. }));
    let after: Vec<_> = support::snapshot(&store).into_iter().filter(|(p, _)| !p.ends_with(".lock")).collect();
    assert_eq!(before, after);
}

/// A group-shared store stays shared after a move, and the temp file of a writer killed
/// mid-write is cleared by the next writer (under the lock, so never a live writer's).
#[tokio::test]
async fn a_move_keeps_the_files_mode_and_clears_stale_temp_files() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, store) = support::demo_copy();
    let folder = store.join("workflows/42");
    let wf_file = folder.join("workflow.json");
    std::fs::set_permissions(&wf_file, std::fs::Permissions::from_mode(0o664)).unwrap();
    let stale = folder.join(".tmp-abc.partial");
    std::fs::write(&stale, vec![b'{'; 4096]).unwrap();
    let unrelated = folder.join("notes.partial");
    std::fs::write(&unrelated, b"mine").unwrap();

    let b = DirBackend::open(&store).unwrap();
    let job = b.job(42, 5).await.unwrap();
    let out = b
        .retry_job(42, 5, &Guard::pending_failed(&job, 1), &ResourceChange::default(), &audit("shared store"))
        .await
        .unwrap();
    assert!(matches!(out, MoveOutcome::Moved { attempt_id: 2, .. }), "{out:?}");
    assert_eq!(b.job(42, 5).await.unwrap().attempt_id, 2, "workflow.json was rewritten");
    let mode = std::fs::metadata(&wf_file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o664, "workflow.json mode {mode:o}");
    assert!(!stale.exists(), "the stale temp file is removed");
    assert!(unrelated.exists(), "other files are left alone");
}
