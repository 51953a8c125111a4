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

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    entry: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    examples: Option<Spanned<toml::Value>>,
    counter_examples: Option<Spanned<toml::Value>>,
}

fn main() {
    let source = Path::new("catalog/default.toml");
    println!("cargo::rerun-if-changed={}", source.display());
    let text = std::fs::read_to_string(source).unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    // A file that does not parse is embedded as it is: loading it then reports the error with
    // its line and column, in the tests that load the embedded catalog.
    let stripped = match toml::from_str::<File>(&text) {
        Ok(file) => {
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
        Err(_) => text.clone(),
    };
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let target = Path::new(&out).join("default.rules.toml");
    std::fs::write(&target, stripped).unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
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
