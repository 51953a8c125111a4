//! Criterion: failure signatures of 10,000 realistic 50-line stderr tails (a dozen causes, with
//! per-job noise), reported as tails per second. Before measuring, it prints one timed pass and
//! how many distinct signatures the 10,000 tails make (a dozen is right).

use std::collections::HashSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use triage::logs::{fingerprint, signature};

mod common;

const TAILS: usize = 10_000;

fn signatures(c: &mut Criterion) {
    let mut rng = common::Rng(0x51_6E);
    let tails: Vec<String> = (0..TAILS).map(|_| common::tail_50(&mut rng)).collect();
    let bytes: usize = tails.iter().map(String::len).sum();

    let start = Instant::now();
    let groups: HashSet<_> = tails.iter().map(|t| signature(t)).collect();
    let took = start.elapsed();
    println!(
        "one pass: {TAILS} tails ({:.1} MiB) in {:.1} ms = {:.0} tails/s; {} distinct signatures",
        bytes as f64 / (1 << 20) as f64,
        took.as_secs_f64() * 1e3,
        TAILS as f64 / took.as_secs_f64(),
        groups.len()
    );
    let mut titles: Vec<String> =
        tails.iter().map(|t| fingerprint(t, None).summary).collect::<HashSet<_>>().into_iter().collect();
    titles.sort();
    for title in titles {
        println!("  group: {title}");
    }

    let mut group = c.benchmark_group("signatures");
    group.throughput(Throughput::Elements(TAILS as u64));
    group.bench_function("10k tails of 50 lines", |b| {
        b.iter(|| {
            for tail in &tails {
                black_box(signature(black_box(tail)));
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = signatures
}
criterion_main!(benches);
