//! The prefiltered scan finds exactly the plain scan's matches: every corpus tail (every
//! `*.jsonl` of `fixtures/corpus/`), every probe, every example and counter-example of the
//! catalog and of the analyzers, line by line (which patterns match which line), and the same
//! hints.

use std::path::PathBuf;

use super::*;

/// Every `stderr_tail` of the corpus files and the probes.
fn corpus_tails() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("../fixtures/corpus"))
        .expect("fixtures/corpus is in the repository")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files.push(root.join("tests/data/catalog_probes.jsonl"));
    let mut tails = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("corpus file readable");
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).expect("corpus line is JSON");
            if let Some(t) = v.get("stderr_tail").and_then(|t| t.as_str()) {
                tails.push((format!("{}:{}", file.display(), n + 1), t.to_string()));
            }
        }
    }
    assert!(tails.len() > 500, "corpus too small: {}", tails.len());
    tails
}

#[test]
fn prefiltered_scan_matches_the_plain_scan_on_every_corpus_file() {
    let c = Catalog::builtin();
    let m = &c.inner.matcher;
    let mut texts = corpus_tails();
    // Every example and counter-example, as one text (each pattern's own lines), with CRLF.
    let examples: Vec<String> =
        super::load::builtin_examples().into_values().flat_map(|(e, c)| e.into_iter().chain(c)).collect();
    texts.push(("examples".into(), examples.join("\n")));
    texts.push(("examples, CRLF".into(), examples.join("\r\n")));
    // Every pattern alone and in upper case: each names its own literals, so every
    // pattern's prefilter need is exercised at least once (also in another case).
    let patterns: Vec<String> = c.entries().iter().flat_map(|e| e.patterns.clone()).collect();
    texts.push(("patterns".into(), patterns.join("\n")));
    texts.push(("patterns, upper case".into(), patterns.join("\n").to_uppercase()));
    // The analyzers' examples (multi-line texts of their own).
    for (a, analyzer) in analyzers::ALL.iter().enumerate() {
        for (i, ex) in analyzer.examples().iter().enumerate() {
            texts.push((format!("analyzer {a} example {i}"), ex.text.to_string()));
        }
    }
    let mut lines_matched = 0;
    for (name, tail) in &texts {
        let text = strip_ansi(tail);
        let fast = m.line_matches(&text);
        let plain = m.line_matches_plain(&text);
        assert_eq!(fast, plain, "{name}");
        lines_matched += fast.len();
        // The rest of the scan is shared; the hints are compared too, for good measure.
        let ctx = ScanContext::exit_code(1);
        let plain_hints = scan::scan_with(c.entries(), m, tail, &ctx, scan::Matching::Plain);
        assert_eq!(c.scan(tail, &ctx), plain_hints, "{name}");
    }
    assert!(lines_matched > 1000, "{lines_matched}");
}
