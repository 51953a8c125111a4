//! `normalize_line`: one stderr line with its noise folded into placeholders.
//!
//! Why: ten thousand jobs that died the same way print ten thousand different lines, because of
//! what differs between jobs and not between failures: times, ranks, hosts, ports, ids, per-job
//! paths, sizes. Folding that noise makes the lines comparable (for [`super::signature`] and
//! [`super::attempt_diff`]) while keeping what tells failures apart: the words, the exception
//! names, the file names, and the exit codes and signals.
//!
//! The rules, in the order they apply:
//! 1. terminal noise: ANSI escapes stripped; of a line rewritten with `\r` (progress bars),
//!    only the last text is kept; block characters (`█▌`) dropped;
//! 2. `<ts>`: timestamps: ISO 8601 dates and times, syslog and `date` stamps, glog / c10
//!    prefixes (`E0321 02:07:08.414640`), bare `hh:mm:ss(.frac)`;
//! 3. `<str>`: quoted text (`'…'`, `"…"`, `` `…` ``, `‘…’`, `“…”`): module names, keys, paths in
//!    Python messages; a word's apostrophe (`can't`) is not a quote;
//! 4. `<url>`, `<uuid>`, `<ip>` (IPv4 with its port, IPv6);
//! 5. `<path>/name`: absolute and `./`, `~/` paths keep only their base name (per-job
//!    directories fold, `train.py` stays);
//! 6. `<host>`: fully qualified names, and host-like tokens (`node023`, `orion-01-04`) where a
//!    host is expected: after `on`, `node`, `host`…, before `:port`, in `[host:pid]`, in
//!    `srun`'s `host: task N:`, after `@`;
//! 7. `<id>`: the value after `job`, `step`, `StepId`, `task`, `array task`;
//! 8. `<hex>`: `0x…`, and hexadecimal runs of 6 or more with letters and digits (hashes, ids);
//!    `<tmp>`: temporary names (`tmpa8x9k2l_`, `tmp.Xb3kQ9`);
//! 9. `<size>`: a number with a memory unit (`20.00 MiB`, `8g`, `512 bytes`);
//! 10. `<n>`: every other number (ranks, PIDs, ports, counters, line numbers), except the one
//!     after `exit code`, `status`, `signal`, `errno`, `code`, `error`, `rc`: those tell
//!     failures apart (exit 1 is not exit 137); a plural after a count is made singular
//!     (`<n> oom_kill events` as `<n> oom_kill event`);
//! 11. whitespace runs collapse to one space; the line is trimmed.

use std::borrow::Cow;

use super::normalize_scan as scan;
use super::rule::{Rule, rule};

const HOSTY: &str = r"[A-Za-z][\w\-\[\],]*\d[\w\-\[\],]*";

/// Timestamps, as alternatives of one pattern (leftmost wins, then the first listed): glog and
/// c10 prefixes, ISO 8601, syslog and `date` stamps, bare times.
static TIMESTAMP: Rule = rule!(&[
        r"\b[IWEF]\d{3,4} \d{1,2}:\d{2}:\d{2}(?:\.\d+)?",
        r"\b\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z\b|[+-]\d{2}:?\d{2}\b)?",
        r"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2},?(?:\s+\d{4})?\s+\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?:\s+(?:UTC|GMT|[A-Z][SD]T|CES?T|[+-]\d{4}))?(?:\s+\d{4}\b)?",
        r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
    ]
    .join("|"));
static QUOTED: Rule = rule!(r#"\B'[^'\n]*'\B|\B"[^"\n]*"\B|`[^`\n]*`|‘[^’\n]*’|“[^”\n]*”"#);
static URL: Rule = rule!(r#"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>]+"#);
static UUID: Rule = rule!(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b");
static IPV4: Rule = rule!(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b");
static IPV6: Rule = rule!(r"\[?\b[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){1,6}:[0-9a-fA-F]{1,4}\b\]?");
static PATH: Rule = rule!(r#"(?:^|[\s=:'"(\[,])(?:~|\.{1,2})?(?:/[^\s/:'"(),\[\]<>]+)+/?"#);
static FQDN: Rule = rule!(r"\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+){2,}\b");
static NUMBERED_HOST: Rule = rule!(r"^[A-Za-z]+(?:-[A-Za-z]+)*-?\d+(?:-\d+)*$");
static HOST_AFTER_WORD: Rule =
    rule!(&format!(r"(?i)\b(?:on|node|nodes|host|hostname|nodename|nodelist|server|peer)\b[\s:=]+{HOSTY}"));
static HOST_PORT: Rule = rule!(r"\[?\b[A-Za-z][A-Za-z0-9-]*\d[A-Za-z0-9-]*\]?:\d{1,5}\b\]?");
static HOST_TASK: Rule = rule!(&format!(r"\b{HOSTY}: tasks? [\d,\-]+:"));
static HOST_AT: Rule = rule!(&format!(r"@{HOSTY}"));
static IDS: Rule = rule!(
    r"(?i)\b(?:job|step|task|array task|array_task_id|jobid|job_id|step_?id|task_?id)\b[\s:=#]*[\w\[\]-]*\d[\w\[\]-]*(?:\.[\w\[\]-]+)*",
);
static HEX: Rule = rule!(r"\b0[xX][0-9a-fA-F]+\b|\b[0-9a-fA-F]{6,}\b");
static TMP: Rule = rule!(r"\btmp(?:\.[A-Za-z0-9]{6,}|[A-Za-z0-9_]{6,})\b");
/// Numbers: one after a keyword whose value matters (kept), a memory size (`<size>`), or any
/// other number (`<n>`); the kind is told by the match's first and last characters.
static NUMBER: Rule = rule!(&[
        // ASCII rules (`-u`), so that `shape_key` can tell these keywords byte by byte.
        r"(?i-u:\b(?:exit(?:ed)?(?: with)?(?: exit)? ?(?:code|status)|exit_?code|return ?code|returncode|rc|signal|sig|errno|status|code|error)\b[\s:=#(]*-?[0-9]+)",
        r"(?i:\b\d+(?:\.\d+)?(?:\s?(?:[kmgtpe]i?b|bytes?)|[kmgt])\b)",
        r"\d+(?:[.,]\d+)*",
    ]
    .join("|"));
static PLURAL: Rule = rule!(r"<n> (?:[\w-]+ )?\w{3,}[^s\W]s\b");

/// Compile every normalization rule now (see [`crate::logs::warm_up`]).
pub(super) fn warm_up() {
    for rule in [
        &TIMESTAMP,
        &QUOTED,
        &URL,
        &UUID,
        &IPV4,
        &IPV6,
        &PATH,
        &FQDN,
        &NUMBERED_HOST,
        &HOST_AFTER_WORD,
        &HOST_PORT,
        &HOST_TASK,
        &HOST_AT,
        &IDS,
        &HEX,
        &TMP,
        &NUMBER,
        &PLURAL,
    ] {
        rule.warm_up();
    }
}
/// One line with its noise folded (see the module documentation for the rules).
///
/// ```
/// use triage::logs::normalize_line;
///
/// let line = "[rank3]:[E321 02:07:08.41 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog timeout";
/// assert_eq!(
///     normalize_line(line),
///     "[rank<n>]:[<ts> ProcessGroupNCCL.cpp:<n>] [Rank <n>] Watchdog timeout"
/// );
/// ```
pub fn normalize_line(line: &str) -> String {
    fold_noise(terminal_text(line).into_owned())
}

/// Rule 1: the text a terminal would show of a line (escapes, rewrites and block characters
/// gone), what the other rules ([`fold_noise`]) work on.
pub(crate) fn terminal_text(line: &str) -> Cow<'_, str> {
    // Most lines are plain ASCII text: nothing to do but drop a blank one.
    if line.is_ascii() && memchr::memchr3(b'\r', b'\n', 0x1b, line.as_bytes()).is_none() {
        return Cow::Borrowed(if line.trim().is_empty() { "" } else { line });
    }
    let line = last_rewrite(line);
    let mut s = if line.contains('\x1b') { strip_ansi_escapes::strip_str(line) } else { line.to_owned() };
    if !s.is_ascii() {
        s.retain(|c| !('\u{2580}'..='\u{259f}').contains(&c));
    }
    Cow::Owned(s)
}

/// Rules 2 to 11 on a line's [`terminal_text`].
pub(crate) fn fold_noise(mut s: String) -> String {
    // Replacements are computed from the matched text alone: resolving capture groups costs
    // more than the whole search on lines this short. A rule that cannot match is not run: on
    // ASCII text (nearly every line) a byte scan rules it out, and the rules that match on most
    // lines are found by hand-written scans that give the regexes' matches (`normalize_scan`).
    let ascii = s.is_ascii();
    let may = |cheap_check: bool| !ascii || cheap_check;
    s = if ascii && !scan::has_month(s.as_bytes()) {
        apply_found(s, scan::timestamp, |_| "<ts>".into())
    } else {
        apply(s, &TIMESTAMP, |_| "<ts>".into())
    };
    if may(memchr::memchr3(b'\'', b'"', b'`', s.as_bytes()).is_some()) {
        s = apply(s, &QUOTED, |_| "<str>".into());
    }
    if may(s.contains("://")) {
        s = apply(s, &URL, |_| "<url>".into());
    }
    if s.contains('-') && may(count(&s, b'-') >= 4) {
        s = apply(s, &UUID, |_| "<uuid>".into());
    }
    let dots = count(&s, b'.');
    if dots >= 3 && may(scan::may_have_ipv4(s.as_bytes())) {
        s = apply(s, &IPV4, |_| "<ip>".into());
    }
    let colons = count(&s, b':');
    if colons >= 2 && may(scan::may_have_ipv6(s.as_bytes())) {
        s = apply(s, &IPV6, |m| {
            let digit = m.bytes().any(|b| b.is_ascii_digit());
            let ipv6 = digit && (m.contains("::") || m.matches(':').count() >= 5);
            if ipv6 { "<ip>".into() } else { m.into() }
        });
    }
    if may(scan::may_have_path(s.as_bytes())) {
        s = apply(s, &PATH, |m| {
            // The match starts with the character before the path, if there is one.
            let path_at = usize::from(!m.starts_with(['/', '~', '.']));
            let base = if m.ends_with('/') { "" } else { m.rsplit('/').next().unwrap_or("") };
            format!("{}<path>/{base}", &m[..path_at]).into()
        });
    }
    if dots >= 2 && may(scan::may_have_fqdn(s.as_bytes())) {
        s = apply(s, &FQDN, |m| if is_fqdn(m) { "<host>".into() } else { m.into() });
    }
    if may(scan::may_have_host_after_word(s.as_bytes())) {
        s = apply(s, &HOST_AFTER_WORD, |m| {
            let host_at = m.rfind([' ', '\t', ':', '=']).map_or(0, |i| i + 1);
            format!("{}<host>", &m[..host_at]).into()
        });
    }
    if colons >= 1 {
        if may(scan::may_have_host_port(s.as_bytes())) {
            s = apply(s, &HOST_PORT, |m| {
                let open = if m.starts_with('[') { "[" } else { "" };
                let colon = m.rfind(':').unwrap_or(0);
                let inner_close = if m[..colon].ends_with(']') { "]" } else { "" };
                let outer_close = if m.ends_with(']') { "]" } else { "" };
                format!("{open}<host>{inner_close}:<n>{outer_close}").into()
            });
        }
        if may(s.contains(": task")) {
            s = apply(s, &HOST_TASK, |m| format!("<host>{}", &m[m.find(':').unwrap_or(0)..]).into());
        }
    }
    if may(s.contains('@')) {
        s = apply(s, &HOST_AT, |_| "@<host>".into());
    }
    fn id(m: &str) -> Cow<'_, str> {
        let value_at = m
            .rfind([' ', '\t', ':', '=', '#'])
            .map(|i| i + 1)
            .unwrap_or_else(|| m.find(|c: char| !c.is_ascii_alphabetic() && c != '_').unwrap_or(m.len()));
        format!("{}<id>", &m[..value_at]).into()
    }
    s = if ascii { apply_found(s, scan::ids, id) } else { apply(s, &IDS, id) };
    if has_hex_run(&s) {
        s = apply(s, &HEX, |m| {
            let digit = m.bytes().any(|b| b.is_ascii_digit());
            let alpha = m.bytes().any(|b| b.is_ascii_alphabetic());
            let prefixed = m.starts_with("0x") || m.starts_with("0X");
            if prefixed || (digit && alpha) { "<hex>".into() } else { m.into() }
        });
    }
    if may(s.contains("tmp")) {
        s = apply(s, &TMP, |_| "<tmp>".into());
    }
    fn number(m: &str) -> Cow<'_, str> {
        if !m.starts_with(|c: char| c.is_ascii_digit()) {
            m.into() // a number after `exit code` and the like: kept
        } else if m.ends_with(|c: char| c.is_ascii_alphabetic()) {
            "<size>".into()
        } else {
            "<n>".into()
        }
    }
    s = if ascii { apply_found(s, scan::number, number) } else { apply(s, &NUMBER, number) };
    fn singular(m: &str) -> Cow<'_, str> {
        m[..m.len() - 1].to_owned().into()
    }
    s = if ascii { apply_found(s, scan::plural, singular) } else { apply(s, &PLURAL, singular) };
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// A cheap key with the property: two lines with the same key have the same
/// [`normalize_line`]: the line's bytes with the digits 1 to 9 made `1` (so lengths stay, and
/// `0` stays for `0x`); `None` for a line where a digit's value can matter, one with a word
/// starting like a kept-number keyword of rule 10 (`exit`, `return`, `rc`, `sig`, `errno`,
/// `status`, `code`, `error`).
pub(crate) fn shape_key(line: &str) -> Option<Vec<u8>> {
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
    let mut shape = bytes.to_vec();
    for b in &mut shape {
        if (b'1'..=b'9').contains(b) {
            *b = b'1';
        }
    }
    Some(shape)
}

/// The key to remember [`fold_noise`] results by, across the lines of many tails, with the
/// property: two texts with the same key have the same [`fold_noise`]. The signature's cache
/// computes it in two halves ([`digit_key`], then [`may_keep_a_number`] only for a key it has
/// not met); this whole form is what the tests check the property on. `text` is a line's
/// [`terminal_text`]; the key is its bytes with every digit made `1` (so lengths stay), but a
/// `0` before `x` or `X` (rule 8's `0x` prefix); `None` (remember the text itself) for a text
/// that is not ASCII, or where rule 10 may keep a number (a kept-number keyword ending at a
/// word end, wherever it starts): there, a digit's value matters. Every other rule reads
/// digits only as `\d`, `[0-9]` or a class holding all ten.
///
/// Unlike [`shape_key`], which looks at keywords at word starts only (enough within one tail),
/// it does not rely on a keyword's word start, which earlier rules can move: in
/// `2024-03-21signal 1`, the timestamp's placeholder leaves `signal` at a word start.
#[cfg(test)]
pub(crate) fn cache_key(text: &str) -> Option<Vec<u8>> {
    digit_key(text).filter(|key| !may_keep_a_number(key))
}

/// The first half of the cache key (see `cache_key`): `text`'s bytes with every digit made `1` but the `0` of
/// `0x`, `None` if it is not ASCII. Whether rule 10 may keep a number ([`may_keep_a_number`])
/// reads the same on this key as on the text (letters stay, digits stay word characters), so a
/// key once found good stays good.
pub(crate) fn digit_key(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !text.is_ascii() {
        return None;
    }
    let mut key = bytes.to_vec();
    for b in &mut key {
        if b.is_ascii_digit() {
            *b = b'1';
        }
    }
    for x in memchr::memchr2_iter(b'x', b'X', bytes) {
        if x > 0 && bytes[x - 1] == b'0' {
            key[x - 1] = b'0';
        }
    }
    Some(key)
}

/// The second half of the cache key (see `cache_key`): whether rule 10 may keep a number in `text`, where a word
/// ends with one of its keywords.
pub(crate) fn may_keep_a_number(text: &[u8]) -> bool {
    let mut in_word = false;
    for (i, &b) in text.iter().enumerate() {
        let word = WORD_BYTES[usize::from(b)];
        if in_word && !word && scan::keyword_ends_at(text, i) {
            return true;
        }
        in_word = word;
    }
    in_word && scan::keyword_ends_at(text, text.len())
}

/// The regex word bytes of ASCII: `[A-Za-z0-9_]`.
static WORD_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    table
};

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
fn apply(s: String, rule: &Rule, replace: impl Fn(&str) -> Cow<'_, str>) -> String {
    let spans = rule.spans(&s);
    replace_spans(s, spans, replace)
}

/// [`apply`] with a hand-written finder (`find(bytes, from)`: the first match at or after
/// `from`) in place of the regex.
fn apply_found(
    s: String,
    find: impl Fn(&[u8], usize) -> Option<(usize, usize)>,
    replace: impl Fn(&str) -> Cow<'_, str>,
) -> String {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some((start, end)) = find(s.as_bytes(), from) {
        spans.push((start, end));
        from = end;
    }
    replace_spans(s, spans, replace)
}

/// `s` with each of `spans` (in order, not overlapping) replaced by `replace(its text)`.
fn replace_spans(s: String, spans: Vec<(usize, usize)>, replace: impl Fn(&str) -> Cow<'_, str>) -> String {
    if spans.is_empty() {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut last = 0;
    for (start, end) in spans {
        out.push_str(&s[last..start]);
        out.push_str(&replace(&s[start..end]));
        last = end;
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
