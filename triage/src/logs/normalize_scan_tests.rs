//! Each hand-written finder against its rule's regex: the same matches on generated ASCII text
//! built from the pieces the rule looks for, and on the lines of the tests' examples.

use regex::Regex;

use super::super::normalize_reference::{IDS, NUMBER, PLURAL, TIMESTAMP};
use super::*;

/// A hand-written finder: the first match at or after a position.
type Finder = fn(&[u8], usize) -> Option<(usize, usize)>;

/// Every match of a finder, as `(start, end)` pairs.
fn found(s: &str, find: Finder) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some((start, end)) = find(s.as_bytes(), from) {
        spans.push((start, end));
        from = end;
    }
    spans
}

fn by_regex(s: &str, rule: &Regex) -> Vec<(usize, usize)> {
    rule.find_iter(s).map(|m| (m.start(), m.end())).collect()
}

/// Compares `find` with `rule` on `count` generated texts of the given pieces, and returns the
/// matched texts (so that a test can check that the generator meets each part of the rule).
#[track_caller]
fn compare(pieces: &[&str], count: usize, rule: &Regex, find: Finder) -> Vec<String> {
    let mut seed = 0x1234_5678_u64;
    let mut matched = Vec::new();
    for i in 0..count {
        let text: String = (0..1 + i % 14)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                pieces[((seed >> 33) % pieces.len() as u64) as usize]
            })
            .collect();
        let expected = by_regex(&text, rule);
        assert_eq!(found(&text, find), expected, "text: {text:?}");
        matched.extend(expected.iter().map(|&(start, end)| text[start..end].to_owned()));
    }
    matched
}

const COUNT: usize = 40_000;

#[test]
fn timestamps_match_the_regex() {
    let pieces = [
        "0",
        "1",
        "12",
        "123",
        "2024",
        "12345",
        ":",
        ".",
        ",",
        "-",
        "/",
        " ",
        "T",
        "Z",
        "+",
        "I",
        "W",
        "E",
        "F",
        "x",
        "_",
        "a",
        "E0321 ",
        "I1234 ",
        "02:07:08",
        "2:07:08",
        "02:07",
        ".5",
        "2024-03-21",
        "2024/03/21",
        "+01:00",
        "-0500",
        "+01",
        "T02:07",
        "2024-03-21T02:07:08",
        "2024-03-21 02:07:08.123",
        " 02:07:08,5",
    ];
    let matched = compare(&pieces, COUNT, &TIMESTAMP, timestamp);
    for shape in ["E0321 ", "T", "Z", "-", "/", "."] {
        assert!(matched.iter().filter(|m| m.contains(shape)).count() > 30, "{shape}");
    }
}

#[test]
fn ids_match_the_regex() {
    let pieces = [
        "job",
        "JOB",
        "Step",
        "task",
        "array task",
        "array",
        "array_task_id",
        "jobid",
        "job_id",
        "step_id",
        "StepId",
        "taskid",
        "task_id",
        " ",
        "\t",
        "\x0b",
        ":",
        "=",
        "#",
        "[",
        "]",
        "-",
        ".",
        "_",
        "1",
        "42",
        "x",
        "a",
        "batch",
        ",",
        "s",
    ];
    let matched = compare(&pieces, COUNT, &IDS, ids);
    for shape in ["array task", "_id", ".", "]", "#"] {
        assert!(matched.iter().filter(|m| m.to_ascii_lowercase().contains(shape)).count() > 20, "{shape}");
    }
}

#[test]
fn numbers_match_the_regex() {
    let pieces = [
        "exit",
        "EXIT",
        "exited",
        "ed",
        " with",
        " exit",
        " ",
        " ",
        "code",
        "Status",
        "_",
        "return",
        "rc",
        "signal",
        "sig",
        "errno",
        "error",
        "s",
        ":",
        "=",
        "#",
        "(",
        "-",
        "\t",
        "0",
        "1",
        "42",
        "3.5",
        ".",
        ",",
        "k",
        "M",
        "g",
        "t",
        "p",
        "e",
        "i",
        "b",
        "B",
        "iB",
        "bytes",
        "byte",
        "x",
        "a",
        " 8",
        " 20.5",
        "exit code ",
        "exited with ",
        "rc=",
        "error: ",
        "status (",
        " 1 ",
        "-2",
    ];
    let matched = compare(&pieces, COUNT, &NUMBER, number);
    let kept = matched.iter().filter(|m| m.starts_with(|c: char| c.is_ascii_alphabetic())).count();
    let sizes = matched.iter().filter(|m| m.ends_with(|c: char| c.is_ascii_alphabetic())).count();
    let exits = matched.iter().filter(|m| m.to_ascii_lowercase().contains("exit")).count();
    assert!(kept > 500 && sizes > 500 && exits > 100, "{kept} {sizes} {exits}");
}

#[test]
fn plurals_match_the_regex() {
    let pieces = [
        "<n> ",
        "<n> ",
        "<n>",
        " ",
        "-",
        "_",
        "s",
        "ss",
        "e",
        "event",
        "events ",
        "task",
        "tasks",
        "oom-kill ",
        "ab",
        "abc",
        "1",
        "/",
        ".",
        "x",
    ];
    let matched = compare(&pieces, COUNT, &PLURAL, plural);
    let grouped = matched.iter().filter(|m| m.matches(' ').count() >= 2).count();
    assert!(matched.len() > 1000 && grouped > 100, "{} {grouped}", matched.len());
}

#[test]
fn months_send_timestamps_to_the_regex() {
    assert!(has_month(b"Thu Mar 21 02:07:08 UTC 2024"));
    assert!(!has_month(b"2024-03-21T02:07:08 mar"));
}

#[test]
fn cheap_checks_never_rule_out_a_match() {
    use super::super::normalize_reference as reference;
    type Check<'a> = (&'a Regex, fn(&[u8]) -> bool, &'a [&'a str]);
    let checks: [Check; 5] = [
        (&reference::IPV4, may_have_ipv4, &["1.", "12.", "123.", "1", "1234", ".", ":5", " ", "a"]),
        (&reference::IPV6, may_have_ipv6, &["fe80", ":", "::", "1", "a", "g", " ", "]", "["]),
        (&reference::PATH, may_have_path, &["/", "a", " ", "=", ":", "'", "~", ".", "..", "(", ",", "x1"]),
        (&reference::FQDN, may_have_fqdn, &["a", "1", "-", ".", " ", "node023", "org", "_"]),
        (&reference::HOST_PORT, may_have_host_port, &["a", "node", "1", "-", ":", "]", "[", " ", "29500"]),
    ];
    for (rule, check, pieces) in checks {
        let mut seed = 99_u64;
        let mut matched = 0;
        for i in 0..COUNT / 4 {
            let text: String = (0..1 + i % 12)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    pieces[((seed >> 33) % pieces.len() as u64) as usize]
                })
                .collect();
            if rule.is_match(&text) {
                matched += 1;
                assert!(check(text.as_bytes()), "{rule} matches {text:?}");
            }
        }
        assert!(matched > 20, "{rule}: {matched}");
    }
    let words = [
        "on", "ON", "node", "nodes", "host", "hostname", "nodename", "nodelist", "server", "peer", "x", " ", ":", "=",
        "\t", "a1", "n023",
    ];
    let mut seed = 7_u64;
    for i in 0..COUNT / 4 {
        let text: String = (0..1 + i % 8)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                words[((seed >> 33) % words.len() as u64) as usize]
            })
            .collect();
        if reference::HOST_AFTER_WORD.is_match(&text) {
            assert!(may_have_host_after_word(text.as_bytes()), "{text:?}");
        }
    }
}
