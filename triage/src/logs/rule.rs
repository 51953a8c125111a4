//! A normalisation or signature pattern, compiled for the text it meets.
//!
//! The patterns are written with Unicode classes (`\d`, `\w`, `\b`, `(?i)`), and compiled so
//! they are big: `\d{1,3}` is three copies of every Unicode digit, `\w{3,}` three of every
//! Unicode letter, in both directions. On ASCII text (nearly every line of a stderr) a Unicode
//! class matches exactly what its ASCII form matches (the letters, digits, spaces and case
//! pairs outside ASCII cannot occur), so such a line is matched by the same pattern compiled
//! with ASCII classes: a fraction of the time to compile (a 100-job listing compiled its
//! patterns for about 5 ms, in its first call) and of the memory. Other lines use the Unicode
//! form, compiled the first time one comes. A pattern whose ASCII form does not compile (a
//! class with a non-ASCII character in it) uses the Unicode form for every line.

use std::sync::LazyLock;

use regex::Regex;

pub(super) struct Rule {
    ascii: LazyLock<Option<regex::bytes::Regex>>,
    unicode: LazyLock<Regex>,
}

impl Rule {
    /// `ascii` and `unicode` compile the same pattern, with [`ascii`] and [`unicode`] (see
    /// [`rule!`]).
    pub(super) const fn new(ascii: fn() -> Option<regex::bytes::Regex>, unicode: fn() -> Regex) -> Rule {
        Rule { ascii: LazyLock::new(ascii), unicode: LazyLock::new(unicode) }
    }

    /// Compile now the form nearly every line uses: the ASCII one, or the Unicode one when
    /// there is no ASCII form. The Unicode form of a pattern that has an ASCII one stays for the
    /// first non-ASCII line (it is large, and most tails never need it).
    pub(super) fn warm_up(&self) {
        if LazyLock::force(&self.ascii).is_none() {
            LazyLock::force(&self.unicode);
        }
    }

    /// The ASCII form, for a line that is ASCII, when the pattern has one.
    fn ascii_for(&self, text: &str) -> Option<&regex::bytes::Regex> {
        if text.is_ascii() { self.ascii.as_ref() } else { None }
    }

    pub(super) fn is_match(&self, text: &str) -> bool {
        match self.ascii_for(text) {
            Some(re) => re.is_match(text.as_bytes()),
            None => self.unicode.is_match(text),
        }
    }

    /// (start, end) of each match, leftmost first, not overlapping.
    pub(super) fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        match self.ascii_for(text) {
            Some(re) => re.find_iter(text.as_bytes()).map(|m| (m.start(), m.end())).collect(),
            None => self.unicode.find_iter(text).map(|m| (m.start(), m.end())).collect(),
        }
    }
}

/// `pattern` with Unicode classes.
pub(super) fn unicode(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in log patterns are valid")
}

/// `pattern` with ASCII classes, over bytes; `None` when that does not compile.
pub(super) fn ascii(pattern: &str) -> Option<regex::bytes::Regex> {
    regex::bytes::RegexBuilder::new(pattern).unicode(false).build().ok()
}

/// A [`Rule`] of the pattern `$p` (an expression giving a `&str` or `String`).
macro_rules! rule {
    ($p:expr $(,)?) => {
        $crate::logs::rule::Rule::new(|| $crate::logs::rule::ascii(&$p), || $crate::logs::rule::unicode(&$p))
    };
}
pub(super) use rule;

/// Test helper: the `fn warm_up()` of a module's `source` lists every `static NAME: Rule` the
/// module declares (a rule left out would compile inside a listing).
#[cfg(test)]
pub(super) fn assert_warm_up_lists_every_rule(source: &str) {
    let mut declared: Vec<&str> =
        source.lines().filter_map(|l| l.strip_prefix("static ")?.split_once(": Rule ").map(|(name, _)| name)).collect();
    assert!(!declared.is_empty());
    let listed = source.split("fn warm_up()").nth(1).and_then(|rest| rest.split("] {").next()).unwrap_or_default();
    let mut listed: Vec<&str> =
        listed.split('&').skip(1).map(|n| n.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))).collect();
    listed.sort_unstable();
    declared.sort_unstable();
    assert_eq!(listed, declared);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ascii_form_matches_what_the_unicode_form_matches_on_ascii() {
        let patterns = [
            r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b",
            r"<n> (?:[\w-]+ )?\w{3,}[^s\W]s\b",
            r"(?i)\bkilled\b|\S+ss\b",
        ];
        let lines =
            ["at 10.0.0.12:8080 now", "<n> files missing, <n> tasks", "Killed KILLED sKiLLeD", "class kss ss", ""];
        for p in patterns {
            let (a, u) = (ascii(p).unwrap(), unicode(p));
            for l in lines {
                let sa: Vec<_> = a.find_iter(l.as_bytes()).map(|m| m.range()).collect();
                let su: Vec<_> = u.find_iter(l).map(|m| m.range()).collect();
                assert_eq!(sa, su, "{p} on {l:?}");
            }
        }
    }

    #[test]
    fn a_pattern_with_a_non_ascii_class_uses_the_unicode_form() {
        static QUOTES: Rule = rule!(r"‘[^’\n]*’");
        assert!(QUOTES.ascii.is_none());
        assert_eq!(QUOTES.spans("a ‘b’ c"), vec![(2, 9)]);
    }
}
