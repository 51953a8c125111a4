//! The analyzers' regexes, built for the little they do: say whether a line matches, and read
//! a few numbers out of it.
//!
//! A `regex::Regex` builds every engine it might use: besides the lazy DFA and the PikeVM, a
//! one-pass DFA for its capture groups and a literal prefilter (an Aho-Corasick automaton for
//! a pattern with many alternatives). For the forty analyzer regexes that was 1.2 MB of a
//! server's heap, compiled at start. An analyzer only reads the lines a trigger woke it for,
//! a few short lines per tail, where those engines save nothing measurable; without them the
//! same regexes take 0.5 MB. Matching is the same (leftmost-first, ASCII classes, UTF-8), so
//! this type offers just the calls the analyzers make.

use regex_automata::{meta, util::captures::Captures as Slots, util::syntax};

/// One compiled analyzer regex.
#[derive(Debug)]
pub(crate) struct Regex(meta::Regex);

/// The groups of one match, in the text it was found in.
pub(crate) struct Captures<'h> {
    text: &'h str,
    slots: Slots,
}

/// One group's text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group<'h>(&'h str);

impl Regex {
    /// `pattern` with ASCII classes (`\d`, `\w`, `\s`, `\b`, `(?i)`), as the scan compiles the
    /// catalog's patterns; a part that must be Unicode-aware says so with `(?u:...)`.
    pub fn new(pattern: &str) -> Result<Regex, String> {
        meta::Builder::new()
            .configure(meta::Config::new().auto_prefilter(false).onepass(false).dfa(false))
            .syntax(syntax::Config::new().unicode(false))
            .build(pattern)
            .map(Regex)
            .map_err(|e| e.to_string())
    }

    /// Whether `text` has a match.
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }

    /// Where the leftmost-first match in `text` starts, if there is one.
    pub fn find_start(&self, text: &str) -> Option<usize> {
        self.0.find(text).map(|m| m.start())
    }

    /// The groups of the leftmost-first match in `text`, if any.
    pub fn captures<'h>(&self, text: &'h str) -> Option<Captures<'h>> {
        let mut slots = self.0.create_captures();
        self.0.captures(text, &mut slots);
        slots.is_match().then_some(Captures { text, slots })
    }

    /// The groups of every match in `text`, leftmost first, not overlapping.
    pub fn captures_iter<'r, 'h>(&'r self, text: &'h str) -> impl Iterator<Item = Captures<'h>> + use<'r, 'h> {
        self.0.captures_iter(text).map(move |slots| Captures { text, slots })
    }
}

impl<'h> Captures<'h> {
    /// Group `i` (0 is the whole match), if it took part in the match.
    pub fn get(&self, i: usize) -> Option<Group<'h>> {
        self.slots.get_group(i).and_then(|span| self.text.get(span.range())).map(Group)
    }
}

impl<'h> Group<'h> {
    /// The group's text.
    pub fn as_str(&self) -> &'h str {
        self.0
    }
}
