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
//! Both print the figures and every disagreement with the label (run with `--nocapture` to
//! see them on success). `TRIAGE_CORPUS_VERBOSE=1` prints every case's deciding match;
//! `TRIAGE_CORPUS=FILE` scores another file of the same format in place of the corpus.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use triage::catalog::{Catalog, Hints, ScanContext};
use triage::model::Verdict;

#[derive(Deserialize)]
struct Case {
    id: String,
    exit_code: Option<i64>,
    stderr_tail: String,
    label: String,
    category: String,
}

/// The three measures of the corpus README.
struct Score {
    transient_precision: f64,
    permanent_precision: f64,
    coverage: f64,
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
    let catalog = Catalog::builtin();
    let verbose = std::env::var_os("TRIAGE_CORPUS_VERBOSE").is_some();
    let (mut transient, mut transient_ok) = (0usize, 0usize);
    let (mut permanent, mut permanent_ok) = (0usize, 0usize);
    let (mut scored, mut decided) = (0usize, 0usize);
    let mut report = Vec::new();
    for case in cases {
        let ctx = ScanContext { exit_code: case.exit_code, scheduler_state: None };
        let h = catalog.scan(&case.stderr_tail, &ctx);
        let expected = match case.label.as_str() {
            "retry" => Verdict::Transient,
            "fail" => Verdict::Permanent,
            _ => Verdict::Unknown,
        };
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
            report.push(line);
        }
    }

    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let s = Score {
        transient_precision: ratio(transient_ok, transient),
        permanent_precision: ratio(permanent_ok, permanent),
        coverage: ratio(decided, scored),
    };
    eprintln!("catalog {} on {name}: {} cases, {scored} labelled retry/fail", catalog.version(), cases.len());
    eprintln!("  transient precision {:.3} ({transient_ok}/{transient})", s.transient_precision);
    eprintln!("  permanent precision {:.3} ({permanent_ok}/{permanent})", s.permanent_precision);
    eprintln!("  coverage            {:.3} ({decided}/{scored})", s.coverage);
    eprintln!("  disagreements with the label (a good answer for `ambiguous` is unknown):");
    for line in &report {
        eprintln!("{line}");
    }
    s
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
