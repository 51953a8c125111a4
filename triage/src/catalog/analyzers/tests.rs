//! Every analyzer's examples and counter-examples, alone and through the catalog's scan, and
//! the bookkeeping: unique ids that no entry can take, every outcome and trigger exercised.

use super::*;
use crate::catalog::{Catalog, ScanContext};

/// A trigger compiled as the scan compiles it (bytes, ASCII classes).
fn trigger(t: &str) -> regex::bytes::Regex {
    crate::catalog::scan::compile(t).unwrap_or_else(|e| panic!("trigger {t:?}: {e}"))
}

/// The lines of `text` that wake `analyzer`, as the scan finds them, and per line the bits of
/// the triggers that matched it.
fn woken(analyzer: &Analyzer, lines: &[&str]) -> (Vec<usize>, Vec<u32>) {
    let triggers: Vec<regex::bytes::Regex> = analyzer.triggers.iter().map(|t| trigger(t)).collect();
    let bits = |line: &str| {
        triggers.iter().enumerate().filter(|(_, t)| t.is_match(line.as_bytes())).map(|(k, _)| 1u32 << k).sum::<u32>()
    };
    lines.iter().enumerate().map(|(i, l)| (i, bits(l))).filter(|&(_, b)| b != 0).unzip()
}

#[test]
fn every_analyzer_example_checks_out() {
    let catalog = Catalog::builtin();
    let mut problems = Vec::new();
    for (a, analyzer) in ALL.iter().enumerate() {
        let outcomes = analyzer.outcomes;
        let ids: Vec<&str> = outcomes.iter().map(|o| o.id).collect();
        let mut reached = vec![false; outcomes.len()];
        let mut triggered = vec![false; analyzer.triggers.len()];
        for ex in analyzer.examples {
            let lines: Vec<&str> = ex.text.split('\n').collect();
            for (t, trigger) in analyzer.triggers.iter().enumerate() {
                triggered[t] |= lines.iter().any(|l| self::trigger(trigger).is_match(l.as_bytes()));
            }
            let ctx = ScanContext { exit_code: ex.exit_code, scheduler_state: None };
            let (w, t) = woken(analyzer, &lines);
            let got = if w.is_empty() {
                None
            } else {
                (analyzer.analyze)(&Input { lines: &lines, woken: &w, triggered: &t, ctx: &ctx })
            };
            let got_id = got.as_ref().and_then(|f| ids.get(f.outcome).copied());
            if got_id != ex.expect {
                problems.push(format!("analyzer {a} ({:?}): {:?} reached {got_id:?}", ids, ex.text));
            }
            if let Some(f) = &got {
                if let Some(r) = reached.get_mut(f.outcome) {
                    *r = true;
                }
                if f.line >= lines.len() {
                    problems.push(format!("{:?}: finding on line {} of {}", ex.text, f.line, lines.len()));
                }
            }
            // Through the catalog: the finding is listed, or none of the analyzer's outcomes.
            let h = catalog.scan(ex.text, &ctx);
            let listed: Vec<&str> = h.matches.iter().map(|m| &*m.id).filter(|id| ids.contains(id)).collect();
            match ex.expect {
                Some(id) if listed != [id] => {
                    problems.push(format!("scan of {:?} listed {listed:?}, not {id}", ex.text))
                }
                None if !listed.is_empty() => problems.push(format!("scan of {:?} listed {listed:?}", ex.text)),
                _ => {}
            }
        }
        for (o, r) in reached.iter().enumerate() {
            if !r {
                problems.push(format!("outcome {} is reached by no example", ids[o]));
            }
        }
        for (t, hit) in triggered.iter().enumerate() {
            if !hit {
                problems.push(format!("trigger without an example: {}", analyzer.triggers[t]));
            }
        }
        if !analyzer.examples.iter().any(|e| e.expect.is_none()) {
            problems.push(format!("analyzer {a} ({ids:?}) has no counter-example"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_trigger_has_its_bit() {
    for a in ALL {
        assert!(a.triggers.len() <= MAX_TRIGGERS, "{:?}: more triggers than bits", a.outcomes[0].id);
    }
}

#[test]
fn outcome_ids_are_unique_and_cannot_be_user_ids() {
    let catalog = Catalog::builtin();
    let mut seen = std::collections::HashSet::new();
    for e in catalog.entries() {
        assert!(seen.insert(e.id.clone()), "duplicate id {}", e.id);
    }
    for a in ALL {
        for o in a.outcomes {
            assert!(o.id.contains('/') && !crate::catalog::entry::valid_id(o.id), "{}", o.id);
            let e = catalog.entry(o.id).expect("listed among the entries");
            assert_eq!(e.source, "analyzer");
            assert!(o.hint.ends_with('.') && o.hint.len() > 40, "{}", o.id);
        }
    }
}

#[test]
fn no_trigger_matches_an_empty_line() {
    for a in ALL {
        for t in a.triggers {
            assert!(!trigger(t).is_match(b""), "{t}");
        }
    }
}

#[test]
fn sizes_parse_in_binary_units() {
    assert_eq!(bytes("2", "GiB"), Some(2.0 * 1024.0 * 1024.0 * 1024.0));
    assert_eq!(bytes("512", "m"), Some(512.0 * 1024.0 * 1024.0));
    assert_eq!(bytes("38427376", "kb"), Some(38427376.0 * 1024.0));
    assert_eq!(bytes("7", "B"), Some(7.0));
    assert_eq!(bytes("1", "parsecs"), None);
}

/// Each analyzer lists every lazy regex its module declares in its `regexes`, which `warm_up`
/// compiles (a regex left out would compile inside a listing).
#[test]
fn every_analyzer_lists_its_regexes() {
    let sources = [
        ("allocation_size", include_str!("allocation_size.rs")),
        ("cloud_quota", include_str!("cloud_quota.rs")),
        ("crashloop", include_str!("crashloop.rs")),
        ("cuda_oom", include_str!("cuda_oom.rs")),
        ("go_panic", include_str!("go_panic.rs")),
        ("java_heap", include_str!("java_heap.rs")),
        ("missing_output", include_str!("missing_output.rs")),
        ("nccl_watchdog", include_str!("nccl_watchdog.rs")),
        ("retry_after", include_str!("retry_after.rs")),
        ("sigkill", include_str!("sigkill.rs")),
        ("tensor_oom", include_str!("tensor_oom.rs")),
        ("time_limit", include_str!("time_limit.rs")),
        ("token_limit", include_str!("token_limit.rs")),
        ("truncated_download", include_str!("truncated_download.rs")),
        ("xla_memory", include_str!("xla_memory.rs")),
    ];
    let mut problems = Vec::new();
    let mut total = 0;
    for (module, text) in sources {
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim_start_matches("pub(super) ").strip_prefix("static ")?.split_once(": Lazy"))
            .map(|(name, _)| name)
            .collect();
        let listed: Vec<&str> = text
            .split("static ANALYZER: Analyzer")
            .nth(1)
            .and_then(|rest| rest.split("regexes: &[").nth(1))
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_default()
            .split(',')
            .map(|n| n.trim().trim_start_matches('&'))
            .filter(|n| !n.is_empty())
            .collect();
        let mut sorted = (declared.clone(), listed.clone());
        sorted.0.sort_unstable();
        sorted.1.sort_unstable();
        if sorted.0 != sorted.1 {
            problems.push(format!("{module}: declares {declared:?}, lists {listed:?}"));
        }
        total += declared.len();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The lists are what `warm_up` compiles: as many regexes as the modules declare.
    assert_eq!(ALL.iter().map(|a| a.regexes.len()).sum::<usize>(), total);
    assert!(total >= 48, "{total}");
    assert_eq!(ALL.len(), sources.len(), "every analyzer module is in `ALL`");
    let mod_rs = include_str!("mod.rs");
    // A new analyzer file must be added to `sources` above (every module but the tests and
    // the regex type is one).
    let modules: Vec<&str> = mod_rs
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| !matches!(*m, "tests" | "lean"))
        .collect();
    assert_eq!(modules, sources.iter().map(|(m, _)| *m).collect::<Vec<_>>(), "analyzer modules and `sources` differ");
}
