//! Matching: every pattern of every entry (and every analyzer trigger) is tried on each line
//! of the ANSI-stripped text, on the line's bytes with Unicode off (ASCII `\w`, `\b`, `(?i)`).
//!
//! How, fast: the literal prefilter (`prefilter.rs`) makes one pass over the whole text for
//! the patterns' anchor literals (`grams.rs`) and names the (line, pattern) pairs where the
//! pattern's required literals occur (plus the few patterns without one, on every line); only
//! those pairs run the pattern's own regex, compiled on first use (a process that scans little
//! compiles little), and a pattern that is just a set of literals runs none. Lines come last
//! to first, and an entry that has the last lines the scan keeps for it is not tried on the
//! lines before. The result is
//! exactly what one `RegexSet` of all the patterns gives line by line, which is what the scan
//! did before: `line_matches_plain` keeps that way for the test that compares the two on
//! every corpus file. A set of a few hundred patterns thrashed its lazy DFA (45 to 130
//! MiB/s); small regexes on candidate lines do not.
//!
//! Each pattern index maps back to its entry. Entries without patterns match on the exit code
//! or scheduler state alone. An analyzer (`analyzers/`) whose trigger matched a line then reads
//! the text and may add a finding, which competes like an entry's match. The verdict rule
//! (`verdict.rs`) then picks the deciding match.

use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use regex_automata::{Anchored, meta};

use super::analyzers::{self, Input, MAX_TRIGGERS, MAX_WOKEN_LINES};
use super::ansi::strip_ansi;
use super::entry::Entry;
use super::hints::{HintMatch, Hints, ScanContext, excerpt};
use super::lines::Lines;
use super::load::BUILTIN_NEEDS;
use super::need;
use super::prefilter::{Prefilter, Retired};
use super::verdict::{Basis, Candidate, contrary, decide};

/// Compiled size allowed for one pattern.
pub(crate) const REGEX_SIZE_LIMIT: usize = 4 << 20;

/// Whose pattern an index is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// (entry index, pattern index within the entry).
    Entry(usize, usize),
    /// (analyzer index into [`analyzers::ALL`], trigger index within the analyzer).
    Analyzer(usize, usize),
}

/// One pattern: whose it is, and its matcher, compiled when a scan first needs it. Its text is
/// its owner's (the entry's, or the analyzer's trigger), not copied: [`Pattern::text`].
#[derive(Debug, Clone)]
struct Pattern {
    owner: Owner,
    compiled: OnceLock<Option<meta::Regex>>,
}

impl Pattern {
    /// The pattern's text, from `entries` (the catalog's, which the matcher was built from) or
    /// the analyzer's triggers.
    fn text<'e>(&self, entries: &'e [Entry]) -> &'e str {
        match self.owner {
            Owner::Entry(e, p) => entries.get(e).and_then(|e| e.patterns.get(p)).map_or("", String::as_str),
            Owner::Analyzer(a, t) => analyzers::ALL.get(a).and_then(|a| a.triggers.get(t).copied()).unwrap_or(""),
        }
    }

    fn regex(&self, entries: &[Entry]) -> Option<&meta::Regex> {
        self.compiled
            .get_or_init(|| {
                let text = self.text(entries);
                match compile_matcher(text) {
                    Ok(re) => Some(re),
                    Err(e) => {
                        // Not reached for a checked catalog: user patterns are compiled at load
                        // (their examples), the embedded ones by the test suite.
                        tracing::error!(pattern = %text, error = %e, "catalog pattern does not compile; it matches nothing");
                        None
                    }
                }
            })
            .as_ref()
    }

    fn is_match(&self, entries: &[Entry], line: &[u8]) -> bool {
        self.regex(entries).is_some_and(|re| re.is_match(line))
    }

    /// Whether a match starts at one of `starts` (offsets into `line`): the regex runs
    /// anchored there, over the match's length rather than the line's.
    fn is_match_at(&self, entries: &[Entry], line: &[u8], starts: impl Iterator<Item = usize>) -> bool {
        let Some(re) = self.regex(entries) else { return false };
        let mut input = regex_automata::Input::new(line).anchored(Anchored::Yes).earliest(true);
        starts.into_iter().any(|at| {
            input.set_start(at);
            re.is_match(input.clone())
        })
    }
}

/// One pattern alone, with the scan's semantics (bytes, Unicode off).
pub(crate) fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).unicode(false).size_limit(REGEX_SIZE_LIMIT).build()
}

/// [`compile`] for the scan, which only asks whether one candidate line matches: the same
/// regex (the configuration `regex::bytes::RegexBuilder` gives it) without what such a
/// search never uses, and which would make a first scan spend most of its time and memory
/// compiling: capture groups (the catalog's patterns group alternatives with plain
/// parentheses, and a regex that keeps captures builds a one-pass DFA for them, up to
/// hundreds of kilobytes), literal prefilters (`prefilter.rs` has already found the
/// pattern's literals on the line), and the full and one-pass DFAs it builds besides the lazy
/// one for a small pattern (memory for each pattern a process uses; on one candidate line the
/// lazy DFA alone scans as fast, by the `catalog_scan` bench).
fn compile_matcher(pattern: &str) -> Result<meta::Regex, String> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(regex_automata::MatchKind::LeftmostFirst)
                .utf8_empty(false)
                .which_captures(WhichCaptures::None)
                .auto_prefilter(false)
                .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                .hybrid_cache_capacity(2 << 20)
                .dfa(false)
                .onepass(false),
        )
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .build(pattern)
        .map_err(|e| e.to_string())
}

/// Every pattern of every entry, and every analyzer trigger, behind one literal prefilter.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    patterns: Vec<Pattern>,
    prefilter: Prefilter,
    /// Per analyzer of [`analyzers::ALL`], the entry index of its first outcome.
    first_outcome: Vec<usize>,
    /// (entry index, pattern index) of the entry patterns that match an empty line.
    matching_empty: Vec<(usize, usize)>,
    /// The entries without patterns that list exit codes or scheduler states: with the
    /// entries a scan's lines matched, the only ones that can be candidates.
    by_code_or_state: Vec<usize>,
    /// Per entry, then per analyzer, the range of its patterns in `patterns`.
    entry_patterns: Vec<std::ops::Range<usize>>,
    analyzer_patterns: Vec<std::ops::Range<usize>>,
    /// The plain way's `RegexSet`s, one per [`PLAIN_CHUNK`] patterns, for the tests (built on
    /// first use).
    #[cfg(test)]
    plain: OnceLock<Vec<regex::bytes::RegexSet>>,
}

/// Why a catalog's patterns could not be prepared.
#[derive(Debug)]
pub(crate) struct BuildError {
    /// The failing pattern, as (entry index, pattern index), when one is to blame.
    pub pattern: Option<(usize, usize)>,
    pub message: String,
}

impl Matcher {
    /// Parse the patterns of `entries` and the triggers of [`analyzers::ALL`] and build their
    /// prefilter (see `prefilter.rs`); the regexes compile on first use. `first_outcome` gives,
    /// per analyzer, where its outcomes start in `entries`. Every scan passes the same
    /// `entries` (the patterns' texts are read from them, not copied).
    pub fn build(entries: &[Entry], first_outcome: Vec<usize>) -> Result<Matcher, BuildError> {
        let mut patterns = Vec::new();
        let mut entry_patterns = Vec::with_capacity(entries.len());
        for (e, entry) in entries.iter().enumerate() {
            let start = patterns.len();
            patterns.extend((0..entry.patterns.len()).map(|p| Owner::Entry(e, p)));
            entry_patterns.push(start..patterns.len());
        }
        let mut analyzer_patterns = Vec::with_capacity(analyzers::ALL.len());
        for (a, analyzer) in analyzers::ALL.iter().enumerate() {
            let start = patterns.len();
            patterns.extend((0..analyzer.triggers.len()).map(|t| Owner::Analyzer(a, t)));
            analyzer_patterns.push(start..patterns.len());
        }
        let mut analyses = Vec::with_capacity(patterns.len());
        let mut matching_empty = Vec::new();
        let mut built = Vec::with_capacity(patterns.len());
        // The embedded catalog's needs were worked out at build time; a user's new pattern
        // (or an analyzer's trigger) is analyzed here.
        let known = need::Table::parse(BUILTIN_NEEDS);
        for owner in patterns {
            let blame = match owner {
                Owner::Entry(e, p) => Some((e, p)),
                Owner::Analyzer(..) => None,
            };
            let pattern = Pattern { owner, compiled: OnceLock::new() };
            let text = pattern.text(entries);
            let analysis = match known.get(text) {
                Some(analysis) => analysis,
                None => need::analyze(text).map_err(|message| BuildError { pattern: blame, message })?,
            };
            if analysis.may_match_empty {
                let re = compile_matcher(text).map_err(|message| BuildError { pattern: blame, message })?;
                if let Some(b) = blame
                    && re.is_match(&b""[..])
                {
                    matching_empty.push(b);
                }
                let _ = pattern.compiled.set(Some(re));
            }
            analyses.push(analysis);
            built.push(pattern);
        }
        let prefilter = Prefilter::build(&analyses);
        drop(analyses);
        let by_code_or_state = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.patterns.is_empty() && !(e.exit_codes.is_empty() && e.scheduler_states.is_empty()))
            .map(|(i, _)| i)
            .collect();
        Ok(Matcher {
            patterns: built,
            prefilter,
            first_outcome,
            matching_empty,
            by_code_or_state,
            entry_patterns,
            analyzer_patterns,
            #[cfg(test)]
            plain: OnceLock::new(),
        })
    }

    /// (entry index, pattern index) of every entry pattern that matches the empty line.
    pub fn matching_empty_line(&self) -> &[(usize, usize)] {
        &self.matching_empty
    }

    /// Indices (within the entry) of the patterns of entry `entry` that match `line`.
    #[cfg(test)]
    pub fn patterns_of_entry_matching(&self, entries: &[Entry], entry: usize, line: &str) -> Vec<usize> {
        self.patterns
            .iter()
            .filter_map(|p| match p.owner {
                Owner::Entry(e, i) if e == entry && p.is_match(entries, line.as_bytes()) => Some(i),
                _ => None,
            })
            .collect()
    }

    /// Calls `visit(number, line, patterns, retired)` for each non-empty line of `text` that
    /// matches anything, last line first, with its 0-based number and the indices of the
    /// patterns it matches, ascending: the prefilter's candidates, each checked by its own
    /// regex. Patterns that `visit` retires ([`Matcher::retire_entry`]) are not tried on the
    /// lines before.
    pub(crate) fn for_each_line_match<'t>(
        &self,
        entries: &[Entry],
        lines: &Lines<'t>,
        mut visit: impl FnMut(usize, &'t str, &[usize], &mut Retired<'_>),
    ) {
        // One buffer for every line's matches (a vector per matching line was a few percent
        // of a large tail's scan).
        let mut matched = Vec::new();
        self.prefilter.for_each_line(lines, |number, line, candidates, hits, retired| {
            matched.clear();
            for &p in candidates {
                let Some(pattern) = self.patterns.get(p) else { continue };
                let found = self.prefilter.is_anchor(p)
                    || match self.prefilter.starts(p, hits) {
                        Some(starts) => pattern.is_match_at(entries, line.as_bytes(), starts),
                        None => pattern.is_match(entries, line.as_bytes()),
                    };
                if found {
                    matched.push(p);
                }
            }
            if !matched.is_empty() {
                visit(number, line, &matched, retired);
            }
        });
    }

    /// Stop looking for entry `e`'s patterns in this scan.
    fn retire_entry(&self, e: usize, retired: &mut Retired<'_>) {
        retired.retire(self.entry_patterns.get(e).cloned().unwrap_or_default());
    }

    /// Stop looking for analyzer `a`'s triggers in this scan.
    fn retire_analyzer(&self, a: usize, retired: &mut Retired<'_>) {
        retired.retire(self.analyzer_patterns.get(a).cloned().unwrap_or_default());
    }

    /// [`Matcher::for_each_line_match`] as a list, for the tests.
    #[cfg(test)]
    pub(crate) fn line_matches<'t>(&self, entries: &[Entry], text: &'t str) -> Vec<(usize, &'t str, Vec<usize>)> {
        let mut out = Vec::new();
        self.for_each_line_match(entries, &Lines::new(text), |number, line, matched, _| {
            out.push((number, line, matched.to_vec()))
        });
        out.reverse();
        out
    }

    /// [`Matcher::line_matches`] the plain way, for the tests: every pattern tried on every
    /// line, by `RegexSet`s of all the patterns (what the scan did before the prefilter).
    ///
    /// One set of all of them (some 2,000 patterns) is what the scan once was, but as a test
    /// reference it is slow: each state of its lazy DFA stands for positions in every pattern,
    /// so states are many and slow to build, and the comparison over the corpus took minutes
    /// and more than a gigabyte, growing faster than the catalog. Sets of [`PLAIN_CHUNK`]
    /// patterns each find the same matches (a line's matches are the union of the sets',
    /// indices offset by each set's first pattern, in ascending order) with small, warm DFAs.
    #[cfg(test)]
    pub(crate) fn line_matches_plain<'t>(&self, entries: &[Entry], text: &'t str) -> Vec<(usize, &'t str, Vec<usize>)> {
        let sets = self.plain.get_or_init(|| {
            let texts: Vec<&str> = self.patterns.iter().map(|p| p.text(entries)).collect();
            texts
                .chunks(PLAIN_CHUNK)
                .map(|chunk| {
                    regex::bytes::RegexSetBuilder::new(chunk)
                        .unicode(false)
                        .size_limit(REGEX_SIZE_LIMIT * PLAIN_CHUNK)
                        .dfa_size_limit(16 << 20)
                        .build()
                        .expect("the catalog's patterns compile as a set")
                })
                .collect()
        });
        let mut out = Vec::new();
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.is_empty() {
                continue;
            }
            let matched: Vec<usize> = sets
                .iter()
                .enumerate()
                .filter(|(_, set)| set.is_match(line.as_bytes()))
                .flat_map(|(k, set)| set.matches(line.as_bytes()).into_iter().map(move |p| k * PLAIN_CHUNK + p))
                .collect();
            if !matched.is_empty() {
                out.push((i, line, matched));
            }
        }
        out
    }
}

/// Patterns per `RegexSet` of [`Matcher::line_matches_plain`].
#[cfg(test)]
const PLAIN_CHUNK: usize = 64;

/// `visit`, typed as taking lines of `text` (a closure's own parameters could not say so).
fn lines_of<'t, F: FnMut(usize, &'t str, &[usize], &mut Retired<'_>)>(_text: &'t str, visit: F) -> F {
    visit
}

/// What the exit code or scheduler state says about `entry`, if it lists either.
fn context_agreement(entry: &Entry, ctx: &ScanContext) -> (Option<String>, Option<String>) {
    let state =
        ctx.scheduler_state.filter(|s| entry.scheduler_states.contains(s)).map(|s| format!("scheduler state {s}"));
    let code = ctx.exit_code.filter(|c| entry.exit_codes.contains(c)).map(|c| format!("exit code {c}"));
    (state, code)
}

/// How a scan finds the lines' matches.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Matching {
    /// The literal prefilter, then each candidate's regex.
    Prefiltered,
    /// One `RegexSet` on every line (the tests' reference).
    #[cfg(test)]
    Plain,
}

/// Scan `text` with `entries` (compiled as `matcher`; the analyzers' outcomes among them) and
/// apply the verdict rule.
pub(crate) fn scan(entries: &[Entry], matcher: &Matcher, text: &str, ctx: &ScanContext) -> Hints {
    scan_with(entries, matcher, text, ctx, Matching::Prefiltered)
}

/// [`scan`], finding the matches `how`.
pub(crate) fn scan_with(entries: &[Entry], matcher: &Matcher, text: &str, ctx: &ScanContext, how: Matching) -> Hints {
    // ANSI escapes are stripped first, when the text may have any (the pass that finds the
    // line ends tells).
    let unstripped = Lines::new(text);
    let stripped: String;
    let lines = if unstripped.may_have_escapes() {
        stripped = strip_ansi(text).into_owned();
        Lines::new(&stripped)
    } else {
        unstripped
    };
    let text = lines.text();
    // Per entry, its last few matching lines (1-based number, text), kept in one list as
    // (entry, line, text), and per analyzer, the (0-based) last lines that woke it: both
    // collected last line first (the lines come that way). An entry or analyzer with all the
    // lines it keeps is retired, so the earlier lines are not matched against it.
    let mut kept = vec![0u8; entries.len()];
    let mut found: Vec<(usize, usize, &str)> = Vec::with_capacity(64);
    let mut woken: Vec<Woken> = vec![Woken::default(); matcher.first_outcome.len()];
    let mut seen_on_line: Vec<usize> = Vec::with_capacity(16);
    let mut on_line = lines_of(text, |i, line, matched, retired| {
        seen_on_line.clear();
        for &p in matched {
            let e = match matcher.patterns.get(p).map(|p| p.owner) {
                Some(Owner::Entry(e, _)) => e,
                Some(Owner::Analyzer(a, t)) => {
                    if let Some(w) = woken.get_mut(a) {
                        w.add(i, t);
                        if w.lines.len() == MAX_WOKEN_LINES {
                            matcher.retire_analyzer(a, retired);
                        }
                    }
                    continue;
                }
                None => continue,
            };
            if seen_on_line.contains(&e) {
                continue;
            }
            seen_on_line.push(e);
            if let Some(k) = kept.get_mut(e)
                && usize::from(*k) < Hints::MAX_LINES_PER_ENTRY
            {
                *k += 1;
                found.push((e, i + 1, line));
                if usize::from(*k) == Hints::MAX_LINES_PER_ENTRY {
                    matcher.retire_entry(e, retired);
                }
            }
        }
    });
    match how {
        Matching::Prefiltered => matcher.for_each_line_match(entries, &lines, &mut on_line),
        #[cfg(test)]
        Matching::Plain => {
            let mut unused = Vec::new();
            for (i, line, matched) in matcher.line_matches_plain(entries, text).into_iter().rev() {
                on_line(i, line, &matched, &mut Retired::ignored(&mut unused));
            }
        }
    }
    woken.iter_mut().for_each(|w| {
        w.lines.reverse();
        w.triggers.reverse();
    });
    // By entry, in catalog order (the verdict rule's last tie-break, and the order the
    // reported matches expect), each entry's lines ascending; with `by_code_or_state`, the only
    // entries the verdict looks at (a few hundred entries are not walked for each scan).
    found.sort_unstable_by_key(|&(e, n, _)| (e, n));
    let mut touched: Vec<usize> = found.iter().map(|f| f.0).collect();
    touched.extend_from_slice(&matcher.by_code_or_state);
    touched.sort_unstable();
    touched.dedup();

    let mut candidates = Vec::with_capacity(touched.len() + woken.len());
    // What each candidate would report; made into `HintMatch`es (strings) only for the few
    // that are reported.
    let mut listed: Vec<(Candidate, Listed<'_>)> = Vec::with_capacity(found.len() + touched.len() + woken.len());
    let mut rest = found.as_slice();
    for &e in &touched {
        let Some(entry) = entries.get(e) else { continue };
        let (entry_hits, after) = rest.split_at(rest.iter().take_while(|f| f.0 == e).count());
        rest = after;
        if entry_hits.is_empty() && !entry.patterns.is_empty() {
            continue;
        }
        let (state, code) = context_agreement(entry, ctx);
        if let Some(&(_, last, _)) = entry_hits.last() {
            let confirmed_by = state.or(code);
            let basis = if confirmed_by.is_some() { Basis::TextConfirmed } else { Basis::TextOnly };
            for &(_, n, t) in entry_hits {
                let cand = Candidate { entry: e, line: n, basis };
                listed.push((cand, Listed { text: ListedText::Line(t), confirmed_by: confirmed_by.clone() }));
            }
            candidates.push(Candidate { entry: e, line: last, basis });
        } else {
            let (basis, what) = match (state, code) {
                (Some(s), _) => (Basis::StateOnly, s),
                (None, Some(c)) => (Basis::ExitCodeOnly, c),
                (None, None) => continue,
            };
            let cand = Candidate { entry: e, line: 0, basis };
            listed.push((cand.clone(), Listed { text: ListedText::Said(what), confirmed_by: None }));
            candidates.push(cand);
        }
    }

    if woken.iter().any(|w| !w.lines.is_empty()) {
        let lines = lines.all();
        for (a, w) in woken.iter().enumerate().filter(|(_, w)| !w.lines.is_empty()) {
            let (Some(analyzer), Some(&first)) = (analyzers::ALL.get(a), matcher.first_outcome.get(a)) else {
                continue;
            };
            let Some(f) = (analyzer.analyze)(&Input { lines: &lines, woken: &w.lines, triggered: &w.triggers, ctx })
            else {
                continue;
            };
            let (Some(_), Some(&line)) = (entries.get(first + f.outcome), lines.get(f.line)) else {
                continue;
            };
            let basis = if f.confirmed_by.is_some() { Basis::TextConfirmed } else { Basis::TextOnly };
            let cand = Candidate { entry: first + f.outcome, line: f.line + 1, basis };
            listed.push((cand.clone(), Listed { text: ListedText::Line(line), confirmed_by: f.confirmed_by }));
            candidates.push(cand);
        }
    }

    let Some(best) = decide(&candidates, entries) else {
        return Hints::unknown();
    };
    let Some(entry) = entries.get(best.entry) else {
        return Hints::unknown();
    };
    let evidence =
        listed.iter().find(|(c, _)| c.entry == best.entry && c.line == best.line).map(|(c, l)| l.to_match(c, entry));
    if let Some(other) = contrary(&candidates, best, entries)
        && let Some(o) = entries.get(other.entry)
    {
        return Hints {
            verdict: crate::model::Verdict::Unknown,
            category: Some(entry.category.to_string()),
            action: Some(crate::model::SuggestedAction::Escalate),
            strategy: Some(crate::model::Strategy::Escalate),
            hint: Some(format!(
                "Conflicting evidence of the same weight: line {} (`{}`, {}) says: {} Line {} (`{}`, {}) says: {} \
                 The catalog does not decide; the first error is usually the cause.",
                best.line,
                entry.id,
                entry.class.verdict().as_str(),
                entry.hint,
                other.line,
                o.id,
                o.class.verdict().as_str(),
                o.hint
            )),
            matches: cap_matches(listed, best, entries),
            evidence,
        };
    }
    Hints {
        verdict: entry.class.verdict(),
        category: Some(entry.category.to_string()),
        action: Some(entry.action),
        strategy: Some(entry.strategy),
        hint: Some(entry.hint.clone()),
        matches: cap_matches(listed, best, entries),
        evidence,
    }
}

/// The lines that woke one analyzer, collected last line first: 0-based numbers and, per line,
/// which of its triggers matched (bit `t` for trigger `t`), so the analyzer need not run them
/// again.
#[derive(Debug, Clone, Default)]
struct Woken {
    lines: Vec<usize>,
    triggers: Vec<u32>,
}

impl Woken {
    /// Trigger `t` matched line `i` (lines come last to first; one line's triggers together).
    fn add(&mut self, i: usize, t: usize) {
        let bit = if t < MAX_TRIGGERS { 1u32 << t } else { 0 };
        match (self.lines.last(), self.triggers.last_mut()) {
            (Some(&last), Some(bits)) if last == i => *bits |= bit,
            _ if self.lines.len() < MAX_WOKEN_LINES => {
                self.lines.push(i);
                self.triggers.push(bit);
            }
            _ => {}
        }
    }
}

/// What a candidate would report as a [`HintMatch`], without its strings made yet.
struct Listed<'t> {
    text: ListedText<'t>,
    confirmed_by: Option<String>,
}

/// The text of a [`HintMatch`] to be.
enum ListedText<'t> {
    /// A line of the tail (reported as its excerpt).
    Line(&'t str),
    /// What matched instead of a line (`exit code 137`).
    Said(String),
}

impl Listed<'_> {
    /// The match of `cand`, a candidate of `entry`.
    fn to_match(&self, cand: &Candidate, entry: &Entry) -> HintMatch {
        HintMatch {
            id: entry.id.clone(),
            class: entry.class,
            category: entry.category.clone(),
            line: cand.line,
            text: match &self.text {
                ListedText::Line(line) => excerpt(line),
                ListedText::Said(what) => what.clone(),
            },
            confirmed_by: self.confirmed_by.clone(),
        }
    }
}

/// Line order (line-0 matches first), at most [`Hints::MAX_MATCHES`], keeping the latest
/// lines and always the deciding match.
fn cap_matches(mut listed: Vec<(Candidate, Listed<'_>)>, best: &Candidate, entries: &[Entry]) -> Vec<HintMatch> {
    listed.sort_by_key(|(c, _)| (c.line, c.entry));
    let is_best = |c: &Candidate| c.entry == best.entry && c.line == best.line;
    let best_pos = listed.iter().position(|(c, _)| is_best(c));
    let line0 = listed.iter().take_while(|(c, _)| c.line == 0).count();
    // Drop the earliest text matches (after the line-0 ones), but not the deciding one.
    let mut drop = listed.len().saturating_sub(Hints::MAX_MATCHES);
    let mut kept = Vec::with_capacity(listed.len().min(Hints::MAX_MATCHES));
    for (i, (cand, item)) in listed.iter().enumerate() {
        if i >= line0 && drop > 0 && Some(i) != best_pos {
            drop -= 1;
            continue;
        }
        kept.extend(entries.get(cand.entry).map(|e| item.to_match(cand, e)));
    }
    kept
}
