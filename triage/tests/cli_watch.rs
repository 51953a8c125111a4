//! `triage watch` end to end on copies of the demo store, through the real binary: failures
//! landing while it watches (the test plays the job runner, writing the store under its lock
//! as a runner would), the review plan and hook, `--until-complete`, two watchers at once,
//! and SIGTERM while the agent runs and while the review hook runs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::demo_copy;
use support::json_lines::{JsonLines, follow_text};

const WF: &str = "workflows/42";

/// A running `triage watch --json`, its output lines collected as they come.
struct Watcher {
    child: Child,
    lines: JsonLines,
    err: Arc<Mutex<String>>,
}

impl Watcher {
    fn start(store: &Path, state: &Path, extra: &[&str]) -> Watcher {
        let mut child = Command::new(env!("CARGO_BIN_EXE_triage"))
            .arg("--backend")
            .arg(format!("dir:{}", store.display()))
            .args(["watch", "--workflow", "42", "--interval", "0.3", "--json"])
            .args(extra)
            .env("TRIAGE_STATE_DIR", state)
            .env("PATH", "/usr/bin:/bin") // no agent CLI: auto means rules
            .env_remove("TRIAGE_BACKEND")
            .env_remove("TORC_API_URL")
            .env_remove("TRIAGE_CATALOG")
            .env("CI", "true")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start triage watch");
        let lines = JsonLines::follow(child.stdout.take().expect("stdout"));
        let err = follow_text(child.stderr.take().expect("stderr"));
        let w = Watcher { child, lines, err };
        w.wait_for("the watcher to start", |lines| lines.iter().any(|l| reason(l).starts_with("watching workflow")));
        w
    }

    /// Wait (at most a minute: this is a deadline against hanging, not a speed check) until
    /// `f` holds over the output so far.
    fn wait_for(&self, what: &str, f: impl Fn(&[Value]) -> bool) {
        let err = || format!("stderr:\n{}", self.err.lock().expect("stderr"));
        self.lines.wait_for(what, Duration::from_secs(60), f, err);
    }

    /// The output so far; `triage watch --json` prints nothing on stdout but JSON lines.
    fn lines(&self) -> Vec<Value> {
        assert_eq!(self.lines.not_json(), Vec::<String>::new(), "stdout lines that are not JSON");
        self.lines.snapshot()
    }

    /// Every batch's plan so far.
    fn batches(&self) -> Vec<Value> {
        self.lines().into_iter().filter(|l| l["type"] == "batch").map(|l| l["plan"].clone()).collect()
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).expect("signal");
    }

    /// Wait for the process to exit; its status code.
    fn exit(mut self) -> (i32, Vec<Value>, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                std::thread::sleep(Duration::from_millis(100)); // let the readers drain
                let err = self.err.lock().expect("stderr").clone();
                return (status.code().unwrap_or(-1), self.lines(), err);
            }
            assert!(Instant::now() < deadline, "triage watch did not exit; output: {:#?}", self.lines());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn reason(line: &Value) -> &str {
    line["event"]["reason"].as_str().unwrap_or_default()
}

fn has_event(lines: &[Value], kind: &str, needle: &str) -> bool {
    lines.iter().any(|l| l["event"]["kind"] == kind && reason(l).contains(needle))
}

/// The jobs of a batch plan: id -> (action, outcome).
fn outcomes(plan: &Value) -> Vec<(i64, String, String)> {
    plan["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["job_id"].as_i64().expect("id"),
                j["proposed"]["action"].as_str().unwrap_or("-").to_string(),
                j["outcome"].as_str().expect("outcome").to_string(),
            )
        })
        .collect()
}

/// The store's jobs by id.
fn jobs(store: &Path) -> std::collections::BTreeMap<i64, Value> {
    let text = std::fs::read_to_string(store.join(WF).join("workflow.json")).expect("workflow.json");
    let wf: Value = serde_json::from_str(&text).expect("JSON");
    wf["jobs"].as_array().expect("jobs").iter().map(|j| (j["id"].as_i64().expect("id"), j.clone())).collect()
}

/// Play the runner: set jobs' statuses under the store's lock, as the store's writers do.
fn set_status(store: &Path, ids: &[i64], status: &str) {
    let dir = store.join(WF);
    let _lock = triage::fsutil::FolderLock::acquire(&dir).expect("lock the store");
    let path = dir.join("workflow.json");
    let mut wf: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
    for j in wf["jobs"].as_array_mut().expect("jobs") {
        if ids.contains(&j["id"].as_i64().expect("id")) {
            j["status"] = status.into();
        }
    }
    triage::fsutil::write_atomic(&path, &serde_json::to_vec_pretty(&wf).expect("JSON")).expect("write");
}

/// How many moves the store's audit log records for each job.
fn moves(store: &Path) -> std::collections::BTreeMap<i64, usize> {
    let mut n = std::collections::BTreeMap::new();
    let text = std::fs::read_to_string(store.join(WF).join("events.jsonl")).unwrap_or_default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let e: Value = serde_json::from_str(line).expect("event JSON");
        let action = e["what"].as_str().unwrap_or_default();
        if action == "retry" || action == "fail" {
            *n.entry(e["job_id"].as_i64().expect("job id")).or_default() += 1;
        }
    }
    n
}

fn triage(store: &Path, state: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_triage"))
        .arg("--backend")
        .arg(format!("dir:{}", store.display()))
        .args(args)
        .env("TRIAGE_STATE_DIR", state)
        .env("PATH", "/usr/bin:/bin")
        .env("CI", "true")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run triage");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("answers");
    child.wait_with_output().expect("triage output")
}

const PENDING: [i64; 9] = [2, 3, 4, 5, 6, 7, 9, 10, 11];

fn review_plan(state: &Path) -> PathBuf {
    state.join("watch/workflow-42-review.json")
}

#[test]
fn failures_are_triaged_as_they_land_and_the_watch_ends_when_the_workflow_is_complete() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let hook_log = tmp.path().join("hook.log");
    set_status(&store, &PENDING, "running");
    let hook =
        format!("echo \"$TRIAGE_WORKFLOW_ID $TRIAGE_REVIEW_JOBS $TRIAGE_REVIEW_PLAN\" >> {}", hook_log.display());
    let w = Watcher::start(&store, &state, &["--settle", "0.5", "--until-complete", "--on-review", &hook]);

    // First wave: a network error (transient) and a SyntaxError (permanent).
    set_status(&store, &[2, 6], "pending_failed");
    w.wait_for("the first batch", |l| l.iter().any(|l| l["type"] == "batch"));
    let first = &w.batches()[0];
    assert_eq!(
        outcomes(first),
        vec![(2, "retry".into(), "applied".into()), (6, "fail".into(), "applied".into())],
        "first batch: {first:#}"
    );
    let now = jobs(&store);
    assert_eq!((now[&2]["status"].as_str(), now[&2]["attempt_id"].as_i64()), (Some("ready"), Some(2)));
    assert_eq!(now[&6]["status"], "failed");
    assert!(!review_plan(&state).exists(), "nobody needed yet, no review plan");

    // Second wave: a failure the catalog has no verdict on goes to a person.
    set_status(&store, &[10, 3], "pending_failed");
    w.wait_for("the second batch", |l| l.iter().filter(|l| l["type"] == "batch").count() >= 2);
    let second = &w.batches()[1];
    let got = outcomes(second);
    assert_eq!(got.iter().map(|j| j.0).collect::<Vec<_>>(), vec![3, 10], "only the new jobs: {second:#}");
    assert_eq!(got[0].2, "applied");
    assert_eq!(got[1].2, "needs_review");
    w.wait_for("the review event", |l| has_event(l, "review", "--on-review ran"));
    let hook_said = std::fs::read_to_string(&hook_log).expect("the hook ran");
    assert_eq!(hook_said.trim(), format!("42 10 {}", review_plan(&state).display()));
    let review: Value =
        serde_json::from_slice(&std::fs::read(review_plan(&state)).expect("review plan")).expect("JSON");
    assert_eq!(outcomes(&review), vec![(10, "-".into(), "needs_review".into())]);
    assert!(review_plan(&state).with_extension("md").exists(), "the report beside it");

    // Everything else finishes; job 10 still waits for a person: not complete.
    set_status(&store, &[2, 3, 4, 5, 7, 9, 11, 13], "completed");
    assert_eq!(jobs(&store)[&12]["status"], "canceled", "job 12 (after job 6) was canceled by its fail");
    std::thread::sleep(Duration::from_millis(1200)); // a few polls
    assert!(!has_event(&w.lines(), "complete", ""), "pending_failed is not complete: {:#?}", w.lines());
    assert_eq!(w.batches().len(), 2, "job 10 is not triaged again while it waits for a person");

    // The person decides through the review plan; the workflow completes; the watch ends.
    let o = triage(&store, &state, &["review", "--plan", &review_plan(&state).display().to_string()], "f\n");
    assert!(o.status.success(), "review: {}", String::from_utf8_lossy(&o.stderr));
    let o = triage(&store, &state, &["apply", "--plan", &review_plan(&state).display().to_string()], "");
    assert!(o.status.success(), "apply: {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(jobs(&store)[&10]["status"], "failed");
    let (code, lines, err) = w.exit();
    assert_eq!(code, 0, "{err}");
    assert!(has_event(&lines, "complete", "workflow 42 is complete"), "{lines:#?}");
    let moved = moves(&store);
    assert_eq!(moved.keys().copied().collect::<Vec<_>>(), vec![2, 3, 6, 10], "{moved:?}");
    assert!(moved.values().all(|n| *n == 1), "each job moved once: {moved:?}");
}

#[test]
fn two_watchers_at_once_move_each_job_once() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let a = Watcher::start(&store, &state, &["--settle", "0.2"]);
    let b = Watcher::start(&store, &state, &["--settle", "0.2"]);
    let settled = |l: &[Value]| l.iter().filter(|l| l["event"]["kind"] == "batch").count() >= 1;
    a.wait_for("a batch", settled);
    // Both have looked after the jobs were handled: the review plan exists and two more
    // polls passed.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !review_plan(&state).exists() {
        assert!(Instant::now() < deadline, "no review plan");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    a.signal(nix::sys::signal::Signal::SIGTERM);
    b.signal(nix::sys::signal::Signal::SIGTERM);
    let (ca, la, ea) = a.exit();
    let (cb, lb, eb) = b.exit();
    assert_eq!((ca, cb), (0, 0), "{ea}\n{eb}");
    assert!(has_event(&la, "stopped", "SIGTERM") && has_event(&lb, "stopped", "SIGTERM"));

    let mut applied = std::collections::BTreeMap::new();
    for plan in la.iter().chain(&lb).filter(|l| l["type"] == "batch") {
        for (id, _, outcome) in outcomes(&plan["plan"]) {
            if outcome == "applied" {
                *applied.entry(id).or_insert(0) += 1;
            }
        }
    }
    assert_eq!(applied.keys().copied().collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7], "{applied:?}");
    assert!(applied.values().all(|n| *n == 1), "a job applied by both watchers: {applied:?}");
    let moved = moves(&store);
    assert_eq!(moved.keys().copied().collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7], "{moved:?}");
    assert!(moved.values().all(|n| *n == 1), "moves in the audit log: {moved:?}");
    for id in [2, 3, 4, 5] {
        assert_eq!(jobs(&store)[&id]["attempt_id"], 2, "job {id} retried once");
    }
    let review: Value = serde_json::from_slice(&std::fs::read(review_plan(&state)).expect("plan")).expect("JSON");
    let ids: Vec<i64> = outcomes(&review).iter().map(|j| j.0).collect();
    assert_eq!(ids, vec![9, 10, 11], "each job once in the review plan");
}

#[test]
fn sigterm_while_the_agent_runs_applies_nothing_and_a_restart_takes_over() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let before = support::snapshot(&store);
    let marker = tmp.path().join("agent-started");
    let agent = format!("touch {}; sleep 30", marker.display());
    let w = Watcher::start(&store, &state, &["--settle", "0", "--agent", "command", "--agent-cmd", &agent]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        // The agent runs only with `triage-mcp` beside `triage` (else triage falls back to the
        // catalog and says why): say so rather than wait out the deadline.
        let lines = w.lines();
        if let Some(fallback) = lines.iter().find(|l| l["event"]["kind"] == "fallback") {
            panic!(
                "the agent could not start ({}); build the whole workspace first: cargo build --workspace",
                fallback["event"]["reason"]
            );
        }
        assert!(Instant::now() < deadline, "the agent never started: {lines:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, lines, err) = w.exit();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("SIGTERM received: stopped the agent"), "{err}");
    assert!(lines.iter().all(|l| l["type"] != "batch"), "no batch finished: {lines:#?}");
    assert_eq!(support::snapshot(&store), before, "nothing moved");

    // A new watcher (the catalog this time) takes every job up, once.
    let w = Watcher::start(&store, &state, &["--settle", "0", "--agent", "rules"]);
    w.wait_for("a batch", |l| l.iter().any(|l| l["type"] == "batch"));
    w.signal(nix::sys::signal::Signal::SIGINT);
    let (code, lines, _) = w.exit();
    assert_eq!(code, 0);
    let batch = lines.iter().find(|l| l["type"] == "batch").expect("batch");
    assert_eq!(outcomes(&batch["plan"]).len(), 9, "every pending job in one batch");
    let moved = moves(&store);
    assert_eq!(moved.keys().copied().collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7], "{moved:?}");
    assert!(moved.values().all(|n| *n == 1), "{moved:?}");
}

#[test]
fn sigterm_during_the_review_hook_keeps_the_batch_and_a_restart_does_not_repeat_it() {
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let hook_log = tmp.path().join("hook.log");
    let hook = format!("echo \"$TRIAGE_REVIEW_JOBS\" >> {}; sleep 30", hook_log.display());
    let w = Watcher::start(&store, &state, &["--settle", "0", "--agent", "rules", "--on-review", &hook]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !hook_log.exists() {
        assert!(Instant::now() < deadline, "the hook never ran: {:#?}", w.lines());
        std::thread::sleep(Duration::from_millis(50));
    }
    let after_batch = support::snapshot(&store);
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, lines, err) = w.exit();
    assert_eq!(code, 0, "{err}");
    assert!(has_event(&lines, "review", "--on-review stopped by SIGTERM"), "{lines:#?}");
    let moved = moves(&store);
    assert_eq!(moved.keys().copied().collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7], "{moved:?}");
    assert!(moved.values().all(|n| *n == 1), "{moved:?}");

    let w = Watcher::start(&store, &state, &["--settle", "0", "--agent", "rules", "--on-review", &hook]);
    std::thread::sleep(Duration::from_millis(1500)); // several polls
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, lines, _) = w.exit();
    assert_eq!(code, 0);
    assert!(
        lines.iter().all(|l| l["type"] != "batch"),
        "the jobs waiting for a person are not taken up again: {lines:#?}"
    );
    assert_eq!(support::snapshot(&store), after_batch, "nothing moved again");
    assert_eq!(std::fs::read_to_string(&hook_log).expect("hook log").lines().count(), 1, "the hook ran once");
}
