//! The fast normalization against the regex-only one: the same text for every line of the
//! corpus, of the benchmark's tails and of generated lines, and the same fingerprints.

use crate::logs::{fingerprint, normalize_line};

#[path = "../../benches/common/mod.rs"]
mod bench_text;

/// Every `stderr_tail` of the corpus files.
fn corpus_tails() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/corpus");
    let mut tails = Vec::new();
    for file in ["dev.jsonl", "own.jsonl"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("the corpus is readable");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let row: serde_json::Value = serde_json::from_str(line).expect("the corpus is JSON Lines");
            tails.push(row["stderr_tail"].as_str().expect("every row has a stderr_tail").to_owned());
        }
    }
    assert!(tails.len() > 500, "the corpus has its rows: {}", tails.len());
    tails
}

/// The benchmark's tails (the same generator and seed as `benches/signatures.rs`).
fn bench_tails(n: usize) -> Vec<String> {
    let mut rng = bench_text::Rng(0x51_6E);
    (0..n).map(|_| bench_text::tail_50(&mut rng)).collect()
}

#[track_caller]
fn same_lines(tails: &[String]) -> usize {
    let mut lines = 0;
    for tail in tails {
        for line in tail.lines() {
            assert_eq!(normalize_line(line), super::normalize_line(line), "line: {line:?}");
            lines += 1;
        }
    }
    lines
}

#[track_caller]
fn same_fingerprints(tails: &[String]) {
    for tail in tails {
        for exit_code in [None, Some(137)] {
            assert_eq!(fingerprint(tail, exit_code), super::fingerprint(tail, exit_code), "tail: {tail:?}");
        }
    }
}

#[test]
fn corpus_lines_and_fingerprints_are_unchanged() {
    let tails = corpus_tails();
    assert!(same_lines(&tails) > 2000);
    same_fingerprints(&tails);
}

#[test]
fn bench_lines_and_fingerprints_are_unchanged() {
    let tails = bench_tails(1000);
    assert_eq!(same_lines(&tails), 50_000);
    same_fingerprints(&tails);
}

/// Pieces of log lines, chosen to meet every rule and the edges of the hand-written scans.
const PIECES: &[&str] = &[
    " ",
    " ",
    " ",
    "  ",
    "\t",
    "\x0b",
    ":",
    ": ",
    "=",
    "#",
    "(",
    ")",
    "[",
    "]",
    ".",
    ",",
    "-",
    "/",
    "'",
    "\"",
    "`",
    "@",
    "<n> ",
    "0",
    "1",
    "7",
    "12",
    "123",
    "2024",
    "4417",
    "65536",
    "0x7f3a",
    "deadbeef1",
    "a1b2c3",
    "2024-03-21",
    "2024/03/21",
    "T",
    "Z",
    "+01:00",
    "-0500",
    "02:07:08",
    "2:07:08",
    "02:07",
    ".123",
    ",45",
    "E0321",
    "I321 ",
    "W1234 ",
    "Mar 21",
    "Thu ",
    "UTC",
    "exit",
    "exited",
    "with",
    "code",
    "status",
    "exit code",
    "exit_code",
    "return code",
    "rc",
    "signal",
    "sig",
    "errno",
    "error",
    "Error",
    "EXIT",
    "job",
    "JOB",
    "step",
    "StepId",
    "task",
    "array task",
    "array_task_id",
    "job_id",
    "taskid",
    "batch",
    "MiB",
    "GiB",
    "kB",
    "k",
    "g",
    "b",
    "ib",
    "bytes",
    "byte",
    "e",
    "events",
    "tasks",
    "loss",
    "processes",
    "class",
    "oom-kill",
    "on",
    "ON",
    "node",
    "node023",
    "host",
    "server",
    "peer",
    "orion-01-04",
    "gpu-a17",
    "nid001234",
    "[node117]",
    "10.0.3.17",
    "fe80::1ff:fe23",
    "::1",
    "hpc.example.org",
    "a.b.c",
    "trainer.py",
    "/scratch/u/job_88/train.py",
    "./data",
    "~/x",
    "https://hub.example.com/a",
    "123e4567-e89b-12d3-a456-426614174000",
    "tmpa8x9k2l_",
    "tmp.Xb3kQ9",
    "rank3",
    "ms",
    "it/s",
    "_",
    "x",
    "abc",
    "Killed",
];

/// A generated line: `n` pieces drawn by a small deterministic generator.
fn generated_line(seed: &mut u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            PIECES[((*seed >> 33) % PIECES.len() as u64) as usize]
        })
        .collect()
}

#[test]
fn generated_lines_are_unchanged() {
    let mut seed = 0x5EED;
    for i in 0..60_000 {
        let line = generated_line(&mut seed, 1 + i % 24);
        assert_eq!(normalize_line(&line), super::normalize_line(&line), "line: {line:?}");
    }
}

#[test]
fn generated_tails_have_unchanged_fingerprints() {
    let mut seed = 0x7A11;
    let tails: Vec<String> = (0..1500)
        .map(|i| (0..1 + i % 12).map(|j| generated_line(&mut seed, 1 + (i + j) % 16) + "\n").collect())
        .collect();
    same_fingerprints(&tails);
}

/// The signature's cache keys lines by `cache_key`: lines of one key must normalize alike. Checked
/// on generated lines and variants of them with other digits (a `0` before `x` kept, and no
/// other digit made `0` there).
#[test]
fn lines_of_one_shape_normalize_alike() {
    use crate::logs::normalize::{cache_key, terminal_text};
    let mut seed = 0xD1617_u64;
    let mut compared = 0;
    for i in 0..30_000 {
        let line = generated_line(&mut seed, 1 + i % 20);
        let bytes = line.as_bytes();
        let variant: String = (0..bytes.len())
            .map(|j| {
                let (b, before_x) = (bytes[j], matches!(bytes.get(j + 1), Some(b'x' | b'X')));
                if !b.is_ascii_digit() || (b == b'0' && before_x) {
                    return char::from(b);
                }
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let zero = u64::from(before_x);
                char::from(b'0' + (zero + (seed >> 33) % (10 - zero)) as u8)
            })
            .collect();
        if let Some(key) = cache_key(&terminal_text(&line)) {
            assert_eq!(Some(key), cache_key(&terminal_text(&variant)), "{line:?} vs {variant:?}");
            assert_eq!(normalize_line(&line), normalize_line(&variant), "{line:?} vs {variant:?}");
            compared += 1;
        }
    }
    assert!(compared > 5000, "{compared}");
}

/// Where the within-tail shape skip and the normalization disagree (a keyword that a timestamp
/// placeholder puts at a word start), the fingerprint stays what it was; and the same lines in
/// other tails, after the cache met them, too.
#[test]
fn shape_skips_stay_as_they_were() {
    let tails = [
        "2024-03-21signal 1 boom\n2024-03-21signal 2 boom\n",
        "2024-03-21signal 2 boom\n",
        "2024-03-21signal 2 boom\nx\n2024-03-21signal 1 boom\n",
        "E0321 02:07:08error 3\nE0321 02:07:08error 4\nerror\n",
        "\x1b[31mexit code 5\x1b[0m\n\x1b[31mexit code 6\x1b[0m\n",
    ];
    let tails: Vec<String> = tails.iter().map(|t| t.to_string()).collect();
    same_fingerprints(&tails);
    same_fingerprints(&tails.iter().rev().cloned().collect::<Vec<_>>());
    // The skip at work: the earlier `signal 1` line has the shape of the later `signal 2` one.
    assert_eq!(fingerprint(&tails[0], None), fingerprint(&tails[1], None));
    assert_ne!(fingerprint(&tails[2], None).summary, fingerprint(&tails[1], None).summary);
}
