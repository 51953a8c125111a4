//! The regex-only `normalize_line` and signature of before the fast scans, kept for the tests
//! only: the fast implementation must give the same text, line for line, and the same
//! fingerprints, tail for tail.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::logs::{Fingerprint, Signature};

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in normalization patterns are valid")
}

const HOSTY: &str = r"[A-Za-z][\w\-\[\],]*\d[\w\-\[\],]*";

/// Timestamps, as alternatives of one pattern (leftmost wins, then the first listed): glog and
/// c10 prefixes, ISO 8601, syslog and `date` stamps, bare times.
pub(super) static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    re(&[
        r"\b[IWEF]\d{3,4} \d{1,2}:\d{2}:\d{2}(?:\.\d+)?",
        r"\b\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z\b|[+-]\d{2}:?\d{2}\b)?",
        r"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},?(?:\s+\d{4})?\s+\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?:\s+(?:UTC|GMT|[A-Z][SD]T|CES?T|[+-]\d{4}))?(?:\s+\d{4}\b)?",
        r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
    ]
    .join("|"))
});
static QUOTED: LazyLock<Regex> = LazyLock::new(|| re(r#"\B'[^'\n]*'\B|\B"[^"\n]*"\B|`[^`\n]*`|‘[^’\n]*’|“[^”\n]*”"#));
static URL: LazyLock<Regex> = LazyLock::new(|| re(r#"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>]+"#));
static UUID: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"));
pub(super) static IPV4: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b"));
pub(super) static IPV6: LazyLock<Regex> =
    LazyLock::new(|| re(r"\[?\b[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){1,6}:[0-9a-fA-F]{1,4}\b\]?"));
pub(super) static PATH: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?:^|[\s=:'"(\[,])(?:~|\.{1,2})?(?:/[^\s/:'"(),\[\]<>]+)+/?"#));
pub(super) static FQDN: LazyLock<Regex> = LazyLock::new(|| re(r"\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+){2,}\b"));
static NUMBERED_HOST: LazyLock<Regex> = LazyLock::new(|| re(r"^[A-Za-z]+(?:-[A-Za-z]+)*-?\d+(?:-\d+)*$"));
pub(super) static HOST_AFTER_WORD: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(r"(?i)\b(?:on|node|nodes|host|hostname|nodename|nodelist|server|peer)\b[\s:=]+{HOSTY}"))
});
pub(super) static HOST_PORT: LazyLock<Regex> =
    LazyLock::new(|| re(r"\[?\b[A-Za-z][A-Za-z0-9-]*\d[A-Za-z0-9-]*\]?:\d{1,5}\b\]?"));
static HOST_TASK: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"\b{HOSTY}: tasks? [\d,\-]+:")));
static HOST_AT: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"@{HOSTY}")));
pub(super) static IDS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:job|step|task|array task|array_task_id|jobid|job_id|step_?id|task_?id)\b[\s:=#]*[\w\[\]-]*\d[\w\[\]-]*(?:\.[\w\[\]-]+)*",
    )
});
static HEX: LazyLock<Regex> = LazyLock::new(|| re(r"\b0[xX][0-9a-fA-F]+\b|\b[0-9a-fA-F]{6,}\b"));
static TMP: LazyLock<Regex> = LazyLock::new(|| re(r"\btmp(?:\.[A-Za-z0-9]{6,}|[A-Za-z0-9_]{6,})\b"));
/// Numbers: one after a keyword whose value matters (kept), a memory size (`<size>`), or any
/// other number (`<n>`); the kind is told by the match's first and last characters.
pub(super) static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    re(&[
        // ASCII rules (`-u`), so that `shape_key` can tell these keywords byte by byte.
        r"(?i-u:\b(?:exit(?:ed)?(?: with)?(?: exit)? ?(?:code|status)|exit_?code|return ?code|returncode|rc|signal|sig|errno|status|code|error)\b[\s:=#(]*-?[0-9]+)",
        r"(?i:\b\d+(?:\.\d+)?(?:\s?(?:[kmgtpe]i?b|bytes?)|[kmgt])\b)",
        r"\d+(?:[.,]\d+)*",
    ]
    .join("|"))
});
pub(super) static PLURAL: LazyLock<Regex> = LazyLock::new(|| re(r"<n> (?:[\w-]+ )?\w{3,}[^s\W]s\b"));
/// One line with its noise folded, as the regex-only implementation did it.
pub fn normalize_line(line: &str) -> String {
    let line = last_rewrite(line);
    let mut s = if line.contains('\x1b') { strip_ansi_escapes::strip_str(line) } else { line.to_owned() };
    if !s.is_ascii() {
        s.retain(|c| !('\u{2580}'..='\u{259f}').contains(&c));
    }
    // Replacements are computed from the matched text alone: resolving capture groups costs
    // more than the whole search on lines this short. A rule that cannot match is not run.
    s = apply(s, &TIMESTAMP, |_| "<ts>".into());
    s = apply(s, &QUOTED, |_| "<str>".into());
    s = apply(s, &URL, |_| "<url>".into());
    if s.contains('-') {
        s = apply(s, &UUID, |_| "<uuid>".into());
    }
    let dots = count(&s, b'.');
    if dots >= 3 {
        s = apply(s, &IPV4, |_| "<ip>".into());
    }
    let colons = count(&s, b':');
    if colons >= 2 {
        s = apply(s, &IPV6, |m| {
            let digit = m.bytes().any(|b| b.is_ascii_digit());
            let ipv6 = digit && (m.contains("::") || m.matches(':').count() >= 5);
            if ipv6 { "<ip>".into() } else { m.into() }
        });
    }
    s = apply(s, &PATH, |m| {
        // The match starts with the character before the path, if there is one.
        let path_at = usize::from(!m.starts_with(['/', '~', '.']));
        let base = if m.ends_with('/') { "" } else { m.rsplit('/').next().unwrap_or("") };
        format!("{}<path>/{base}", &m[..path_at]).into()
    });
    if dots >= 2 {
        s = apply(s, &FQDN, |m| if is_fqdn(m) { "<host>".into() } else { m.into() });
    }
    s = apply(s, &HOST_AFTER_WORD, |m| {
        let host_at = m.rfind([' ', '\t', ':', '=']).map_or(0, |i| i + 1);
        format!("{}<host>", &m[..host_at]).into()
    });
    if colons >= 1 {
        s = apply(s, &HOST_PORT, |m| {
            let open = if m.starts_with('[') { "[" } else { "" };
            let colon = m.rfind(':').unwrap_or(0);
            let inner_close = if m[..colon].ends_with(']') { "]" } else { "" };
            let outer_close = if m.ends_with(']') { "]" } else { "" };
            format!("{open}<host>{inner_close}:<n>{outer_close}").into()
        });
        s = apply(s, &HOST_TASK, |m| format!("<host>{}", &m[m.find(':').unwrap_or(0)..]).into());
    }
    s = apply(s, &HOST_AT, |_| "@<host>".into());
    s = apply(s, &IDS, |m| {
        let value_at = m
            .rfind([' ', '\t', ':', '=', '#'])
            .map(|i| i + 1)
            .unwrap_or_else(|| m.find(|c: char| !c.is_ascii_alphabetic() && c != '_').unwrap_or(m.len()));
        format!("{}<id>", &m[..value_at]).into()
    });
    if has_hex_run(&s) {
        s = apply(s, &HEX, |m| {
            let digit = m.bytes().any(|b| b.is_ascii_digit());
            let alpha = m.bytes().any(|b| b.is_ascii_alphabetic());
            let prefixed = m.starts_with("0x") || m.starts_with("0X");
            if prefixed || (digit && alpha) { "<hex>".into() } else { m.into() }
        });
    }
    s = apply(s, &TMP, |_| "<tmp>".into());
    s = apply(s, &NUMBER, |m| {
        if !m.starts_with(|c: char| c.is_ascii_digit()) {
            m.into() // a number after `exit code` and the like: kept
        } else if m.ends_with(|c: char| c.is_ascii_alphabetic()) {
            "<size>".into()
        } else {
            "<n>".into()
        }
    });
    s = apply(s, &PLURAL, |m| m[..m.len() - 1].to_owned().into());
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// What a terminal would show of a line rewritten with carriage returns: its last non-blank
/// part (a CR LF ending is not a rewrite).
fn last_rewrite(line: &str) -> &str {
    let line = line.trim_end_matches(['\r', '\n']);
    line.rsplit('\r').find(|part| !part.trim().is_empty()).unwrap_or("")
}

/// A name with three or more dot-separated labels that is a host, not a module path or a
/// version: its first label looks like a numbered host (`node023.cluster.local`,
/// `gpu-17.hpc.example`), or its last label is a common top-level domain.
fn is_fqdn(name: &str) -> bool {
    const TLDS: &[&str] = &[
        "com",
        "org",
        "net",
        "edu",
        "gov",
        "mil",
        "int",
        "io",
        "local",
        "internal",
        "lan",
        "localdomain",
        "cluster",
        "ai",
        "dev",
        "cloud",
        "us",
        "uk",
        "de",
        "fr",
        "eu",
        "ch",
        "jp",
        "cn",
    ];
    let first = name.split('.').next().unwrap_or("");
    let last = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    NUMBERED_HOST.is_match(first) || TLDS.contains(&last.as_str())
}

fn count(s: &str, byte: u8) -> usize {
    s.bytes().filter(|&b| b == byte).count()
}

/// Whether `s` may hold a [`HEX`] match: `0x`, or six hexadecimal digits in a row.
fn has_hex_run(s: &str) -> bool {
    let mut run = 0;
    for b in s.bytes() {
        run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= 6 {
            return true;
        }
    }
    s.contains("0x") || s.contains("0X")
}

/// Replaces every match of `rule` in `s` by `replace(matched text)`.
fn apply(s: String, rule: &Regex, replace: impl Fn(&str) -> Cow<'_, str>) -> String {
    let mut out = String::new();
    let mut last = 0;
    for m in rule.find_iter(&s) {
        out.push_str(&s[last..m.start()]);
        out.push_str(&replace(m.as_str()));
        last = m.end();
    }
    if last == 0 && out.is_empty() {
        return s;
    }
    out.push_str(&s[last..]);
    out
}

// The signature's steps, as they were.

const REGION_LINES: usize = 8;
const MAX_SCANNED_LINES: usize = 5000;
const VERSION_TAG: &str = "triage-signature-v1";
const SUMMARY_CHARS: usize = 200;

fn shape_key(line: &str) -> Option<Vec<u8>> {
    const KEYWORDS: [&[u8]; 8] = [b"exit", b"return", b"rc", b"sig", b"errno", b"status", b"code", b"error"];
    let bytes = line.as_bytes();
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let keyword_at = |i: usize| {
        matches!(bytes[i] | 0x20, b'e' | b'r' | b's' | b'c')
            && (i == 0 || !word_byte(bytes[i - 1]))
            && KEYWORDS.iter().any(|k| bytes[i..].get(..k.len()).is_some_and(|w| w.eq_ignore_ascii_case(k)))
    };
    if (0..bytes.len()).any(keyword_at) {
        return None;
    }
    Some(bytes.iter().map(|&b| if (b'1'..=b'9').contains(&b) { b'1' } else { b }).collect())
}

/// Signature, summary and key lines in one pass (what grouping needs).
pub fn fingerprint(tail: &str, exit_code: Option<i64>) -> Fingerprint {
    let region = region(tail);
    let kinds: Vec<Kind> = region.iter().map(|l| kind(l)).collect();
    let has_key = kinds.iter().any(|&k| k >= Kind::Context);
    let key_lines: Vec<String> =
        region.iter().zip(&kinds).filter(|&(_, &k)| !has_key || k >= Kind::Context).map(|(l, _)| l.clone()).collect();
    let mut hash = Fnv1a::new();
    hash.write(VERSION_TAG);
    for line in &key_lines {
        hash.write("\n");
        hash.write(line);
    }
    if !has_key {
        match exit_code {
            Some(code) => hash.write(&format!("\nexit={code}")),
            None => hash.write("\nexit=unknown"),
        }
    }
    let summary = match region.iter().zip(&kinds).max_by_key(|&(_, &k)| k) {
        None => "no stderr".to_owned(),
        Some((line, _)) => cut_chars(line, SUMMARY_CHARS),
    };
    let signature = format!("sig-{:016x}", hash.0).parse::<Signature>().expect("a signature is well formed");
    Fingerprint { signature, summary, key_lines }
}

/// The last [`REGION_LINES`] distinct normalized lines, oldest first, without progress bars.
fn region(tail: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    // Lines that differ only in digit values normalize alike: skip the normalization of a
    // shape already met (a log's counters and timestamps make most of its lines such repeats).
    let mut seen_shapes = HashSet::new();
    let mut region = Vec::with_capacity(REGION_LINES);
    for raw in tail.lines().rev().take(MAX_SCANNED_LINES) {
        if let Some(shape) = shape_key(raw)
            && !seen_shapes.insert(shape)
        {
            continue;
        }
        let line = normalize_line(raw);
        if line.is_empty() || PROGRESS.is_match(&line) || seen.contains(&line) {
            continue;
        }
        seen.insert(line.clone());
        region.push(line);
        if region.len() == REGION_LINES {
            break;
        }
    }
    region.reverse();
    region
}

/// What a normalized line says about the failure, least telling first. The summary is the last
/// line of the highest kind; lines of kind `Context` and above are hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Chatter,
    Context,
    Launcher,
    Error,
    Exception,
    Resource,
}

fn kind(line: &str) -> Kind {
    if STEP_CANCELLED.is_match(line) {
        // srun cancels the other tasks of a step when one fails: an echo, not the cause.
        Kind::Launcher
    } else if RESOURCE.is_match(line) {
        Kind::Resource
    } else if LAUNCHER.is_match(line) {
        Kind::Launcher
    } else if EXCEPTION.is_match(line) {
        Kind::Exception
    } else if ERROR.is_match(line) {
        Kind::Error
    } else if CONTEXT.is_match(line) {
        Kind::Context
    } else {
        Kind::Chatter
    }
}

static PROGRESS: LazyLock<Regex> = LazyLock::new(|| re(r"<n>%\s*\||\[[=#>\-. ]{4,}\]|<n>(?:\.<n>)?\s*(?:it|s)/s\b"));
static STEP_CANCELLED: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\*\*\* step \S+ on \S+ cancelled at <ts> \*\*\*"));
static LAUNCHER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)exited with exit code|job step aborted|terminating job step|mpirun noticed|primary job\s+terminated|force terminated|one or more processes|has exited due to|^srun: error: .*(?:task|step)",
    )
});
static RESOURCE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)oom[-_ ]?kill|out[-_ ]of[-_ ]memory|\boom\b|\bcancell?ed\b|time limit|preempt|node[-_ ]fail|\bkilled\b|memory limit|exceeded .*memory|bus error|sigkill|sigbus|no space left",
    )
});
static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:\S+\s)?[a-z_][\w.]*(?:error|exception|exit|interrupt|fault|failure)(?::|$)|panicked at|segmentation fault|core dumped|\bfatal\b|terminate called|\baborted\b|assertion .*failed|^error\b|\berror:",
    )
});
static ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\berrors?\b|[a-z](?:error|exception)s?\b|\bexceptions?\b|\bfail(?:ed|ures?|s)?\b|denied|refused|unreachable|timed? ?out|timeout|not found|no such|cannot|can't|unable|invalid|illegal|\babort|panic|signal",
    )
});
static CONTEXT: LazyLock<Regex> =
    LazyLock::new(|| re(r"^File <str>, line <n>, in |^Traceback \(most recent call last\)"));

fn cut_chars(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// 64-bit FNV-1a: fixed constants, stable everywhere (unlike std's `DefaultHasher`).
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, text: &str) {
        for &b in text.as_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
#[path = "normalize_reference_tests.rs"]
mod tests;
