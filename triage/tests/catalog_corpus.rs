//! The built-in catalog against labelled stderr tails.
//!
//! 1. The labelled corpus of real tails (`fixtures/corpus/dev.jsonl`, see its README), kept
//!    in the repository. Over the cases labelled `retry` or `fail`:
//!    transient precision (of the cases the catalog calls transient, the share labelled
//!    retry), permanent precision (of those it calls permanent, the share labelled fail) and
//!    coverage (the share it does not call unknown). Fails below 0.98 / 0.98 / 0.90.
//! 2. `tests/data/catalog_probes.jsonl`: tails we wrote ourselves, in the same format, to probe
//!    phrasings the corpus does not have. Same measures and thresholds.
//!
//! 3. `fixtures/corpus/own.jsonl`: 3,100 labelled real tails from public sources (same format),
//!    split by a stable hash of the case id ([`held_out`]: FNV-1a 64 of the id's UTF-8 bytes,
//!    `% 100 < 30`, about 30% of the cases) into a *tuning* share and a *held-out* share.
//!    Entries are written against dev.jsonl, the probes and the tuning share only; nobody
//!    reads the held-out cases' text, and this test prints only their aggregate figures. The
//!    held-out figures are the catalog's honest score on text it has not seen.
//!    The goal for both shares ([`GOAL`]): transient precision at least 0.99, permanent
//!    precision at least 0.98, coverage at least 0.90, and `unknown` on at least 80% of the
//!    cases labelled `ambiguous` (abstention). **The held-out share does not reach it yet**:
//!    each test asserts a floor at the last measured figures ([`TUNING_FLOOR`],
//!    [`HELD_OUT_FLOOR`]) and prints the goal beside each figure.
//! 4. `tests/data/catalog_vocabularies.jsonl`: one tail per member of the finite error
//!    vocabularies that end batch jobs (errno, signals, exception classes, curl, HTTP, gRPC,
//!    cloud API codes, scheduler states, Kubernetes reasons, CUDA/NCCL/MPI results, database
//!    codes), written from the tables that define them. Corpus thresholds, and abstention at
//!    least [`VOCAB_ABSTENTION`].
//!
//! Each prints the figures; all but the held-out share print every disagreement with the
//! label (run with `--nocapture` to see them on success). `TRIAGE_CORPUS_VERBOSE=1` prints
//! every case's deciding match (never a held-out one); `TRIAGE_CORPUS=FILE` scores another
//! file of the same format in place of dev.jsonl.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use triage::catalog::{Catalog, Hints, ScanContext};
use triage::model::Verdict;

#[derive(Deserialize)]
struct Case {
    id: String,
    exit_code: Option<i64>,
    /// What the scheduler said, where the case records it (`FAILED`, `OUT_OF_MEMORY`, ...).
    #[serde(default)]
    scheduler_state: Option<String>,
    stderr_tail: String,
    label: String,
    category: String,
}

/// The three measures of the corpus README.
struct Score {
    transient_precision: f64,
    permanent_precision: f64,
    coverage: f64,
    /// Of the cases labelled `ambiguous`, the share the catalog calls unknown (1.0 when none).
    abstention: f64,
}

fn corpus_path() -> PathBuf {
    match std::env::var_os("TRIAGE_CORPUS") {
        Some(p) => PathBuf::from(p),
        // The project's labelled corpus, copied into the repository so a fresh clone has it.
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/corpus/dev.jsonl"),
    }
}

fn load_cases(path: &Path, what: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "cannot read {what} at {} ({e}); the labelled corpus is kept at \
             fixtures/corpus/dev.jsonl in the repository (restore it with git), or set \
             TRIAGE_CORPUS to another copy",
            path.display()
        )
    });
    let cases: Vec<Case> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: bad JSON: {e}", path.display(), i + 1)))
        .collect();
    assert!(!cases.is_empty(), "{what} at {} is empty", path.display());
    cases
}

fn describe(h: &Hints) -> String {
    match &h.evidence {
        Some(m) => format!("{} (line {}: {})", m.id, m.line, m.text),
        None => "no match".to_string(),
    }
}

/// Scan every case, print the measures and the disagreements, and return the measures.
fn score(cases: &[Case], name: &str) -> Score {
    score_with(cases, name, true)
}

/// [`score`]; with `show` false only the aggregate figures are printed (the held-out share).
fn score_with(cases: &[Case], name: &str, show: bool) -> Score {
    let catalog = Catalog::builtin();
    let verbose = show && std::env::var_os("TRIAGE_CORPUS_VERBOSE").is_some();
    let (mut ambiguous, mut abstained) = (0usize, 0usize);
    let (mut transient, mut transient_ok) = (0usize, 0usize);
    let (mut permanent, mut permanent_ok) = (0usize, 0usize);
    let (mut scored, mut decided) = (0usize, 0usize);
    let mut report = Vec::new();
    // Disagreements by kind and by the case's labelled category (all that is shown of a
    // held-out share): wrong verdicts, abstentions on retry/fail, verdicts on ambiguous.
    let mut by_category: [std::collections::BTreeMap<&str, usize>; 3] = Default::default();
    for case in cases {
        let scheduler_state = case
            .scheduler_state
            .as_deref()
            .map(|s| s.parse().unwrap_or_else(|_| panic!("{}: unknown scheduler state {s:?}", case.id)));
        let ctx = ScanContext { exit_code: case.exit_code, scheduler_state };
        let h = catalog.scan(&case.stderr_tail, &ctx);
        let expected = match case.label.as_str() {
            "retry" => Verdict::Transient,
            "fail" => Verdict::Permanent,
            _ => Verdict::Unknown,
        };
        if case.label == "ambiguous" {
            ambiguous += 1;
            abstained += usize::from(h.verdict == Verdict::Unknown);
        }
        if expected != Verdict::Unknown {
            scored += 1;
            decided += usize::from(h.verdict != Verdict::Unknown);
            match h.verdict {
                Verdict::Transient => {
                    transient += 1;
                    transient_ok += usize::from(expected == Verdict::Transient);
                }
                Verdict::Permanent => {
                    permanent += 1;
                    permanent_ok += usize::from(expected == Verdict::Permanent);
                }
                Verdict::Unknown => {}
            }
        }
        let line = format!(
            "  {:<22} label {:<9} ({}) got {:<9} via {}",
            case.id,
            case.label,
            case.category,
            h.verdict.as_str(),
            describe(&h)
        );
        if verbose {
            eprintln!("{line}");
        }
        if h.verdict != expected {
            let kind = match (expected, h.verdict) {
                (Verdict::Unknown, _) => 2,
                (_, Verdict::Unknown) => 1,
                _ => 0,
            };
            *by_category[kind].entry(case.category.as_str()).or_default() += 1;
            if show {
                report.push(line);
            }
        }
    }

    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let s = Score {
        transient_precision: ratio(transient_ok, transient),
        permanent_precision: ratio(permanent_ok, permanent),
        coverage: ratio(decided, scored),
        abstention: ratio(abstained, ambiguous),
    };
    eprintln!("catalog {} on {name}: {} cases, {scored} labelled retry/fail", catalog.version(), cases.len());
    eprintln!("  transient precision {:.3} ({transient_ok}/{transient})", s.transient_precision);
    eprintln!("  permanent precision {:.3} ({permanent_ok}/{permanent})", s.permanent_precision);
    eprintln!("  coverage            {:.3} ({decided}/{scored})", s.coverage);
    eprintln!("  ambiguous abstained {:.3} ({abstained}/{ambiguous})", s.abstention);
    if !show {
        // Counts only: which kinds of failure the catalog misses, never which cases.
        let kinds = ["wrong verdicts", "no verdict on retry/fail", "a verdict on ambiguous"];
        for (kind, counts) in kinds.iter().zip(by_category) {
            let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
            counts.sort_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
            let list: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
            eprintln!("  {kind}, by labelled category: {}", list.join(", "));
        }
    } else {
        eprintln!("  disagreements with the label (a good answer for `ambiguous` is unknown):");
        for line in &report {
            eprintln!("{line}");
        }
    }
    s
}

/// Whether a case of `own.jsonl` belongs to the held-out share: FNV-1a (64-bit) of the id's
/// UTF-8 bytes, modulo 100, below 30. Stable across runs, platforms and file order, so a case
/// never moves between the shares, and new cases fall into either at about 30%.
fn held_out(id: &str) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % 100 < 30
}

/// The two shares of `fixtures/corpus/own.jsonl`: (tuning, held out).
fn own_shares() -> (Vec<Case>, Vec<Case>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/corpus/own.jsonl");
    load_cases(&path, "the own corpus").into_iter().partition(|c| !held_out(&c.id))
}

/// The goal for text the catalog was not written against: transient precision, permanent
/// precision, coverage, abstention on ambiguous cases.
const GOAL: [f64; 4] = [0.99, 0.98, 0.90, 0.80];

/// Print each figure beside its floor and the goal, and fail if one is below its floor.
fn check_floor(s: &Score, what: &str, floor: [f64; 4]) {
    let figures = [
        ("transient precision", s.transient_precision),
        ("permanent precision", s.permanent_precision),
        ("coverage", s.coverage),
        ("abstention on ambiguous cases", s.abstention),
    ];
    let mut misses = Vec::new();
    for (((name, got), floor), goal) in figures.into_iter().zip(floor).zip(GOAL) {
        let state = if got >= goal { "goal met" } else { "GOAL NOT MET" };
        eprintln!("  {name}: {got:.3} (floor {floor:.2}, goal {goal:.2}: {state})");
        if got < floor {
            misses.push(format!("{name} {got:.3} < floor {floor:.2}"));
        }
    }
    assert!(misses.is_empty(), "{what} fell below its floor: {}", misses.join("; "));
}

fn check(s: &Score) {
    assert!(s.transient_precision >= 0.98, "transient precision {:.3} < 0.98", s.transient_precision);
    assert!(s.permanent_precision >= 0.98, "permanent precision {:.3} < 0.98", s.permanent_precision);
    assert!(s.coverage >= 0.90, "coverage {:.3} < 0.90", s.coverage);
}

#[test]
fn builtin_catalog_scores_on_the_dev_corpus() {
    let path = corpus_path();
    let cases = load_cases(&path, "the labelled corpus");
    check(&score(&cases, &path.display().to_string()));
}

#[test]
fn builtin_catalog_scores_on_our_probes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/catalog_probes.jsonl");
    let cases = load_cases(&path, "the probe set");
    check(&score(&cases, "tests/data/catalog_probes.jsonl"));
}

/// `tests/data/catalog_vocabularies.jsonl`: one tail per member of the finite vocabularies
/// that end batch jobs (errno texts, signals, Python and Java exception classes, curl exit
/// codes, HTTP and gRPC status codes, cloud API error codes, Slurm/PBS/LSF/Grid Engine states
/// and errors, Kubernetes reasons, container runtimes, CUDA/HIP/cuDNN/NCCL results, MPI and
/// UCX errors, database error codes), each written from the table that defines it, in the form
/// a common producer prints it. Where a forum corpus samples what people happened to post,
/// this set asks whether the catalog knows every meaning of a vocabulary. Same measures as the
/// corpus, and abstention: a member whose text cannot decide must be `unknown`.
#[test]
fn builtin_catalog_scores_on_the_error_vocabularies() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/catalog_vocabularies.jsonl");
    let cases = load_cases(&path, "the vocabulary set");
    let s = score(&cases, "tests/data/catalog_vocabularies.jsonl");
    check(&s);
    assert!(s.abstention >= VOCAB_ABSTENTION, "abstention {:.3} < {VOCAB_ABSTENTION}", s.abstention);
}

/// The vocabulary set's floor on abstention (its precision and coverage are held to the
/// corpus's 0.98 / 0.98 / 0.90).
const VOCAB_ABSTENTION: f64 = 0.92;

#[test]
fn held_out_split_is_stable() {
    // Fixed points of the hash, so a change to it (which would move cases between the
    // shares and void the held-out score) fails here.
    assert!(!held_out("own-0001"));
    let (tune, held) = own_shares();
    assert_eq!((tune.len(), held.len()), (13030, 5678), "own.jsonl changed: update the counts");
}

/// The floors: the figures measured last (own.jsonl: 18,708 cases, 13,030 tuning, 5,678 held
/// out), rounded down to 0.01. **The goal ([`GOAL`]: 0.99 / 0.98 / 0.90 / 0.80) is not met on
/// the held-out share** (transient precision and coverage fall short; permanent precision and
/// abstention meet it); the floors keep main green and catch regressions. Raise them as the
/// catalog improves; lower one only when new cases join the file, and say so in the log. The
/// cases from own-0600 on came in batches gathered by people who had not seen the catalog, each
/// scored before any entry was written against it: what a new domain looks like before tuning
/// (`fixtures/corpus/README.md` gives each batch's figures, `ROUNDS.md` what each round moved).
/// Labels say what the text alone lets a careful
/// engineer decide; the first 1,019 were reviewed once more for that, then for consistency
/// between near-identical texts (`fixtures/corpus/relabels.jsonl` lists every change and
/// why): many had followed what the source thread found out later, which no text-only
/// classifier can see. Coverage was traded for abstention three times, on purpose: a glibc heap
/// abort (double free, stack smashing) is context like a segmentation fault, and so are a bare
/// refused connection (its labelled cases are ambiguous about eight to one against retry) and a
/// bare "out of memory" or ENOMEM (two to one). The coverage floors were lowered by 0.01 when
/// 439 tails from scientific codes and HPC runtimes joined (their held-out part: 0.54 coverage),
/// and the tuning share's abstention floor by 0.01 when 317 trap-heavy tails joined. The
/// held-out transient precision and coverage floors went down 0.01 when 373 tails from physics
/// computing, MPI runtimes, large-model stacks and credentials joined (their held-out part:
/// three wrong retries in eleven, 0.69 coverage, before any entry). The held-out abstention
/// and the tuning coverage floors went down 0.01 when 478 tails from imaging pipelines,
/// geospatial tools, filesystems and job-script glue joined (their held-out part: 0.56
/// coverage before any entry, 11 of 54 ambiguous cases with a verdict). The tuning share's
/// abstention floor went down 0.01 again when 212 tails from container tooling, geospatial
/// and media libraries, AI API SDKs, metrics shippers and Windows automation joined (their
/// ambiguous cases: 13 of 39 in the tuning part with a verdict, mostly bare 5xx and gRPC
/// deadlines the catalog reads as passing).
/// The held-out coverage floor went down 0.01 when 324 tails from experiment trackers, vector
/// stores, network automation, notebook and documentation builds, ML compilers, quantum
/// computing services, CFD and FEM solvers and speech pipelines joined (their held-out part:
/// 0.42 coverage before any entry, 0.44 after). The held-out abstention floor went down 0.01
/// when 176 tails from genomics workflow platforms, HPC container runtimes, job-submission
/// libraries, remote build caches, rented-GPU runners and headless simulators joined (their
/// held-out part: 15 of 22 ambiguous cases abstained; the share's figure went from 0.822 to
/// 0.820).
/// Last measured: tuning 2904/2922, 5032/5043, 7965/9099, 3381/3931; held out 1105/1134,
/// 1801/1814, 2948/4006, 1369/1672.
const TUNING_FLOOR: [f64; 4] = [0.99, 0.99, 0.86, 0.85];
const HELD_OUT_FLOOR: [f64; 4] = [0.97, 0.99, 0.73, 0.81];

#[test]
fn builtin_catalog_scores_on_the_own_tuning_share() {
    let (tune, _) = own_shares();
    let s = score(&tune, "fixtures/corpus/own.jsonl, tuning share (~70%)");
    check_floor(&s, "own.jsonl tuning share", TUNING_FLOOR);
}

/// The honest score: cases nobody tuned the catalog on. Only aggregate figures are printed.
#[test]
fn builtin_catalog_scores_on_the_own_held_out_share() {
    let (_, held) = own_shares();
    let s = score_with(&held, "fixtures/corpus/own.jsonl, HELD-OUT share (~30%, never tuned on)", false);
    check_floor(&s, "own.jsonl held-out share", HELD_OUT_FLOOR);
}
