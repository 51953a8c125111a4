//! Embeds the default catalog without its examples.
//!
//! `catalog/default.toml` keeps each entry's examples and counter-examples beside its patterns,
//! where a reviewer reads them, and the test suite checks every one. A running process never
//! needs them (they are checked by the tests, not at each start), yet parsing the file touches
//! every byte of it: about half its text is examples, and each process paid for those pages
//! and for their parsing. This script writes `default.rules.toml` to `OUT_DIR`: the same file
//! with each `examples` / `counter_examples` value replaced by `[]` followed by as many line
//! breaks as the value had, so every entry stays on the line it is on in the source (a load
//! error names that line). The full file is embedded too, read only where the examples are
//! needed (a user file that changes an embedded entry's patterns).
//!
//! It also writes `needs.bin`: what each pattern of the catalog needs for the scan's literal
//! prefilter, and the anchors the prefilter searches for (`src/catalog/need.rs`, included here,
//! so the table is exactly what a load would work out). Parsing and walking about two thousand
//! regexes was most of every start's time; a load now looks each pattern up, and analyzes only
//! the patterns the table lacks (a user's).

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

// The pattern analysis the scan runs, and what it reads: the same files as the library's
// `catalog` modules (they refer to each other as `super::`, the root here).
#[allow(dead_code)]
#[path = "src/catalog/common_grams.rs"]
mod common_grams;
#[allow(dead_code)]
#[path = "src/catalog/freq.rs"]
mod freq;
#[allow(dead_code)]
#[path = "src/catalog/hir_walk.rs"]
mod hir_walk;
#[allow(dead_code)]
#[path = "src/catalog/need.rs"]
mod need;
#[allow(dead_code)]
#[path = "src/catalog/word_edges.rs"]
mod word_edges;

/// The library files this script runs: the `#[path]` modules above, whose attribute takes only a
/// literal, so the list is written twice. Keep the two in step (a file missing here would not
/// rebuild the table when it changes).
const ANALYSIS_SOURCES: &[&str] = &[
    "src/catalog/common_grams.rs",
    "src/catalog/freq.rs",
    "src/catalog/hir_walk.rs",
    "src/catalog/need.rs",
    "src/catalog/word_edges.rs",
];

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    entry: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    patterns: Vec<String>,
    examples: Option<Spanned<toml::Value>>,
    counter_examples: Option<Spanned<toml::Value>>,
}

fn main() {
    let source = Path::new("catalog/default.toml");
    println!("cargo::rerun-if-changed={}", source.display());
    for file in ANALYSIS_SOURCES {
        println!("cargo::rerun-if-changed={file}");
    }
    let text = std::fs::read_to_string(source).unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    // A file that does not parse is embedded as it is: loading it then reports the error with
    // its line and column, in the tests that load the embedded catalog (and the needs table
    // is empty: every pattern is analyzed at load).
    let parsed = toml::from_str::<File>(&text).ok();
    let needs = need::write_table(parsed.iter().flat_map(|f| &f.entry).flat_map(|e| &e.patterns).map(String::as_str));
    let stripped = match parsed {
        Some(file) => {
            let mut spans: Vec<Range<usize>> = file
                .entry
                .iter()
                .flat_map(|e| [&e.examples, &e.counter_examples])
                .flatten()
                .map(Spanned::span)
                .collect();
            spans.sort_by_key(|s| s.start);
            without(&text, &spans)
        }
        None => text.clone(),
    };
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let target = Path::new(&out).join("default.rules.toml");
    std::fs::write(&target, stripped).unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
    let target = Path::new(&out).join("needs.bin");
    std::fs::write(&target, needs).unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
}

/// `text` with each span (sorted, disjoint) replaced by `[]` and the span's line breaks.
fn without(text: &str, spans: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len() / 2);
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        out.push_str("[]");
        out.extend(text[span.clone()].matches('\n').map(|_| '\n'));
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}
