//! Criterion: the tail of a 1 GiB stderr file (made once, kept in the temporary directory).
//! `tail_vs_gnu` compares the same call with GNU `tail` and reports bytes read and memory.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use triage::logs::{TailOptions, tail_bytes, tail_lines};

mod common;

fn tails(c: &mut Criterion) {
    let path = common::big_stderr_file(1 << 30);
    let opts = TailOptions::default();
    c.bench_function("tail_lines 50 of a 1 GiB file", |b| {
        b.iter(|| tail_lines(black_box(&path), 50, &opts).expect("tail the bench file"))
    });
    c.bench_function("tail_lines 5000 of a 1 GiB file", |b| {
        b.iter(|| tail_lines(black_box(&path), 5000, &opts).expect("tail the bench file"))
    });
    c.bench_function("tail_bytes 64 KiB of a 1 GiB file", |b| {
        b.iter(|| tail_bytes(black_box(&path), 64 * 1024, &opts).expect("tail the bench file"))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = tails
}
criterion_main!(benches);
