//! Our tail of 50 lines of a 1 GiB stderr file next to GNU `tail -n 50` on the same file:
//! mean wall time, bytes read (the `rchar` of /proc/self/io, which counts reaped children too)
//! and peak memory (GNU `time -f %M`, where installed). Prints a small Markdown table.
//!
//! `cargo bench -p triage --bench tail_vs_gnu`; `TRIAGE_BENCH_RUNS` sets the runs (default 30).
//! Run as a child with `TRIAGE_TAIL_CHILD=FILE`, it tails FILE to stdout, so "ours as a process"
//! is measured the way GNU tail is.

use std::env;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use triage::logs::{TailOptions, tail_lines};

mod common;

const LINES: usize = 50;

fn main() {
    if let Some(file) = env::var_os("TRIAGE_TAIL_CHILD") {
        let tail = tail_lines(Path::new(&file), LINES, &TailOptions::default()).expect("tail");
        std::io::stdout().write_all(&tail.bytes).expect("write the tail");
        return;
    }
    let runs: u32 = env::var("TRIAGE_BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(30);
    let size = 1u64 << 30;
    let made = Instant::now();
    let path = common::big_stderr_file(size);
    let file_len = std::fs::metadata(&path).expect("bench file").len();
    eprintln!("bench file {} ({file_len} bytes) ready in {:.1} s", path.display(), made.elapsed().as_secs_f64());

    let ours = tail_lines(&path, LINES, &TailOptions::default()).expect("tail");
    let gnu = Command::new("tail").arg("-n").arg(LINES.to_string()).arg(&path).output().expect("run GNU tail");
    assert_eq!(ours.bytes, gnu.stdout, "our tail differs from GNU tail's");

    let exe = env::current_exe().expect("own path");
    let child = |cmd: &mut Command| cmd.env("TRIAGE_TAIL_CHILD", &path).stdout(Stdio::null()).status();
    let mut rows = Vec::new();

    let (time, read) = measure(runs, || {
        let tail = tail_lines(&path, LINES, &TailOptions::default()).expect("tail");
        std::hint::black_box(tail);
    });
    rows.push(("triage::logs::tail_lines, in process", time, read, None));

    let (time, read) = measure(runs, || {
        child(&mut Command::new(&exe)).expect("run ourselves");
    });
    rows.push((
        "triage tail_lines as a process",
        time,
        read,
        peak_rss(Command::new(&exe).env("TRIAGE_TAIL_CHILD", &path)),
    ));

    let gnu_cmd = || {
        let mut cmd = Command::new("tail");
        cmd.arg("-n").arg(LINES.to_string()).arg(&path);
        cmd
    };
    let (time, read) = measure(runs, || {
        gnu_cmd().stdout(Stdio::null()).status().expect("run GNU tail");
    });
    rows.push(("GNU tail -n 50, a process", time, read, peak_rss(&mut gnu_cmd())));

    println!(
        "\nTail of {LINES} lines ({} bytes) of a {file_len}-byte file, {runs} runs each, warm page cache",
        ours.bytes.len()
    );
    println!("machine: {}, {} cores\n", cpu_model(), std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("| what | mean ms | min ms | bytes read per run | peak RSS KiB |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (what, (mean, min), read, rss) in rows {
        let rss = rss.map_or("n/a".to_owned(), |k| k.to_string());
        println!("| {what} | {:.3} | {:.3} | {read} | {rss} |", ms(mean), ms(min));
    }
}

/// Mean and minimum wall time over `runs` calls, and bytes read per call.
fn measure(runs: u32, mut f: impl FnMut()) -> ((Duration, Duration), u64) {
    f();
    let before = rchar();
    let mut min = Duration::MAX;
    let start = Instant::now();
    for _ in 0..runs {
        let one = Instant::now();
        f();
        min = min.min(one.elapsed());
    }
    let mean = start.elapsed() / runs.max(1);
    ((mean, min), (rchar() - before) / u64::from(runs.max(1)))
}

/// Bytes this process (and the children it reaped) read through read(2) and the like.
fn rchar() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("rchar: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Peak resident memory of one run of `cmd`, by GNU time, if it is installed.
fn peak_rss(cmd: &mut Command) -> Option<u64> {
    let out = env::temp_dir().join(format!("triage-bench-rss-{}", std::process::id()));
    let mut timed = Command::new("/usr/bin/time");
    timed.arg("-f").arg("%M").arg("-o").arg(&out).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            timed.env(k, v);
        }
    }
    let ok = timed.stdout(Stdio::null()).stderr(Stdio::null()).status().ok()?.success();
    let kib = std::fs::read_to_string(&out).ok()?.trim().parse().ok();
    let _ = std::fs::remove_file(&out);
    if ok { kib } else { None }
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned()))
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
