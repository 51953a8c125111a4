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
    let (m, entries) = (&c.inner.matcher, c.entries());
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
        for (i, ex) in analyzer.examples.iter().enumerate() {
            texts.push((format!("analyzer {a} example {i}"), ex.text.to_string()));
        }
    }
    // Half the texts each on two threads (the plain set's lazy DFA, one cache per thread, is
    // most of the time; see `Matcher::line_matches_plain`).
    let compare = |texts: &[(String, String)], half: usize| {
        let mut lines_matched = 0;
        for (name, tail) in texts.iter().skip(half).step_by(2) {
            let text = strip_ansi(tail);
            let fast = m.line_matches(entries, &text);
            let plain = m.line_matches_plain(entries, &text);
            assert_eq!(fast, plain, "{name}");
            lines_matched += fast.len();
            // The rest of the scan is shared; the hints are compared too, for good measure.
            let ctx = ScanContext::exit_code(1);
            let plain_hints = scan::scan_with(c.entries(), m, tail, &ctx, scan::Matching::Plain);
            assert_eq!(c.scan(tail, &ctx), plain_hints, "{name}");
        }
        lines_matched
    };
    let lines_matched: usize = std::thread::scope(|s| {
        let halves = [s.spawn(|| compare(&texts, 0)), s.spawn(|| compare(&texts, 1))];
        halves.map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).iter().sum()
    });
    assert!(lines_matched > 1000, "{lines_matched}");
}

#[test]
fn a_long_repetitive_tail_scans_as_the_plain_scan_with_the_last_lines_kept() {
    // The prefiltered scan goes from the last line back and stops trying an entry (or an
    // analyzer) once it has the lines it keeps; the plain scan tries every line. Here an entry
    // and an analyzer match far more lines than are kept.
    let c = Catalog::builtin();
    let m = &c.inner.matcher;
    let mut text = String::from("ZeroDivisionError: division by zero\n");
    for i in 0..300 {
        text.push_str(&format!("WARN Connection reset by peer ({i})\n"));
        if i % 3 == 0 {
            text.push_str(&format!(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {}.00 GiB (GPU 0; 79.15 GiB total capacity; 70.02 GiB already allocated)\n",
                i + 100
            ));
        }
    }
    let ctx = ScanContext::exit_code(1);
    let fast = c.scan(&text, &ctx);
    assert_eq!(fast, scan::scan_with(c.entries(), m, &text, &ctx, scan::Matching::Plain));
    let resets: Vec<usize> = fast.matches.iter().filter(|h| &*h.id == "connection-dropped").map(|h| h.line).collect();
    let last_lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("Connection reset"))
        .map(|(i, _)| i + 1)
        .collect::<Vec<_>>()
        .split_off(300 - Hints::MAX_LINES_PER_ENTRY);
    assert_eq!(resets, last_lines, "the entry's last lines, in order");
    assert!(fast.matches.iter().any(|h| h.id.starts_with("cuda-oom")), "{:?}", fast.matches);
}
