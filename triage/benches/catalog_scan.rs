//! Scan throughput of the built-in catalog on a realistic ~1 MB stderr tail.
//!
//! The tail is built from the labelled corpus's lines (`fixtures/corpus/dev.jsonl`, in the repository)
//! interleaved with typical non-matching progress and log lines whose numbers vary, so the
//! regex engine sees new text rather than one line repeated. Reported as bytes per second
//! (criterion's `Throughput::Bytes`): read the MB/s (or MiB/s) figure in the output.
//!
//! Run: `cargo bench --bench catalog_scan -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use triage::catalog::{Catalog, ScanContext};

/// Lines from the corpus, or a built-in sample when the corpus file is missing.
fn corpus_lines() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/corpus/dev.jsonl");
    let mut lines = Vec::new();
    if let Ok(text) = std::fs::read_to_string(&path) {
        for l in text.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l)
                && let Some(tail) = v.get("stderr_tail").and_then(|t| t.as_str())
            {
                lines.extend(tail.lines().map(str::to_string));
            }
        }
    }
    if lines.is_empty() {
        lines = [
            "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup.",
            "requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))",
            "  File \"/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py\", line 1501, in _call_impl",
            "KeyError: '1_new'",
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 5.80 GiB total capacity)",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
    }
    lines
}

/// About `size` bytes: mostly ordinary log output (as real tails are), with an error line from
/// the corpus every few lines.
fn build_tail(size: usize) -> String {
    let errors = corpus_lines();
    let mut out = String::with_capacity(size + 1024);
    let mut i = 0usize;
    while out.len() < size {
        let n = i * 7919 % 100_003;
        match i % 6 {
            0 => out.push_str(&format!(
                "Epoch {}: {:>3}%|#####     | {}/{} [{:02}:{:02}<{:02}:{:02}, {}.{:02}it/s, loss={}.{:04}]\n",
                i / 600, n % 100, n % 1000, 1000, n % 60, n % 59, n % 57, n % 53, n % 9, n % 97, n % 3, n % 9973
            )),
            1 => out.push_str(&format!(
                "2024-03-{:02}T{:02}:{:02}:{:02}.{:03}Z INFO worker-{} processed batch {} ({} records, {} ms)\n",
                n % 28 + 1, n % 24, n % 60, n % 59, n % 1000, n % 64, i, n % 5000, n % 900
            )),
            2 => out.push_str(&format!(
                "  File \"/opt/conda/envs/py310/lib/python3.10/site-packages/pkg_{}/module_{}.py\", line {}, in fn_{}\n",
                n % 40, n % 17, n % 3000, n % 23
            )),
            3 => out.push_str(&format!(
                "[rank{}]:[W{:04} {:02}:{:02}:{:02}] Warning: gradient norm {}.{:03} exceeds clip value\n",
                n % 8, n % 1231, n % 24, n % 60, n % 59, n % 50, n % 997
            )),
            4 => out.push_str(&format!("DEBUG sha256:{:016x}{:016x} pulled layer {}\n", n as u64 * 0x9e37_79b9, i, n % 77)),
            _ => {
                if let Some(line) = errors.get(i / 6 % errors.len()) {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        i += 1;
    }
    out
}

fn bench_scan(c: &mut Criterion) {
    let catalog = Catalog::builtin();
    let tail = build_tail(1 << 20);
    let lines = tail.lines().count();
    let ctx = ScanContext::exit_code(1);
    let mut group = c.benchmark_group("catalog_scan");
    group.throughput(Throughput::Bytes(tail.len() as u64));
    group.sample_size(10);
    group.bench_function(format!("1MiB_tail_{lines}_lines"), |b| {
        b.iter(|| black_box(catalog.scan(black_box(&tail), &ctx)))
    });
    let small = build_tail(8 << 10);
    group.throughput(Throughput::Bytes(small.len() as u64));
    group.bench_function("8KiB_tail", |b| b.iter(|| black_box(catalog.scan(black_box(&small), &ctx))));
    group.finish();

    // Latency of a first scan: a freshly loaded catalog (cold regex caches) on a 50-line tail.
    let tail50: String = tail.lines().skip(1000).take(50).map(|l| format!("{l}\n")).collect();
    let mut group = c.benchmark_group("catalog_cold");
    group.sample_size(10);
    group.bench_function("first_scan_50_lines", |b| {
        b.iter_batched(
            || Catalog::from_sources(&[]).ok(),
            |cat| cat.map(|c| black_box(c.scan(&tail50, &ctx))),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("load_builtin_uncached", |b| {
        b.iter(|| black_box(Catalog::from_sources(&[]).map(|c| c.entries().len()).ok()))
    });
    group.finish();
}

criterion_group!(benches, bench_scan);
criterion_main!(benches);
