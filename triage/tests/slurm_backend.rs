//! The `slurm:` backend against a real Slurm 22.05 cluster (slurmctld, slurmd, slurmdbd with
//! MariaDB; `tests/slurm/cluster.sh start ROOT` starts one on loopback, and the README's test
//! command does it). Real jobs fail for real (a Python traceback, a cgroup OOM kill, a missing
//! module), the real `triage` binary triages them through `sacct`/`scontrol`/`sbatch`/`scancel`,
//! and Slurm runs the retries.
//!
//! The scenarios share one cluster, so they run one after another (a lock).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn slurm_conf() -> String {
    let conf = std::env::var("SLURM_CONF").unwrap_or_default();
    assert!(
        !conf.is_empty() && Path::new(&conf).is_file(),
        "SLURM_CONF is not set to a slurm.conf: start a test cluster first with \
         `eval \"$(bash tests/slurm/cluster.sh start ~/.cache/triage/slurm)\"` (the README's test \
         command does it), or point SLURM_CONF at a cluster you may submit jobs to"
    );
    let ping = Command::new("scontrol").arg("ping").output();
    assert!(
        ping.as_ref().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("UP")),
        "slurmctld does not answer `scontrol ping` ({ping:?}): start it with tests/slurm/cluster.sh start ROOT"
    );
    conf
}

fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// When each job id these tests submitted was submitted (five seconds early: see [`sbatch`]).
/// Slurm hands the ids of purged jobs out again after a `scontrol reconfigure` (which
/// `min_job_age` runs), so `sacct -D -j ID` can list an earlier job's runs too: [`sacct`] and
/// [`wait_ended`] leave out the runs of an id submitted before this.
static SUBMITTED: std::sync::Mutex<Vec<(u64, jiff::Timestamp)>> = std::sync::Mutex::new(Vec::new());

fn note_submitted(id: u64, at: jiff::Timestamp) {
    SUBMITTED.lock().unwrap_or_else(|p| p.into_inner()).push((id, at));
}

/// Whether a row of job `job_id` (`96`, `16_2`) submitted at `submit` is of the job these
/// tests submitted last under that id.
fn ours(job_id: &str, submit: &str) -> bool {
    let Some(id) = job_id.split(['_', '.']).next().and_then(|s| s.parse::<u64>().ok()) else { return true };
    let Some(since) =
        SUBMITTED.lock().unwrap_or_else(|p| p.into_inner()).iter().rev().find(|(i, _)| *i == id).map(|(_, t)| *t)
    else {
        return true;
    };
    let tz = jiff::tz::TimeZone::system();
    match submit.parse::<jiff::civil::DateTime>().ok().and_then(|d| d.to_zoned(tz).ok()) {
        Some(z) => z.timestamp() >= since,
        None => true,
    }
}

fn sbatch(dir: &Path, args: &[&str]) -> u64 {
    let mut all = vec!["--parsable", "-D", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    // Five seconds early: sacct shows whole seconds, and the controller stamps a job with
    // `time()`, which reads the kernel's coarse clock (a few milliseconds behind this
    // process's): a job submitted in the first milliseconds of a second can show the second
    // before, more than one second before this timestamp (a scenario once waited its full 360 s
    // for rows this filter had left out). An id's earlier holder was submitted at least
    // MinJobAge (30 s) before it was purged and the id reissued, so it stays out.
    let before = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(5);
    let o = run("sbatch", &all);
    assert!(o.status.success(), "sbatch {all:?}: {}", text(&o));
    let id =
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or_else(|_| panic!("sbatch printed {}", text(&o)));
    note_submitted(id, before);
    id
}

/// The final runs of `ids` as sacct shows them: `(JobID, State, ReqMem)` for job rows.
fn sacct(ids: &str) -> Vec<(String, String, String)> {
    let o = run("sacct", &["-D", "-P", "-n", "-X", "-j", ids, "-o", "JobID,State,ReqMem,JobName,Submit"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f.len() >= 5 && ours(f[0], f[4])).then(|| (f[0].to_string(), f[1].to_string(), f[2].to_string()))
        })
        .collect()
}

/// Like [`sacct`], only the runs submitted at or after `since` (Slurm may reuse an id).
fn sacct_since(ids: &str, since: jiff::Timestamp) -> Vec<(String, String, String)> {
    let o = run("sacct", &["-D", "-P", "-n", "-X", "-j", ids, "-o", "JobID,State,ReqMem,Submit"]);
    let tz = jiff::tz::TimeZone::system();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let submit = f.get(3)?.parse::<jiff::civil::DateTime>().ok()?.to_zoned(tz.clone()).ok()?.timestamp();
            (submit >= since).then(|| (f[0].to_string(), f[1].to_string(), f[2].to_string()))
        })
        .collect()
}

/// Wait until job `id` has a run submitted at or after `since` and its runs since then have
/// ended (the id may have earlier runs of another job), and return them like [`sacct`].
fn wait_ended_since(id: u64, since: jiff::Timestamp) -> Vec<(String, String, String)> {
    note_submitted(id, since);
    wait_ended(&id.to_string(), 1);
    sacct_since(&id.to_string(), since)
}

/// Wait until every job of `ids` has ended: the last run of each is over (a `REQUEUED` row
/// that a later run follows is history), with no placeholder rows, and at least `at_least_rows`
/// runs in all.
fn wait_ended(ids: &str, at_least_rows: usize) {
    // Generous: a requeued task waits for the controller to start it again, which on a
    // 2-core machine busy with builds took over 180 s once.
    let deadline = Instant::now() + Duration::from_secs(360);
    loop {
        let o = run("sacct", &["-D", "-P", "-n", "-X", "-j", ids, "-o", "JobID,State,JobName,WorkDir,Submit"]);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split('|').collect())
            .filter(|f: &Vec<&str>| f.len() >= 5 && ours(f[0], f[4]))
            .collect();
        let mut last: std::collections::HashMap<&str, &Vec<&str>> = std::collections::HashMap::new();
        for r in &rows {
            last.insert(r[0], r);
        }
        let busy = last.values().any(|f| {
            matches!(f[1], "PENDING" | "RUNNING" | "REQUEUED" | "COMPLETING" | "CONFIGURING")
                || f[2] == "allocation"
                || f[3].is_empty()
        });
        if rows.len() >= at_least_rows && !busy {
            return;
        }
        assert!(Instant::now() < deadline, "jobs {ids} did not end in 360 s:\n{out}");
        std::thread::sleep(Duration::from_millis(700));
    }
}

fn triage_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_triage"))
}

fn triage(state: &Path, args: &[&str]) -> Output {
    Command::new(triage_bin())
        .args(["--backend", "slurm:"])
        .args(args)
        .env("TRIAGE_STATE_DIR", state)
        .env("CI", "1")
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL")
        .output()
        .unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

fn jobs_of(plan: &Value) -> Vec<(i64, String, String, String)> {
    plan["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_i64().unwrap(),
                j["proposed"]["action"].as_str().unwrap_or("-").to_string(),
                j["validation"]["status"].as_str().unwrap_or("").to_string(),
                j["outcome"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn ledger(state: &Path) -> Vec<Value> {
    let path = state.join("slurm/triage/ledger.jsonl");
    std::fs::read_to_string(&path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn min_job_age(secs: u32) -> Output {
    let root = std::env::var("TRIAGE_SLURM_ROOT").expect("TRIAGE_SLURM_ROOT (cluster.sh start prints it)");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/slurm/cluster.sh");
    run("bash", &[script, "min-job-age", &root, &secs.to_string()])
}

/// The test cluster's MinJobAge (how long the controller keeps a finished job) set to other
/// seconds while the guard lives, and back to the cluster's 30 when it drops, a failing test
/// included, so the tests after it see the usual cluster.
#[must_use]
struct MinJobAge;

impl MinJobAge {
    fn set(secs: u32) -> MinJobAge {
        let o = min_job_age(secs);
        assert!(o.status.success(), "{}", text(&o));
        MinJobAge
    }
}

impl Drop for MinJobAge {
    fn drop(&mut self) {
        let o = min_job_age(30);
        if !o.status.success() {
            eprintln!("could not set MinJobAge back to 30: {}", text(&o));
        }
    }
}

const ARRAY: &str = r#"#!/bin/bash
#SBATCH --job-name=tri-arr
#SBATCH --array=1-5
#SBATCH --mem=100M
#SBATCH --output=%x-%A_%a.out
#SBATCH --error=%x-%A_%a.err
case $SLURM_ARRAY_TASK_ID in
  1) echo fine ;;
  2) if [ -f flaky-$SLURM_ARRAY_JOB_ID ]; then echo "second try ok"; exit 0; fi
     touch flaky-$SLURM_ARRAY_JOB_ID
     echo "ConnectionResetError: [Errno 104] Connection reset by peer" >&2; exit 1 ;;
  3) python3 -c 'def broken(:' ;;
  4) python3 -c 'import numpy_that_is_not_installed' ;;
  5) python3 -c 'import time; x = bytearray(400 * 1024 * 1024); time.sleep(2); print("allocated")' ;;
esac
"#;

/// The scenarios share one cluster (and its MinJobAge): one at a time.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cluster() -> std::sync::MutexGuard<'static, ()> {
    slurm_conf();
    CLUSTER.lock().unwrap_or_else(|p| p.into_inner())
}

/// A scenario's turn on the cluster, its temporary folder, and the path of a policy that lets
/// memory grow tenfold.
fn scenario(prefix: &str) -> (std::sync::MutexGuard<'static, ()>, tempfile::TempDir, String) {
    let one = cluster();
    let tmp = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp").unwrap();
    let policy = tmp.path().join("policy.toml");
    std::fs::write(&policy, "memory_growth = 10.0\n").unwrap();
    (one, tmp, policy.to_str().unwrap().to_string())
}

#[test]
fn slurm_arrays_chains_requeues_and_resubmissions() {
    let (_one, tmp, policy) = scenario("triage-slurm-");
    let (dir, policy) = (tmp.path(), policy.as_str());
    let state = dir.join("state");

    // 1. An array: one task fine, one flaky, two real bugs, one OOM kill (cgroup).
    std::fs::write(dir.join("array.sh"), ARRAY).unwrap();
    let array = sbatch(dir, &[dir.join("array.sh").to_str().unwrap()]);
    let aid = array.to_string();
    wait_ended(&aid, 5);
    let dry =
        triage(&state, &["run", "--workflow", &aid, "--agent", "rules", "--dry-run", "--json", "--policy", policy]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    let plan = json(&dry);
    let got = jobs_of(&plan);
    assert_eq!(
        got.iter().map(|(j, a, _, o)| (*j, a.as_str(), o.as_str())).collect::<Vec<_>>(),
        vec![
            (2, "retry", "would_apply"),
            (3, "fail", "would_apply"),
            (4, "fail", "would_apply"),
            (5, "retry", "would_apply")
        ],
        "{}",
        plan
    );
    let j5 = &plan["jobs"][3];
    assert_eq!(j5["name"], format!("{aid}_5"), "array tasks are shown as ARRAY_TASK");
    assert_eq!(j5["catalog"]["category"], "oom", "{j5}");
    assert_eq!(j5["validation"]["resources"]["memory"]["after"], "1000m", "{j5}");
    assert!(ledger(&state).is_empty(), "a dry run decides nothing");

    let applied = triage(&state, &["run", "--workflow", &aid, "--agent", "rules", "--json", "--policy", policy]);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    let outcomes: Vec<String> = jobs_of(&json(&applied)).into_iter().map(|j| j.3).collect();
    assert_eq!(outcomes, ["applied"; 4], "{}", text(&applied));
    // Slurm reruns the two retried tasks (requeued: same ids) and they now succeed.
    wait_ended(&aid, 7);
    let rows = sacct(&aid);
    let last = |task: &str| rows.iter().rev().find(|r| r.0 == format!("{aid}_{task}")).cloned().unwrap();
    assert_eq!(last("2").1, "COMPLETED", "{rows:?}");
    assert_eq!((last("5").1.as_str(), last("5").2.as_str()), ("COMPLETED", "1000M"), "{rows:?}");
    assert_eq!(last("3").1, "FAILED");
    assert_eq!(rows.iter().filter(|r| r.0 == format!("{aid}_3")).count(), 1, "a failed task is not rerun");
    let entries = ledger(&state);
    let done = entries.iter().filter(|e| e["entry"] == "done").count();
    assert_eq!(done, 4, "{entries:?}");
    // The first run's stderr survives its truncation by the rerun: the ledger kept a copy.
    let logs = triage(&state, &["logs", "--workflow", &aid, "--job", "2", "--attempt", "1"]);
    assert!(text(&logs).contains("ConnectionResetError"), "{}", text(&logs));
    // Nothing is decided twice: a second run finds nothing to do.
    let again = triage(&state, &["run", "--workflow", &aid, "--agent", "rules", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(json(&again)["jobs"].as_array().unwrap().is_empty(), "{}", text(&again));
    let status = triage(&state, &["run", "--workflow", &aid, "--agent", "rules", "--dry-run", "--json"]);
    assert_eq!(ledger(&state).len(), entries.len(), "{}", text(&status));

    // 2. A chain whose root fails for good: its dependent is canceled, not left pending forever.
    let root = sbatch(dir, &["--job-name=tri-bug", "--wrap", "python3 -c 'import module_that_is_missing'"]);
    let child = sbatch(dir, &["--job-name=tri-child", &format!("--dependency=afterok:{root}"), "--wrap", "echo never"]);
    wait_ended(&root.to_string(), 1);
    let o = triage(&state, &["run", "--workflow", &root.to_string(), "--agent", "rules", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan = json(&o);
    assert_eq!(jobs_of(&plan)[0].3, "applied", "{plan}");
    assert_eq!(plan["jobs"][0]["canceled"], serde_json::json!([child]), "{plan}");
    wait_ended(&child.to_string(), 1);
    assert!(sacct(&child.to_string())[0].1.starts_with("CANCELLED"), "{:?}", sacct(&child.to_string()));

    // 3. Resubmission: an OOM job the controller has forgotten goes back as a new job with
    //    more memory, recorded as the next attempt, and its dependent waits for the new one.
    let oom = sbatch(
        dir,
        &[
            "--job-name=tri-oom",
            "--mem=60M",
            "--wrap",
            "python3 -c 'import time; x = bytearray(300 * 1024 * 1024); time.sleep(1); print(\"done\")'",
        ],
    );
    let after = sbatch(dir, &["--job-name=tri-after", &format!("--dependency=afterok:{oom}"), "--wrap", "echo after"]);
    wait_ended(&oom.to_string(), 1);
    assert_eq!(sacct(&oom.to_string())[0].1, "OUT_OF_MEMORY");
    // Seen once while the controller holds it (its script and paths are kept), then forgotten.
    let first = triage(&state, &["run", "--workflow", &oom.to_string(), "--agent", "rules", "--dry-run", "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    purge(oom);
    let o = triage(&state, &["run", "--workflow", &oom.to_string(), "--agent", "rules", "--json", "--policy", policy]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let resub = ledger(&state)
        .into_iter()
        .rev()
        .find(|e| e["entry"] == "done" && e["resubmitted"].is_object())
        .expect("a resubmission in the ledger");
    let new_id = resub["resubmitted"]["job_id"].as_u64().unwrap();
    // The resubmission is named by its id and its submit time: Slurm may hand the purged
    // job's id out again (after a controller restart its id sequence can start over).
    let since: jiff::Timestamp = resub["resubmitted"]["since"].as_str().expect("since").parse().unwrap();
    let new_runs = wait_ended_since(new_id, since);
    wait_ended(&after.to_string(), 1);
    assert_eq!(new_runs.len(), 1, "one run of the resubmission: {new_runs:?}");
    assert_eq!((new_runs[0].1.as_str(), new_runs[0].2.as_str()), ("COMPLETED", "600M"), "{new_runs:?}");
    if new_id == oom {
        eprintln!("note: Slurm reissued job id {oom} to the resubmission");
    }
    assert_eq!(sacct(&after.to_string())[0].1, "COMPLETED", "the dependent followed the new job");
    let view = triage(&state, &["run", "--workflow", &oom.to_string(), "--agent", "rules", "--dry-run", "--json"]);
    assert!(json(&view)["jobs"].as_array().unwrap().is_empty(), "{}", text(&view));
}

/// Wait until the controller has forgotten job `id` (MinJobAge 2 for the while), then restore
/// MinJobAge 30. The `scontrol reconfigure` behind it is also what lets Slurm hand the id out
/// again.
fn purge(id: u64) {
    let _age = MinJobAge::set(2);
    let deadline = Instant::now() + Duration::from_secs(60);
    while run("scontrol", &["show", "job", &id.to_string()]).status.success() {
        assert!(Instant::now() < deadline, "the controller did not forget job {id}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn slurm_a_reissued_job_id_never_resubmits_the_other_jobs_script() {
    let (_one, tmp, policy) = scenario("triage-slurm-");
    let (dir, policy) = (tmp.path(), policy.as_str());
    let state = dir.join("state");
    let oom = "python3 -c 'import time; x = bytearray(300 * 1024 * 1024); time.sleep(1)'";
    let b = sbatch(dir, &["--job-name=tri-second", "--mem=60M", "--wrap", &format!("{oom} && echo SECOND-RAN")]);
    wait_ended(&b.to_string(), 1);
    // What triage keeps after seeing an earlier job A that had the same id: Slurm 22.05 resets
    // its id sequence on `scontrol reconfigure` and hands purged ids out again (seen on this
    // cluster; when exactly depends on when the controller last saved its state, so the test
    // leaves A's script where triage would have kept it rather than wait for a reissue).
    let scripts = state.join("slurm/triage/scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(scripts.join(format!("{b}.sh")), "#!/bin/sh\necho FIRST-RAN\n").unwrap();
    let a_owner = serde_json::json!({"name": "tri-first", "work_dir": dir, "user": "root"});
    std::fs::write(scripts.join(format!("{b}.owner.json")), a_owner.to_string()).unwrap();
    // B is forgotten by the controller: a retry resubmits it, and must run B's own script.
    purge(b);
    let o = triage(&state, &["run", "--workflow", &b.to_string(), "--agent", "rules", "--json", "--policy", policy]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let resub = ledger(&state)
        .into_iter()
        .rev()
        .find(|e| e["entry"] == "done" && e["resubmitted"].is_object())
        .unwrap_or_else(|| panic!("a resubmission in the ledger: {}", text(&o)));
    let new_id = resub["resubmitted"]["job_id"].as_u64().unwrap();
    let since: jiff::Timestamp = resub["resubmitted"]["since"].as_str().expect("since").parse().unwrap();
    let runs = wait_ended_since(new_id, since);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].1, "COMPLETED", "{runs:?}");
    let out = std::fs::read_to_string(dir.join(format!("slurm-{new_id}.out"))).unwrap_or_default();
    assert!(out.contains("SECOND-RAN") && !out.contains("FIRST-RAN"), "the resubmission ran: {out:?}");
    let kept = std::fs::read_to_string(scripts.join(format!("{b}.sh"))).unwrap_or_default();
    assert!(kept.contains("SECOND-RAN"), "B's script is kept now: {kept}");
}

/// A 60-task array with a mix of failures, each kind in its own range of tasks.
const MIXED: &str = r#"#!/bin/bash
#SBATCH --job-name=tri-mix
#SBATCH --array=1-60
#SBATCH --mem=100M
#SBATCH --output=%x-%A_%a.out
#SBATCH --error=%x-%A_%a.err
t=$SLURM_ARRAY_TASK_ID
marker=flaky-$SLURM_ARRAY_JOB_ID-$t
if   [ $t -le 30 ]; then echo fine
elif [ $t -le 42 ]; then
  if [ -f $marker ]; then echo "reached the database"; exit 0; fi
  touch $marker
  python3 -c 'raise ConnectionResetError(104, "Connection reset by peer")'
elif [ $t -le 48 ]; then python3 -c 'import module_that_is_missing'
elif [ $t -le 54 ]; then python3 -c 'import time; x = bytearray(400 * 1024 * 1024); time.sleep(1)'
else echo "the frobnicator gave up on stage $t" >&2; exit 3
fi
"#;

/// A directory with an `scontrol` that logs each call to `log` and, when `kill_on` names a
/// subcommand, kills its caller (triage) instead of running it: a crash in mid-move. Its
/// `sacct` logs each call to `sacct.log` in that directory.
fn scontrol_shim(dir: &Path, log: &Path, kill_on: Option<&str>) -> PathBuf {
    let real = String::from_utf8_lossy(&run("sh", &["-c", "command -v scontrol"]).stdout).trim().to_string();
    let bin = dir.join(format!("shim-{}", kill_on.unwrap_or("log")));
    std::fs::create_dir_all(&bin).unwrap();
    let kill = match kill_on {
        Some(cmd) => format!("if [ \"$1\" = {cmd} ]; then kill -9 $PPID; exit 1; fi\n"),
        None => String::new(),
    };
    let script = format!("#!/bin/bash\necho \"$*\" >> {}\n{kill}exec {real} \"$@\"\n", log.display());
    let path = bin.join("scontrol");
    std::fs::write(&path, script).unwrap();
    let sacct = String::from_utf8_lossy(&run("sh", &["-c", "command -v sacct"]).stdout).trim().to_string();
    let sacct_shim = bin.join("sacct");
    let log = bin.join("sacct.log");
    std::fs::write(&sacct_shim, format!("#!/bin/bash\necho \"$*\" >> {}\nexec {sacct} \"$@\"\n", log.display()))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    for p in [&path, &sacct_shim] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

fn triage_with_path(state: &Path, path_first: &Path, args: &[&str]) -> Output {
    let path = format!("{}:{}", path_first.display(), std::env::var("PATH").unwrap_or_default());
    Command::new(triage_bin())
        .args(["--backend", "slurm:"])
        .args(args)
        .env("TRIAGE_STATE_DIR", state)
        .env("PATH", path)
        .env("CI", "1")
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL")
        .output()
        .unwrap()
}

#[test]
fn slurm_sixty_tasks_batched_a_crash_mid_move_and_two_applies_at_once() {
    let (_one, tmp, policy) = scenario("triage-slurm-mix-");
    // The moves below expect the controller to still hold every finished task (one
    // `requeuehold` per group). On a loaded machine the runs take longer than the default
    // MinJobAge of 30 s, and the first tasks to end were purged and went the `sbatch` way
    // instead: keep them for the scenario's length.
    let _age = MinJobAge::set(600);
    let (dir, policy) = (tmp.path(), policy.as_str());
    let state = dir.join("state");
    std::fs::write(dir.join("mix.sh"), MIXED).unwrap();
    let array = sbatch(dir, &[dir.join("mix.sh").to_str().unwrap()]);
    let aid = array.to_string();
    wait_ended(&aid, 60);

    // A dry run: every kind where it belongs, the unknown ones left to a person, nothing moved.
    let dry =
        triage(&state, &["run", "--workflow", &aid, "--agent", "rules", "--dry-run", "--json", "--policy", policy]);
    assert_eq!(dry.status.code(), Some(2), "{}", text(&dry));
    let plan = json(&dry);
    let by: std::collections::BTreeMap<i64, (String, String)> =
        jobs_of(&plan).into_iter().map(|(j, a, _, o)| (j, (a, o))).collect();
    assert_eq!(by.len(), 30, "{plan}");
    for t in 31..=60 {
        let want = match t {
            31..=42 => ("retry", "would_apply"),
            43..=48 => ("fail", "would_apply"),
            49..=54 => ("retry", "would_apply"),
            _ => ("-", "needs_review"),
        };
        assert_eq!((by[&t].0.as_str(), by[&t].1.as_str()), want, "task {t}: {plan}");
    }
    assert_eq!(sacct(&aid).len(), 60, "a dry run requeues nothing");

    // The apply dies between `requeuehold` and `release` (its scontrol kills it).
    let calls = dir.join("scontrol.log");
    let killer = scontrol_shim(dir, &calls, Some("release"));
    let crashed = triage_with_path(
        &state,
        &killer,
        &["run", "--workflow", &aid, "--agent", "rules", "--json", "--policy", policy],
    );
    assert_eq!(crashed.status.code(), None, "triage was killed: {}", text(&crashed));
    let log = std::fs::read_to_string(&calls).unwrap();
    let holds: Vec<&str> = log.lines().filter(|l| l.starts_with("requeuehold")).collect();
    // One command per resource change for the whole array: 12 network tasks, then 6 OOM tasks
    // (the kill comes at the first release, so only the first group got that far).
    assert_eq!(holds.len(), 1, "{log}");
    let tasks: Vec<&str> = holds[0].trim_start_matches("requeuehold ").split(',').collect();
    assert!(tasks.len() == 12 || tasks.len() == 6, "one requeuehold for the group: {log}");
    let begun = ledger(&state).iter().filter(|e| e["entry"] == "begin").count();
    assert_eq!(begun, 6 + 18, "fails and retries begun: {:?}", ledger(&state));
    // The six fails were one batch: one fresh listing for them all, not one each (the run also
    // lists for its evidence, again if its 2-second view went stale meanwhile, and once for the
    // retries; one listing per fail would make at least eight).
    let listings = std::fs::read_to_string(killer.join("sacct.log")).unwrap();
    let listings: Vec<&str> = listings.lines().filter(|l| l.starts_with("-D -P")).collect();
    assert!((3..=4).contains(&listings.len()), "{listings:?}");

    // Accounting lists a requeued task's new, held incarnation beside the old run, sooner or
    // later. Wait for it: recovery must release a held task even when its newer run is
    // already listed (it once took that run for the finished move and left the task held).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !tasks.iter().all(|t| sacct(&aid).iter().any(|r| r.0 == *t && r.1 == "PENDING")) {
        assert!(Instant::now() < deadline, "the held tasks never showed as pending: {:?}", sacct(&aid));
        std::thread::sleep(Duration::from_millis(500));
    }

    // Two runs at once: the first to take the ledger's lock finishes the interrupted move
    // (releases the held tasks); neither moves a job twice.
    let spawn = || {
        Command::new(triage_bin())
            .args(["--backend", "slurm:", "run", "--workflow", &aid, "--agent", "rules", "--json", "--policy", policy])
            .env("TRIAGE_STATE_DIR", &state)
            .env("CI", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for o in [&a, &b] {
        assert_eq!(o.status.code(), Some(2), "the unknown tasks still need a person: {}", text(o));
    }
    let repaired = [&a, &b]
        .iter()
        .map(|o| json(o)["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "repaired").count())
        .sum::<usize>();
    assert!(repaired >= 1, "the interrupted move was finished: {}\n{}", text(&a), text(&b));
    wait_ended(&aid, 78);
    let rows = sacct(&aid);
    for t in 31..=60 {
        let runs: Vec<&(String, String, String)> = rows.iter().filter(|r| r.0 == format!("{aid}_{t}")).collect();
        let want = match t {
            31..=42 | 49..=54 => 2,
            _ => 1,
        };
        assert_eq!(runs.len(), want, "task {t} ran {} times: {runs:?}", runs.len());
        if want == 2 {
            assert_eq!(runs[1].1, "COMPLETED", "task {t}: {runs:?}");
        }
    }
    let entries = ledger(&state);
    let decided: std::collections::BTreeSet<String> =
        entries.iter().filter(|e| e["entry"] == "begin").map(|e| e["run"].to_string()).collect();
    assert_eq!(decided.len(), 24, "each run decided once: {entries:?}");
    // The unknown tasks wait for a person, still pending_failed.
    let view = triage(&state, &["run", "--workflow", &aid, "--agent", "rules", "--dry-run", "--json"]);
    let left: Vec<i64> = jobs_of(&json(&view)).into_iter().map(|j| j.0).collect();
    assert_eq!(left, (55..=60).collect::<Vec<_>>(), "{}", text(&view));
}

/// Wait until job `id` is RUNNING.
fn wait_running(id: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = run("squeue", &["-h", "-j", &id.to_string(), "-o", "%T"]);
        if String::from_utf8_lossy(&o.stdout).trim() == "RUNNING" {
            return;
        }
        assert!(Instant::now() < deadline, "job {id} did not start: {}", text(&o));
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn slurm_node_failure_preemption_timeout_and_a_crash_after_sbatch() {
    let _one = cluster();
    let tmp = tempfile::Builder::new().prefix("triage-slurm-infra-").tempdir_in("/tmp").unwrap();
    let dir = tmp.path();
    let state = dir.join("state");
    let once = |name: &str| {
        format!("if [ -f {name}.marker ]; then echo second run; exit 0; fi; touch {name}.marker; sleep 300")
    };

    // A node failure kills a --no-requeue job: NODE_FAIL is transient, but Slurm will not run
    // that job again, and triage says so instead of trying.
    let nf = sbatch(dir, &["--job-name=tri-nodefail", "--no-requeue", "--wrap", &once("nf")]);
    wait_running(nf);
    let down = run("scontrol", &["update", "nodename=localhost", "state=down", "reason=triage-test"]);
    assert!(down.status.success(), "{}", text(&down));
    wait_ended(&nf.to_string(), 1);
    assert_eq!(sacct(&nf.to_string())[0].1, "NODE_FAIL");
    let o = triage(&state, &["run", "--workflow", &nf.to_string(), "--agent", "rules", "--json"]);
    let plan = json(&o);
    assert_eq!(plan["jobs"][0]["proposed"]["action"], "retry", "{plan}");
    assert_eq!(plan["jobs"][0]["outcome"], "error", "{plan}");
    assert!(plan["jobs"][0]["notes"][0].as_str().unwrap().contains("--no-requeue"), "{plan}");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    // Preemption: a job filling the node in `debug` is preempted by one in `urgent`; the
    // retry is charged to the preemption budget, requeued, and completes.
    let low = sbatch(dir, &["--job-name=tri-low", "-c", "2", "--wrap", &once("low")]);
    wait_running(low);
    let high = sbatch(dir, &["--job-name=tri-high", "-p", "urgent", "-c", "1", "--wrap", "sleep 1"]);
    wait_ended(&format!("{low},{high}"), 2);
    assert_eq!(sacct(&low.to_string())[0].1, "PREEMPTED");
    let o = triage(&state, &["run", "--workflow", &low.to_string(), "--agent", "rules", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan = json(&o);
    assert_eq!(
        (plan["jobs"][0]["proposed"]["action"].as_str(), plan["jobs"][0]["outcome"].as_str()),
        (Some("retry"), Some("applied")),
        "{plan}"
    );
    wait_ended(&low.to_string(), 2);
    assert_eq!(sacct(&low.to_string()).last().unwrap().1, "COMPLETED");

    // A time limit on a job that was making progress: retried with more time; and the process
    // dies right after `sbatch` (the controller forgot the job, so the retry is a
    // resubmission): the next run finds the new job by its comment and records it, instead of
    // submitting a second one.
    let name = format!("tri-timeout-{}", std::process::id());
    let progressing = "if [ -f tmo.marker ]; then echo second run; exit 0; fi; touch tmo.marker; \
                       for i in $(seq 1 100); do echo \"processed chunk $i\"; sleep 5; done";
    let tmo = sbatch(dir, &[&format!("--job-name={name}"), "--time=0:05", "--wrap", progressing]);
    wait_ended(&tmo.to_string(), 1);
    assert_eq!(sacct(&tmo.to_string())[0].1, "TIMEOUT");
    let seen = triage(&state, &["run", "--workflow", &tmo.to_string(), "--agent", "rules", "--dry-run", "--json"]);
    // Slurm rounds the limit up to a minute; the retry asks for more.
    let grown = &json(&seen)["jobs"][0]["validation"]["resources"]["runtime"];
    assert_eq!(grown["before"], "PT1M", "{}", text(&seen));
    assert!(grown["after"].as_str().is_some_and(|a| a != "PT1M"), "{}", text(&seen));
    purge(tmo);
    let real = String::from_utf8_lossy(&run("sh", &["-c", "command -v sbatch"]).stdout).trim().to_string();
    let shim = dir.join("shim-sbatch");
    std::fs::create_dir_all(&shim).unwrap();
    std::fs::write(shim.join("sbatch"), format!("#!/bin/bash\n{real} \"$@\"\nkill -9 $PPID\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shim.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let crashed =
        triage_with_path(&state, &shim, &["run", "--workflow", &tmo.to_string(), "--agent", "rules", "--json"]);
    assert_eq!(crashed.status.code(), None, "killed after sbatch: {}", text(&crashed));
    let o = triage(&state, &["run", "--workflow", &tmo.to_string(), "--agent", "rules", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan = json(&o);
    assert!(plan["events"].as_array().unwrap().iter().any(|e| e["kind"] == "repaired"), "{plan}");
    assert!(plan["jobs"].as_array().unwrap().is_empty(), "nothing left to decide: {plan}");
    let resubmissions: Vec<Value> =
        ledger(&state).into_iter().filter(|e| e["entry"] == "done" && e["resubmitted"].is_object()).collect();
    assert_eq!(resubmissions.len(), 1, "one new job, not two: {resubmissions:?}");
    let new_id = resubmissions[0]["resubmitted"]["job_id"].as_u64().unwrap();
    let since: jiff::Timestamp = resubmissions[0]["resubmitted"]["since"].as_str().expect("since").parse().unwrap();
    note_submitted(new_id, since);
    // (After it ended: for its first seconds sacct shows a new job under the name `allocation`.)
    wait_ended(&new_id.to_string(), 1);
    let by_name = run("sacct", &["-X", "-n", "-P", &format!("--name={name}"), "-o", "JobID"]);
    assert_eq!(String::from_utf8_lossy(&by_name.stdout).lines().count(), 2, "{}", text(&by_name));
    assert_eq!(sacct(&new_id.to_string())[0].1, "COMPLETED");
}
