//! Benchmarks of `triage-mcp` as an agent sees it, through a real MCP client (rmcp) over stdio:
//!
//! 1. start-up: spawn to `initialize` answered;
//! 2. `tools/call` latency (p50, p99) on the demo store;
//! 3. the first `list_pending_failed_jobs` answer on a store of N pending jobs from 12 causes:
//!    wall time and bytes, against what an ungrouped list of 50-line tails would cost.
//!
//! `cargo bench -p triage-mcp --bench mcp` (add `-- 10000` to set N). Prints a table.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt, object, service::RunningService};
use tokio::process::Command;

fn bin(name: &str) -> PathBuf {
    // Benches run from the package folder; the binaries sit in the same target profile folder.
    let exe = std::env::current_exe().expect("bench path");
    let profile = exe.parent().and_then(Path::parent).expect("target/<profile>");
    profile.join(name)
}

async fn connect(store: &Path) -> RunningService<RoleClient, ()> {
    let server = bin("triage-mcp");
    assert!(server.is_file(), "{} not found: run `cargo build --release --workspace` first", server.display());
    let spec = format!("dir:{}", store.display());
    let transport = TokioChildProcess::new(Command::new(server).configure(|c| {
        c.arg("--backend").arg(&spec).stderr(std::process::Stdio::null());
    }))
    .expect("spawn triage-mcp");
    ().serve(transport).await.expect("initialize")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let jobs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
    let tmp = tempfile::tempdir().expect("temp dir");
    let demo = tmp.path().join("demo");
    copy_dir(&repo.join("fixtures/demo"), &demo);

    // 1. Start-up.
    let mut starts = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let c = connect(&demo).await;
        starts.push(t.elapsed());
        let _ = c.cancel().await;
    }
    starts.sort();

    // 2. tools/call latency on the demo store.
    let client = connect(&demo).await;
    let calls: [(&str, serde_json::Map<String, serde_json::Value>); 3] = [
        ("get_pattern_hints", object!({"workflow_id": 42, "job_id": 6})),
        ("tail_job_stderr", object!({"workflow_id": 42, "job_id": 3, "lines": 50})),
        ("list_pending_failed_jobs", object!({"workflow_id": 42})),
    ];
    let mut table = Vec::new();
    for (name, args) in calls {
        let mut lat = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            let r =
                client.call_tool(CallToolRequestParams::new(name).with_arguments(args.clone())).await.expect("call");
            lat.push(t.elapsed());
            assert_eq!(r.is_error, Some(false), "{name} failed");
        }
        lat.sort();
        table.push((name, percentile(&lat, 0.5), percentile(&lat, 0.99)));
    }
    let _ = client.cancel().await;

    // 3. A big store.
    let big = tmp.path().join("big");
    triage::synth::write_store(&big, 1, jobs, 12, 41).expect("synthetic store");
    let ungrouped_bytes: u64 = std::fs::read_dir(big.join("workflows/1/job_stdio"))
        .expect("stdio")
        .flatten()
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0) + 120) // + a job's JSON framing
        .sum();
    let client = connect(&big).await;
    let t = Instant::now();
    let r = client
        .call_tool(CallToolRequestParams::new("list_pending_failed_jobs").with_arguments(object!({"workflow_id": 1})))
        .await
        .expect("list");
    let first = t.elapsed();
    let bytes = serde_json::to_vec(&r).expect("json").len();
    let groups = r.structured_content.as_ref().and_then(|v| v["groups"].as_array().map(Vec::len)).unwrap_or(0);
    let t = Instant::now();
    let _ = client
        .call_tool(CallToolRequestParams::new("list_pending_failed_jobs").with_arguments(object!({"workflow_id": 1})))
        .await
        .expect("list");
    let second = t.elapsed();
    let _ = client.cancel().await;

    println!("triage-mcp over stdio (rmcp client), {}", machine());
    println!(
        "start-up to initialized: p50 {} p99 {} (10 runs)",
        ms(percentile(&starts, 0.5)),
        ms(percentile(&starts, 0.99))
    );
    println!("{:<28} {:>10} {:>10}   (200 calls each, demo store)", "tools/call", "p50", "p99");
    for (name, p50, p99) in table {
        println!("{name:<28} {:>10} {:>10}", ms(p50), ms(p99));
    }
    println!(
        "list_pending_failed_jobs, {jobs} jobs / 12 causes: first answer {} ({} bytes, {groups} groups visible), again {}; ungrouped 41-line tails would be {} bytes ({:.0}x more)",
        ms(first),
        bytes,
        ms(second),
        ungrouped_bytes,
        ungrouped_bytes as f64 / bytes as f64
    );
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    format!("{} cores, {cpu}", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0))
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("mkdir");
    for e in std::fs::read_dir(src).expect("read_dir").flatten() {
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).expect("copy");
        }
    }
}
