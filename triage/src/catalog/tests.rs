//! Tests of the embedded catalog (every entry, example, counter-example and pattern) and of
//! the verdict rule on realistic tails. Load errors are tested in `tests_load.rs`.

use super::*;
use crate::model::{EntryClass, SchedulerState, SuggestedAction, Verdict};

fn scan(text: &str) -> Hints {
    Catalog::builtin().scan(text, &ScanContext::default())
}

#[test]
fn builtin_loads_with_a_dated_version() {
    let c = Catalog::builtin();
    let v = c.version();
    let parts: Vec<&str> = v.split('.').collect();
    assert_eq!(parts.len(), 3, "{v}");
    assert!(parts.iter().all(|p| p.parse::<u32>().is_ok()), "{v}");
    assert!(c.entries().len() > 60);
}

/// The embedded catalog's examples are not checked at load (user files' are): this is where
/// they are. Every example matches its entry, no counter-example does, and every pattern is
/// exercised by at least one example of its entry (no dead or untested patterns).
#[test]
fn every_builtin_example_and_pattern_checks_out() {
    let c = Catalog::builtin();
    let m = &c.inner.matcher;
    let builtin = super::load::builtin_examples();
    let none = (Vec::new(), Vec::new());
    let mut problems = Vec::new();
    for (i, e) in c.entries().iter().enumerate() {
        assert!(e.examples.is_empty() && e.counter_examples.is_empty(), "{}: examples are not kept in memory", e.id);
        let (examples, counter_examples) = builtin.get(&*e.id).unwrap_or(&none);
        if !e.patterns.is_empty() && examples.is_empty() {
            problems.push(format!("{}: no examples", e.id));
        }
        let mut used = vec![false; e.patterns.len()];
        for ex in examples {
            let hit = m.patterns_of_entry_matching(c.entries(), i, ex);
            if hit.is_empty() {
                problems.push(format!("{}: example not matched: {ex:?}", e.id));
            }
            for p in hit {
                used[p] = true;
            }
        }
        for ex in counter_examples {
            if !m.patterns_of_entry_matching(c.entries(), i, ex).is_empty() {
                problems.push(format!("{}: counter-example matched: {ex:?}", e.id));
            }
        }
        for (p, u) in used.iter().enumerate() {
            if !u {
                problems.push(format!("{}: pattern without an example: {}", e.id, e.patterns[p]));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn ids_are_unique_and_hints_are_sentences() {
    let c = Catalog::builtin();
    let mut ids = std::collections::HashSet::new();
    for e in c.entries() {
        assert!(ids.insert(&*e.id), "duplicate {}", e.id);
        assert!(e.hint.ends_with('.') && e.hint.len() > 40, "{}: {}", e.id, e.hint);
        let decisive = matches!(e.class, EntryClass::Transient | EntryClass::Permanent);
        if e.class == EntryClass::Permanent {
            assert!(matches!(e.action, SuggestedAction::Fail | SuggestedAction::Escalate), "{}", e.id);
        }
        if e.class == EntryClass::Transient {
            assert!(e.action.action() == Some(crate::model::Action::Retry), "{}", e.id);
        }
        let _ = decisive;
    }
}

/// Seed 000's two lists: each pattern, as it would appear in a log, gets the seed's class,
/// except where the module docs explain a deliberate difference.
#[test]
fn seed_000_patterns_are_covered() {
    let transient = [
        "socket error: Connection timed out",
        "DNS resolution failed for data.example.org",
        "HTTP/1.1 503 Service Unavailable",
        "GPU communication error on rank 3",
        "State: PREEMPTED",
        "JobState=NODE_FAIL",
        "State: TIMEOUT",
    ];
    for line in transient {
        assert_eq!(scan(line).verdict, Verdict::Transient, "{line}");
    }
    let permanent = [
        "SyntaxError: invalid syntax",
        "IndentationError: unexpected indent",
        "ModuleNotFoundError: No module named 'x'",
        "ImportError: cannot import name 'y'",
        "NameError: name 'z' is not defined",
        "TypeError: unsupported operand type(s)",
        "ValueError: invalid literal for int()",
        "FileNotFoundError: input.csv",
        "google.api_core.exceptions.PermissionDenied: 403 caller lacks permission",
        "AssertionError",
        "IndexError: list index out of range",
        "KeyError: 'id'",
    ];
    for line in permanent {
        assert_eq!(scan(line).verdict, Verdict::Permanent, "{line}");
    }
    // Seed 000 calls an I/O error and an unreachable network transient; they are context here
    // (module docs): the text cannot tell a passing fault from a broken disk or mount, or from
    // a node that has no route out at all.
    // A bare NCCL timeout is context too (module docs): without a sequence number nothing shows
    // whether the ranks had ever communicated; the nccl-watchdog analyzer decides when one does.
    // So is a refused connection: a service that was restarting and one with a wrong host or
    // port, or not running at all, read the same (the labelled corpus's cases of this text are
    // ambiguous by about eight to one against retry).
    for line in [
        "Connection refused to storage.internal:443",
        "connect: Network is unreachable",
        "write failed: EIO",
        "cp: error writing 'out': Input/output error",
        "NCCL timeout after 1800 seconds",
    ] {
        assert_eq!(scan(line).verdict, Verdict::Unknown, "{line}");
    }
    // Seed: "CUDA out of memory // Could be transient if memory is shared": context here.
    let h = scan("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB");
    assert_eq!(h.verdict, Verdict::Unknown);
    assert_eq!(h.category.as_deref(), Some("gpu_oom"));
    assert!(h.hint.is_some_and(|t| t.contains("batch size")));
}

#[test]
fn state_only_and_exit_code_only_entries() {
    let c = Catalog::builtin();
    let h = c.scan("", &ScanContext::scheduler_state(SchedulerState::Preempted));
    assert_eq!(h.verdict, Verdict::Transient);
    assert_eq!(h.category.as_deref(), Some("preemption"));
    let m = h.evidence.expect("evidence");
    assert_eq!((m.line, m.text.as_str()), (0, "scheduler state PREEMPTED"));

    let h = c.scan("", &ScanContext::scheduler_state(SchedulerState::OutOfMemory));
    assert_eq!(h.action, Some(SuggestedAction::RetryMoreMemory));
    let h = c.scan("", &ScanContext::scheduler_state(SchedulerState::Timeout));
    assert_eq!(h.action, Some(SuggestedAction::RetryMoreTime));

    // Exit 137 alone: context, so unknown, with the OOM hint.
    let h = c.scan("some output\n", &ScanContext::exit_code(137));
    assert_eq!(h.verdict, Verdict::Unknown);
    assert_eq!(h.category.as_deref(), Some("oom"));
    assert!(h.hint.is_some_and(|t| t.contains("OOM")));
    assert_eq!(h.matches.len(), 1);
    assert_eq!(h.matches[0].text, "exit code 137");

    // Nothing at all.
    let h = c.scan("all good\n", &ScanContext::exit_code(1));
    assert_eq!(h, Hints::unknown());
}

#[test]
fn a_text_match_beats_an_exit_code_only_context() {
    let c = Catalog::builtin();
    let h = c.scan("requests.exceptions.ReadTimeout: Read timed out", &ScanContext::exit_code(137));
    assert_eq!(h.verdict, Verdict::Transient);
    assert_eq!(h.matches.len(), 2, "{:?}", h.matches);
}

#[test]
fn a_confirmed_match_beats_a_later_text_only_one() {
    let c = Catalog::builtin();
    let text = "x: command not found\nTraceback...\nKeyError: 'a'\nConnection reset by peer\n";
    // Without context, the connection reset is last but low priority; KeyError decides.
    let h = c.scan(text, &ScanContext::default());
    assert_eq!(h.evidence.as_ref().map(|m| &*m.id), Some("python-lookup-error"));
    // Exit 127 confirms "command not found", which now decides even though it is first.
    let h = c.scan(text, &ScanContext::exit_code(127));
    let ev = h.evidence.expect("evidence");
    assert_eq!(&*ev.id, "command-not-found");
    assert_eq!(ev.line, 1);
    assert_eq!(ev.confirmed_by.as_deref(), Some("exit code 127"));
}

#[test]
fn state_only_beats_text_only() {
    let c = Catalog::builtin();
    let ctx = ScanContext::scheduler_state(SchedulerState::NodeFail);
    let h = c.scan("KeyError: 'x'\n", &ctx);
    assert_eq!(h.verdict, Verdict::Transient);
    assert_eq!(h.category.as_deref(), Some("node_failure"));
}

#[test]
fn equal_priorities_of_opposite_classes_on_two_lines_conflict() {
    // A transient and a permanent match of the same weight: the line order alone would decide,
    // so the catalog does not; both are named in the hint.
    for text in [
        "sqlite3.OperationalError: database is locked\nKeyError: 'x'\n",
        "KeyError: 'x'\nsqlite3.OperationalError: database is locked\n",
    ] {
        let h = scan(text);
        assert_eq!(h.verdict, Verdict::Unknown, "{text}");
        assert_eq!(h.action, Some(SuggestedAction::Escalate));
        let hint = h.hint.unwrap_or_default();
        assert!(hint.contains("lock-contention") && hint.contains("python-lookup-error"), "{hint}");
    }
    // The later line still decides among matches of one class.
    let h = scan("KeyError: 'x'\nValueError: bad\n");
    assert_eq!(h.verdict, Verdict::Permanent);
}

#[test]
fn a_root_cause_outranks_the_noise_after_it() {
    // Rank 0 was OOM-killed; the other ranks then time out or lose their peer.
    let text = "slurmstepd: error: Detected 1 oom-kill event(s) in step 1.0 cgroup.\n\
                [rank1] Watchdog caught collective operation timeout: WorkNCCL ran for 600000 ms\n\
                ConnectionResetError: [Errno 104] Connection reset by peer\n";
    let h = scan(text);
    assert_eq!(h.verdict, Verdict::Transient);
    assert_eq!(h.action, Some(SuggestedAction::RetryMoreMemory));
    assert_eq!(h.evidence.map(|m| m.line), Some(1));
    // A code error is not outranked by the connection resets of the other ranks.
    let h = scan("ValueError: bad shape\nBrokenPipeError: [Errno 32] Broken pipe\n");
    assert_eq!(h.verdict, Verdict::Permanent);
    // Retried network errors before "No matching distribution": the network decides.
    let h = scan(
        "WARNING: Retrying after connection broken by 'ReadTimeoutError(\"Read timed out.\")'\n\
         ERROR: No matching distribution found for numpy\n",
    );
    assert_eq!(h.verdict, Verdict::Transient);
}

#[test]
fn a_context_entry_takes_its_line_from_a_generic_one() {
    // "CUDA out of memory" also says "out of memory" (generic host OOM, -5): the specific
    // entry is the evidence named.
    let h = scan("torch.cuda.OutOfMemoryError: CUDA out of memory.");
    assert_eq!(h.verdict, Verdict::Unknown);
    assert_eq!(h.evidence.map(|m| m.id.to_string()), Some("cuda-out-of-memory".to_string()));
    assert!(h.matches.iter().any(|m| &*m.id == "out-of-memory-generic"));
}

#[test]
fn on_one_line_a_refinement_wins() {
    let h = scan("ConnectionError('Error 111 connecting to 127.0.0.1:6379. Connection refused.')");
    assert_eq!(h.verdict, Verdict::Unknown);
    let h = scan("fatal: unable to access 'https://x/': Could not resolve host: https");
    assert_eq!(h.verdict, Verdict::Permanent);
    let h = scan("API responded with status code: 429.\n  \"code\": \"insufficient_quota\"\n");
    assert_eq!(h.verdict, Verdict::Permanent);
    assert_eq!(h.category.as_deref(), Some("quota"));
}

#[test]
fn ansi_colours_do_not_hide_errors() {
    let h = scan("\x1b[31mModuleNotFoundError\x1b[0m: No module named 'x'\n");
    assert_eq!(h.verdict, Verdict::Permanent);
    assert_eq!(h.evidence.map(|m| m.text), Some("ModuleNotFoundError: No module named 'x'".into()));
}

#[test]
fn eight_bit_csi_and_lookalike_bytes_keep_lines_and_numbers() {
    // U+009B is the 8-bit CSI (bytes C2 9B); `ě` (C4 9B) ends in the same byte and is text.
    let h = scan("přeskočeno ě\n\u{9b}31mModuleNotFoundError\u{9b}0m: No module named 'x'\nkonec ě\n");
    assert_eq!(h.verdict, Verdict::Permanent);
    let evidence = h.evidence.expect("a deciding match");
    assert_eq!(evidence.text, "ModuleNotFoundError: No module named 'x'");
    assert_eq!(evidence.line, 2);
}

#[test]
fn scan_bytes_tolerates_invalid_utf8_and_crlf() {
    let c = Catalog::builtin();
    let bytes = b"\xff\xfe junk\r\nsh: 1: foo: not found\r\n";
    let h = c.scan_bytes(bytes, &ScanContext::default());
    assert_eq!(h.verdict, Verdict::Permanent);
    assert_eq!(h.evidence.map(|m| m.line), Some(2));
}

#[test]
fn matches_are_capped_but_keep_the_deciding_one() {
    let mut text = String::from("ZeroDivisionError: division by zero\n");
    for i in 0..500 {
        text.push_str(&format!("WARN Connection reset by peer ({i})\n"));
    }
    let h = scan(&text);
    assert!(h.matches.len() <= Hints::MAX_MATCHES);
    let ev = h.evidence.clone().expect("evidence");
    assert_eq!(&*ev.id, "python-arithmetic-error");
    assert!(h.matches.contains(&ev));
    // Per entry only its last lines are listed.
    let resets = h.matches.iter().filter(|m| &*m.id == "connection-dropped").count();
    assert!(resets <= Hints::MAX_LINES_PER_ENTRY);
    assert_eq!(h.matches.last().map(|m| m.line), Some(501));
}

#[test]
fn long_lines_are_cut_in_the_listing() {
    let line = format!("KeyError: '{}'", "x".repeat(5000));
    let h = scan(&line);
    let text = h.evidence.expect("evidence").text;
    assert!(text.chars().count() <= Hints::MAX_TEXT_CHARS + 1);
    assert!(text.ends_with('…'));
}

#[test]
fn hints_serialize_to_the_design_shape() {
    let h = scan("KeyError: 'x'");
    let v = serde_json::to_value(&h).expect("json");
    for key in ["verdict", "category", "action", "strategy", "hint", "evidence", "matches"] {
        assert!(v.get(key).is_some(), "{key} missing in {v}");
    }
    assert_eq!(v["verdict"], "permanent");
    assert_eq!(v["action"], "fail");
    assert_eq!(v["strategy"], "abort");
    let m = &v["matches"][0];
    for key in ["id", "class", "category", "line", "text"] {
        assert!(m.get(key).is_some(), "{key} missing in {m}");
    }
    assert_eq!(m["class"], "permanent");
    let none = serde_json::to_value(Hints::unknown()).expect("json");
    assert_eq!(none["verdict"], "unknown");
    assert!(none["category"].is_null() && none["evidence"].is_null());
    let schema = schemars::schema_for!(Hints);
    let s = serde_json::to_string(&schema).expect("schema");
    assert!(s.contains("evidence") && s.contains("matches"));
}

#[test]
fn context_from_an_attempt_uses_the_signal_convention() {
    let a: crate::model::Attempt = serde_json::from_value(serde_json::json!({
        "attempt_id": 1, "return_code": -9, "signal": 9, "scheduler_state": "OUT_OF_MEMORY"
    }))
    .expect("attempt");
    let ctx = ScanContext::from_attempt(&a);
    assert_eq!(ctx.exit_code, Some(137));
    assert_eq!(ctx.scheduler_state, Some(SchedulerState::OutOfMemory));
    // A kill with memory evidence (here the scheduler's OUT_OF_MEMORY): the sigkill analyzer.
    let h = Catalog::builtin().scan("Killed\n", &ctx);
    let ev = h.evidence.expect("evidence");
    assert_eq!(&*ev.id, "sigkill/memory");
    assert_eq!(ev.confirmed_by.as_deref(), Some("exit code 137"));

    let b: crate::model::Attempt =
        serde_json::from_value(serde_json::json!({"attempt_id": 2, "return_code": 1})).expect("attempt");
    assert_eq!(ScanContext::from_attempt(&b), ScanContext::exit_code(1));
}
