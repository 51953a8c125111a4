//! Hand-written finders for the normalization rules that match on most lines (timestamps, ids,
//! numbers, plurals), and cheap necessary conditions for the rules that rarely match.
//!
//! Why: a log line goes through about eighteen rules; run as regex searches, they cost a few
//! microseconds per line, and a signature normalizes tens of lines per tail. On ASCII text a
//! byte scan finds the same matches in a fraction of that. Each finder here returns exactly the
//! spans its rule's regex (in [`super::normalize`]) finds on ASCII text: the regexes stay the
//! definition, these are their fast form, and the tests compare the two on generated text.
//! Non-ASCII lines (where `\d`, `\s`, `\w` and case folding go beyond ASCII) take the regexes.
//!
//! Conventions: `s` is the line's bytes (ASCII), `at` where the search starts (text before it
//! still counts for `\b`), and a finder returns the first match at or after `at` as
//! `(start, end)`, like the regex's leftmost-first match.

use memchr::memmem;

/// A regex word character on ASCII text: `[A-Za-z0-9_]`.
fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `\b` holds before `s[i]`, given that `s[i]` is a word character.
fn starts_word(s: &[u8], i: usize) -> bool {
    i == 0 || !word(s[i - 1])
}

/// Whether `\b` holds at `i`, given that `s[i - 1]` is a word character.
fn ends_word(s: &[u8], i: usize) -> bool {
    s.get(i).is_none_or(|&b| !word(b))
}

/// `\s` on ASCII text.
fn space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn digit(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

/// Whether `s[i..i + n]` are `n` digits.
fn digits(s: &[u8], i: usize, n: usize) -> bool {
    s.get(i..i + n).is_some_and(|d| d.iter().all(u8::is_ascii_digit))
}

/// The end of the run of digits starting at `i`.
fn digits_end(s: &[u8], mut i: usize) -> usize {
    while digit(s, i) {
        i += 1;
    }
    i
}

fn byte_in(s: &[u8], i: usize, set: &[u8]) -> bool {
    s.get(i).is_some_and(|b| set.contains(b))
}

/// Whether `s[i..]` starts with `lit`, ASCII case-insensitively.
fn lit(s: &[u8], i: usize, lit: &[u8]) -> bool {
    s.get(i..i + lit.len()).is_some_and(|w| w.eq_ignore_ascii_case(lit))
}

/// The first position at or after `at` where `at_pos` finds a match, with the match's end.
fn first(s: &[u8], at: usize, at_pos: impl Fn(&[u8], usize) -> Option<usize>) -> Option<(usize, usize)> {
    (at..s.len()).find_map(|p| at_pos(s, p).map(|end| (p, end)))
}

/// Whether the timestamp rule needs its regex: its syslog / `date` alternative needs a month
/// name, which [`timestamp`] does not look for.
pub(super) fn has_month(s: &[u8]) -> bool {
    const MONTHS: [&[u8]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    (0..s.len().saturating_sub(2)).any(|i| {
        matches!(s[i], b'J' | b'F' | b'M' | b'A' | b'S' | b'O' | b'N' | b'D') && MONTHS.contains(&&s[i..i + 3])
    })
}

/// The timestamp rule on a line without a month name: its glog, ISO 8601 and bare-time
/// alternatives, in that order of preference.
pub(super) fn timestamp(s: &[u8], at: usize) -> Option<(usize, usize)> {
    first(s, at, |s, p| match s[p] {
        b'I' | b'W' | b'E' | b'F' if starts_word(s, p) => glog_at(s, p),
        b'0'..=b'9' if starts_word(s, p) => iso_at(s, p).or_else(|| clock_at(s, p)),
        _ => None,
    })
}

/// `[IWEF]\d{3,4} \d{1,2}:\d{2}:\d{2}(?:\.\d+)?` at `p`.
fn glog_at(s: &[u8], p: usize) -> Option<usize> {
    for n in [4, 3] {
        if !(digits(s, p + 1, n) && byte_in(s, p + 1 + n, b" ")) {
            continue;
        }
        let q = p + 2 + n;
        for h in [2, 1] {
            if digits(s, q, h)
                && byte_in(s, q + h, b":")
                && digits(s, q + h + 1, 2)
                && byte_in(s, q + h + 3, b":")
                && digits(s, q + h + 4, 2)
            {
                let end = q + h + 6;
                return Some(if byte_in(s, end, b".") && digit(s, end + 1) { digits_end(s, end + 1) } else { end });
            }
        }
    }
    None
}

/// `\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z\b|[+-]\d{2}:?\d{2}\b)?`
/// at `p`.
fn iso_at(s: &[u8], p: usize) -> Option<usize> {
    if !(digits(s, p, 4)
        && byte_in(s, p + 4, b"-/")
        && digits(s, p + 5, 2)
        && byte_in(s, p + 7, b"-/")
        && digits(s, p + 8, 2))
    {
        return None;
    }
    let mut end = p + 10;
    if byte_in(s, end, b"T ") {
        let q = end + 1;
        if let Some(h) =
            [2, 1].into_iter().find(|&h| digits(s, q, h) && byte_in(s, q + h, b":") && digits(s, q + h + 1, 2))
        {
            end = q + h + 3;
            if byte_in(s, end, b":") && digits(s, end + 1, 2) {
                end += 3;
                if byte_in(s, end, b".,") && digit(s, end + 1) {
                    end = digits_end(s, end + 1);
                }
            }
        }
    }
    if byte_in(s, end, b"Z") && ends_word(s, end + 1) {
        end += 1;
    } else if byte_in(s, end, b"+-") && digits(s, end + 1, 2) {
        if byte_in(s, end + 3, b":") && digits(s, end + 4, 2) && ends_word(s, end + 6) {
            end += 6;
        } else if digits(s, end + 3, 2) && ends_word(s, end + 5) {
            end += 5;
        }
    }
    Some(end)
}

/// `\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b` at `p`.
fn clock_at(s: &[u8], p: usize) -> Option<usize> {
    for h in [2, 1] {
        if digits(s, p, h)
            && byte_in(s, p + h, b":")
            && digits(s, p + h + 1, 2)
            && byte_in(s, p + h + 3, b":")
            && digits(s, p + h + 4, 2)
        {
            let end = p + h + 6;
            if byte_in(s, end, b".,") && digit(s, end + 1) {
                let frac = digits_end(s, end + 1);
                if ends_word(s, frac) {
                    return Some(frac);
                }
            }
            if ends_word(s, end) {
                return Some(end);
            }
        }
    }
    None
}

/// The id rule: `(?i)\b(?:job|step|task|array task|array_task_id|jobid|job_id|step_?id|task_?id)\b`
/// then `[\s:=#]*[\w\[\]-]*\d[\w\[\]-]*(?:\.[\w\[\]-]+)*`.
pub(super) fn ids(s: &[u8], at: usize) -> Option<(usize, usize)> {
    const KEYWORDS: [&[u8]; 11] = [
        b"job",
        b"step",
        b"task",
        b"array task",
        b"array_task_id",
        b"jobid",
        b"job_id",
        b"step_id",
        b"stepid",
        b"task_id",
        b"taskid",
    ];
    let value_byte = |b: u8| word(b) || matches!(b, b'[' | b']' | b'-');
    first(s, at, |s, p| {
        if !(matches!(s[p] | 0x20, b'j' | b's' | b't' | b'a') && starts_word(s, p)) {
            return None;
        }
        KEYWORDS.iter().find_map(|k| {
            let k_end = p + k.len();
            if !(lit(s, p, k) && ends_word(s, k_end)) {
                return None;
            }
            let mut j = k_end;
            while s.get(j).is_some_and(|&b| space(b) || matches!(b, b':' | b'=' | b'#')) {
                j += 1;
            }
            let mut end = j;
            while s.get(end).is_some_and(|&b| value_byte(b)) {
                end += 1;
            }
            if !s[j..end].iter().any(u8::is_ascii_digit) {
                return None;
            }
            while byte_in(s, end, b".") && s.get(end + 1).is_some_and(|&b| value_byte(b)) {
                end += 1;
                while s.get(end).is_some_and(|&b| value_byte(b)) {
                    end += 1;
                }
            }
            Some(end)
        })
    })
}

/// The number rule, its three alternatives in order of preference: a number after a keyword
/// whose value matters (`exit code 1`, ASCII case-insensitive), a number with a memory unit,
/// any other number.
pub(super) fn number(s: &[u8], at: usize) -> Option<(usize, usize)> {
    first(s, at, |s, p| match s[p] {
        b'0'..=b'9' => Some(size_at(s, p).unwrap_or_else(|| plain_number_end(s, p))),
        b'a'..=b'z' | b'A'..=b'Z' if starts_word(s, p) => kept_number_at(s, p),
        _ => None,
    })
}

/// `\b(?:exit(?:ed)?(?: with)?(?: exit)? ?(?:code|status)|exit_?code|return ?code|returncode|rc|
/// signal|sig|errno|status|code|error)\b[\s:=#(]*-?[0-9]+` at `p` (a word start), ASCII
/// case-insensitive: the keyword's possible ends are tried in the regex's order of preference.
fn kept_number_at(s: &[u8], p: usize) -> Option<usize> {
    first_keyword_end(s, p, |k| {
        if !ends_word(s, k) {
            return None;
        }
        let mut j = k;
        while s.get(j).is_some_and(|&b| space(b) || matches!(b, b':' | b'=' | b'#' | b'(')) {
            j += 1;
        }
        if byte_in(s, j, b"-") {
            j += 1;
        }
        digit(s, j).then(|| digits_end(s, j))
    })
}

/// Calls `each` with the ends of the number rule's keywords (`exit code`, `exited with exit
/// status`, `rc`, `signal`...) that start at `p`, in the regex's order of preference (ASCII
/// case-insensitive), until it returns something.
fn first_keyword_end(s: &[u8], p: usize, mut each: impl FnMut(usize) -> Option<usize>) -> Option<usize> {
    // Every keyword starts with one of these pairs of letters.
    let pair = (s[p] | 0x20, s.get(p + 1).map_or(0, |b| b | 0x20));
    if !matches!(pair, (b'e', b'x' | b'r') | (b'r', b'e' | b'c') | (b's', b'i' | b't') | (b'c', b'o')) {
        return None;
    }
    if lit(s, p, b"exit") {
        let q = p + 4;
        for ed in [&b"ed"[..], b""] {
            if !lit(s, q, ed) {
                continue;
            }
            let q = q + ed.len();
            for with in [&b" with"[..], b""] {
                if !lit(s, q, with) {
                    continue;
                }
                let q = q + with.len();
                for exit in [&b" exit"[..], b""] {
                    if !lit(s, q, exit) {
                        continue;
                    }
                    let q = q + exit.len();
                    for gap in [&b" "[..], b""] {
                        if !lit(s, q, gap) {
                            continue;
                        }
                        let q = q + gap.len();
                        for what in [&b"code"[..], b"status"] {
                            if lit(s, q, what)
                                && let Some(found) = each(q + what.len())
                            {
                                return Some(found);
                            }
                        }
                    }
                }
            }
        }
    }
    const WORDS: [&[u8]; 11] = [
        b"exit_code",
        b"exitcode",
        b"return code",
        b"returncode",
        b"rc",
        b"signal",
        b"sig",
        b"errno",
        b"status",
        b"code",
        b"error",
    ];
    WORDS.iter().filter(|w| lit(s, p, w)).find_map(|w| each(p + w.len()))
}

/// Whether the number rule may keep a number in a text whose word ends at `k` (the text is
/// `s[..k]`): a word that ends with one of the rule's keywords (`code`, `status`, `rc`, `sig`,
/// `signal`, `errno`, `error`: every longer keyword, like `exit code`, ends with one of them),
/// wherever the keyword starts (earlier rules can put a placeholder before it). Earlier rules
/// cannot make a word end after a keyword (every rule's match that starts at a word character
/// needs a word boundary there), nor join text into a new keyword (what they put in is a
/// placeholder in `<` and `>`, or text of the line that stays in place).
pub(super) fn keyword_ends_at(s: &[u8], k: usize) -> bool {
    const ENDINGS: [&[u8]; 7] = [b"code", b"status", b"rc", b"sig", b"signal", b"errno", b"error"];
    matches!(s[k - 1] | 0x20, b'e' | b's' | b'c' | b'g' | b'l' | b'o' | b'r')
        && ENDINGS.iter().any(|e| k >= e.len() && s[k - e.len()..k].eq_ignore_ascii_case(e))
}

/// `\b\d+(?:\.\d+)?(?:\s?(?:[kmgtpe]i?b|bytes?)|[kmgt])\b` at `p` (a digit), case-insensitive.
fn size_at(s: &[u8], p: usize) -> Option<usize> {
    if !starts_word(s, p) {
        return None;
    }
    let whole = digits_end(s, p);
    let with_fraction = (byte_in(s, whole, b".") && digit(s, whole + 1)).then(|| digits_end(s, whole + 1));
    let unit_end = |f: usize| -> Option<usize> {
        let spaced = s.get(f).is_some_and(|&b| space(b)).then_some(f + 1);
        let mut candidates: Vec<usize> = Vec::new();
        for g in spaced.into_iter().chain([f]) {
            if byte_in(s, g, b"kmgtpeKMGTPE") {
                if lit(s, g + 1, b"ib") {
                    candidates.push(g + 3);
                }
                if lit(s, g + 1, b"b") {
                    candidates.push(g + 2);
                }
            }
            if lit(s, g, b"bytes") {
                candidates.push(g + 5);
            }
            if lit(s, g, b"byte") {
                candidates.push(g + 4);
            }
        }
        if byte_in(s, f, b"kmgtKMGT") {
            candidates.push(f + 1);
        }
        candidates.into_iter().find(|&u| ends_word(s, u))
    };
    with_fraction.into_iter().chain([whole]).find_map(unit_end)
}

/// `\d+(?:[.,]\d+)*` at `p`.
fn plain_number_end(s: &[u8], p: usize) -> usize {
    let mut end = digits_end(s, p);
    while byte_in(s, end, b".,") && digit(s, end + 1) {
        end = digits_end(s, end + 1);
    }
    end
}

/// The plural rule: `<n> (?:[\w-]+ )?\w{3,}[^s\W]s\b`.
pub(super) fn plural(s: &[u8], at: usize) -> Option<(usize, usize)> {
    // A word of five or more word characters ending in one `s` (not `ss`), from `q` to its end.
    let plural_word = |q: usize| -> Option<usize> {
        let mut end = q;
        while s.get(end).is_some_and(|&b| word(b)) {
            end += 1;
        }
        (end - q >= 5 && s[end - 1] == b's' && s[end - 2] != b's').then_some(end)
    };
    let finder = memmem::Finder::new(b"<n> ");
    let mut from = at;
    while let Some(i) = finder.find(&s[from..]).map(|i| i + from) {
        let p = i + 4;
        let mut run = p;
        while s.get(run).is_some_and(|&b| word(b) || b == b'-') {
            run += 1;
        }
        let grouped = (run > p && byte_in(s, run, b" ")).then(|| plural_word(run + 1)).flatten();
        if let Some(end) = grouped.or_else(|| plural_word(p)) {
            return Some((i, end));
        }
        from = i + 1;
    }
    None
}

/// Whether the IPv4 rule can match: three dots each between digits.
pub(super) fn may_have_ipv4(s: &[u8]) -> bool {
    (1..s.len().saturating_sub(1))
        .filter(|&i| s[i] == b'.' && s[i - 1].is_ascii_digit() && s[i + 1].is_ascii_digit())
        .nth(2)
        .is_some()
}

/// Whether the IPv6 rule can match: two colons with at most four hexadecimal digits between.
pub(super) fn may_have_ipv6(s: &[u8]) -> bool {
    let mut last_colon: Option<usize> = None;
    for (i, &b) in s.iter().enumerate() {
        if b == b':' {
            if let Some(c) = last_colon
                && i - c - 1 <= 4
            {
                return true;
            }
            last_colon = Some(i);
        } else if !b.is_ascii_hexdigit() {
            last_colon = None;
        }
    }
    false
}

/// Whether the path rule can match: a `/` at the start or after a delimiter, `~` or `.`.
pub(super) fn may_have_path(s: &[u8]) -> bool {
    memchr::memchr_iter(b'/', s).any(|i| i == 0 || space(s[i - 1]) || b"=:'\"([,~.".contains(&s[i - 1]))
}

/// Whether the fully-qualified-name rule can match: two dots, each between name characters,
/// with only name characters between them.
pub(super) fn may_have_fqdn(s: &[u8]) -> bool {
    let label = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    let mut run_dots = 0;
    for i in 1..s.len().saturating_sub(1) {
        if s[i] == b'.' {
            if label(s[i - 1]) && label(s[i + 1]) {
                run_dots += 1;
                if run_dots == 2 {
                    return true;
                }
            } else {
                run_dots = 0;
            }
        } else if !label(s[i]) {
            run_dots = 0;
        }
    }
    false
}

/// Whether the host-after-a-word rule can match: one of its words, whole, followed by a space,
/// `:` or `=`.
pub(super) fn may_have_host_after_word(s: &[u8]) -> bool {
    const WORDS: [&[u8]; 9] =
        [b"on", b"node", b"nodes", b"host", b"hostname", b"nodename", b"nodelist", b"server", b"peer"];
    let mut i = 0;
    while i < s.len() {
        if !word(s[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < s.len() && word(s[i]) {
            i += 1;
        }
        if s.get(i).is_some_and(|&b| space(b) || b == b':' || b == b'=')
            && WORDS.iter().any(|w| w.eq_ignore_ascii_case(&s[start..i]))
        {
            return true;
        }
    }
    false
}

/// Whether the host-and-port rule can match: a `:` and a digit after a name with a letter and
/// a digit (and maybe a `]`).
pub(super) fn may_have_host_port(s: &[u8]) -> bool {
    memchr::memchr_iter(b':', s).any(|i| {
        if !digit(s, i + 1) {
            return false;
        }
        let mut end = i;
        if end > 0 && s[end - 1] == b']' {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && (s[start - 1].is_ascii_alphanumeric() || s[start - 1] == b'-') {
            start -= 1;
        }
        let name = &s[start..end];
        name.iter().any(u8::is_ascii_digit) && name.iter().any(u8::is_ascii_alphabetic)
    })
}

#[cfg(test)]
#[path = "normalize_scan_tests.rs"]
mod tests;
