//! `triage watch` and `triage outcomes` on a real Slurm cluster (`tests/slurm/cluster.sh`):
//! the watcher starts while the array is held, the tasks fail as Slurm runs them, the watcher
//! triages them (the catalog decides), Slurm reruns the retried tasks, a task that fails again
//! the same way waits for a person and shows in `outcomes` as `failed_again`, and once a person
//! has decided it the array is complete and the watch ends by itself.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::json_lines::JsonLines;

fn cluster_ready() {
    let conf = std::env::var("SLURM_CONF").unwrap_or_default();
    assert!(
        !conf.is_empty() && Path::new(&conf).is_file(),
        "SLURM_CONF is not set to a slurm.conf: start a test cluster first with \
         `eval \"$(bash tests/slurm/cluster.sh start ~/.cache/triage/slurm)\"` (the README's test \
         command does it)"
    );
}

fn triage(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_triage"));
    c.args(["--backend", "slurm:"])
        .args(args)
        .env("TRIAGE_STATE_DIR", state)
        .env("CI", "1")
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL");
    c
}

const ARRAY: &str = r#"#!/bin/bash
#SBATCH --job-name=tri-watch
#SBATCH --array=1-4
#SBATCH --mem=100M
#SBATCH --output=%x-%A_%a.out
#SBATCH --error=%x-%A_%a.err
case $SLURM_ARRAY_TASK_ID in
  1) echo fine ;;
  2) if [ -f flaky-$SLURM_ARRAY_JOB_ID ]; then echo "second try ok"; exit 0; fi
     touch flaky-$SLURM_ARRAY_JOB_ID
     echo "ConnectionResetError: [Errno 104] Connection reset by peer" >&2; exit 1 ;;
  3) python3 -c 'def broken(:' ;;
  4) echo "ConnectionResetError: [Errno 104] Connection reset by peer" >&2; exit 1 ;;
esac
"#;

/// Every batch's jobs so far: (job id, attempt, outcome).
fn batch_jobs(lines: &[Value]) -> Vec<(i64, i64, String)> {
    lines
        .iter()
        .filter(|l| l["type"] == "batch")
        .flat_map(|l| l["plan"]["jobs"].as_array().cloned().unwrap_or_default())
        .map(|j| {
            (
                j["job_id"].as_i64().unwrap_or(-1),
                j["attempt_id"].as_i64().unwrap_or(-1),
                j["outcome"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_watcher_triages_a_slurm_array_as_its_tasks_fail_and_outcomes_follow_them_up() {
    cluster_ready();
    let tmp = tempfile::Builder::new().prefix("triage-slurm-watch-").tempdir_in("/tmp").expect("temp dir");
    let dir = tmp.path();
    let state = dir.join("state");
    std::fs::write(dir.join("array.sh"), ARRAY).expect("script");
    let o = Command::new("sbatch")
        .args(["--parsable", "--hold", "-D"])
        .arg(dir)
        .arg(dir.join("array.sh"))
        .output()
        .expect("sbatch");
    assert!(o.status.success(), "sbatch: {}", String::from_utf8_lossy(&o.stderr));
    let array = String::from_utf8_lossy(&o.stdout).trim().to_string();

    let mut child = triage(&state, &["watch", "--workflow", &array, "--interval", "1", "--settle", "3"])
        .args(["--until-complete", "--agent", "rules", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start triage watch");
    let lines = JsonLines::follow(child.stdout.take().expect("stdout"));
    let snapshot = || lines.snapshot();
    let wait = |what: &str, f: &dyn Fn(&[Value]) -> bool| {
        lines.wait_for(what, Duration::from_secs(240), f, String::new);
    };
    wait("the watcher to start", &|l| !l.is_empty());
    let o = Command::new("scontrol").args(["release", &array]).output().expect("scontrol release");
    assert!(o.status.success(), "release: {}", String::from_utf8_lossy(&o.stderr));

    // First failures: 2 and 4 retried (Slurm requeues them), 3 failed.
    wait("tasks 2, 3 and 4 triaged", &|l| {
        let got = batch_jobs(l);
        [2, 3, 4].iter().all(|id| got.iter().any(|(j, a, o)| j == id && *a == 1 && o == "applied"))
    });
    // Task 4 fails again the same way: a person decides.
    wait("task 4's second failure left for a person", &|l| {
        batch_jobs(l).iter().any(|(j, a, o)| *j == 4 && *a == 2 && o == "needs_review")
    });
    assert!(!batch_jobs(&snapshot()).iter().any(|(j, _, _)| *j == 1), "a task that succeeded is never triaged");

    let o = triage(&state, &["outcomes", "--workflow", &array, "--json"]).output().expect("outcomes");
    assert!(o.status.success(), "outcomes: {}", String::from_utf8_lossy(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let result = |job: i64| {
        report["decisions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["job_id"] == job)
            .map(|d| d["result"].as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|| panic!("no decision on task {job}: {report:#}"))
    };
    // Task 2's rerun may still be finishing when task 4's second failure is triaged.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut two = result(2);
    while two == "not_run_yet" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(1));
        let o = triage(&state, &["outcomes", "--workflow", &array, "--json"]).output().expect("outcomes");
        let r: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        two = r["decisions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["job_id"] == 2)
            .map_or(String::new(), |d| d["result"].as_str().unwrap_or_default().to_string());
    }
    assert_eq!(two, "worked", "{report:#}");
    assert_eq!(result(4), "failed_again", "{report:#}");
    assert_eq!(result(3), "held", "{report:#}");

    // A person fails task 4 through the review plan; the array is complete; the watch ends.
    let plan = state.join("watch").join(format!("workflow-{array}-review.json"));
    let mut review = triage(&state, &["review", "--plan", &plan.display().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("review");
    std::io::Write::write_all(&mut review.stdin.take().expect("stdin"), b"f\n").expect("answer");
    let o = review.wait_with_output().expect("review");
    assert!(o.status.success(), "review: {}", String::from_utf8_lossy(&o.stderr));
    let o = triage(&state, &["apply", "--plan", &plan.display().to_string()]).output().expect("apply");
    assert!(o.status.success(), "apply: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the watcher did not end on a complete array: {:#?}", snapshot());
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(snapshot().iter().any(|l| l["event"]["kind"] == "complete"), "{:#?}", snapshot());
}
