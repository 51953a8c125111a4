//! Matching: one `RegexSet` holding every pattern of every entry, run once per line, on the
//! line's bytes with Unicode off (ASCII `\w`, `\b`, `(?i)`): the lazy DFA then never falls
//! back on non-ASCII text, which keeps a set of a few hundred patterns as fast as the
//! 129-entry catalog was with Unicode on.
//!
//! The set is built once, at load. A scan strips ANSI escapes, splits the text into lines,
//! asks the set whether the line matches anything (the common answer is no, and that costs
//! one pass of the set's DFA), and only for lines that do, which patterns; each pattern index
//! maps back to its entry. Entries without patterns match on the exit code or scheduler state
//! alone. The set also holds the analyzers' triggers (`analyzers/`): an analyzer whose
//! trigger matched a line then reads the text and may add a finding, which competes like an
//! entry's match. The verdict rule (`verdict.rs`) then picks the deciding match.

use regex::bytes::{RegexSet, RegexSetBuilder};

use super::analyzers::{self, Input, MAX_WOKEN_LINES};
use super::ansi::strip_ansi;
use super::entry::Entry;
use super::hints::{HintMatch, Hints, ScanContext, excerpt};
use super::verdict::{Basis, Candidate, contrary, decide};

/// Compiled size allowed for one pattern (compiled alone to check examples or find a bad one).
pub(crate) const REGEX_SIZE_LIMIT: usize = 4 << 20;
/// Compiled size allowed for the whole set.
const SET_SIZE_LIMIT: usize = 256 << 20;
/// Lazy-DFA cache for the set; large enough that a big catalog does not thrash it.
const DFA_SIZE_LIMIT: usize = 32 << 20;

/// Whose pattern a set index is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// (entry index, pattern index within the entry).
    Entry(usize, usize),
    /// A trigger of this analyzer (index into [`analyzers::ALL`]).
    Analyzer(usize),
}

/// Every pattern of every entry, and every analyzer trigger, in one set.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    set: RegexSet,
    owner: Vec<Owner>,
    /// Per analyzer of [`analyzers::ALL`], the entry index of its first outcome.
    first_outcome: Vec<usize>,
}

impl Matcher {
    /// Compile the patterns of `entries` and the triggers of [`analyzers::ALL`] into one set;
    /// `first_outcome` gives, per analyzer, where its outcomes start in `entries`.
    pub fn build(entries: &[Entry], first_outcome: Vec<usize>) -> Result<Matcher, String> {
        let mut owner = Vec::new();
        let mut patterns = Vec::new();
        for (e, entry) in entries.iter().enumerate() {
            for (p, pattern) in entry.patterns.iter().enumerate() {
                owner.push(Owner::Entry(e, p));
                patterns.push(pattern.as_str());
            }
        }
        for (a, analyzer) in analyzers::ALL.iter().enumerate() {
            for trigger in analyzer.triggers() {
                owner.push(Owner::Analyzer(a));
                patterns.push(trigger);
            }
        }
        let set = RegexSetBuilder::new(patterns)
            .unicode(false)
            .size_limit(SET_SIZE_LIMIT)
            .dfa_size_limit(DFA_SIZE_LIMIT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Matcher { set, owner, first_outcome })
    }

    /// (entry index, pattern index) of every entry pattern that matches the empty line.
    pub fn matching_empty_line(&self) -> Vec<(usize, usize)> {
        self.set
            .matches(b"")
            .iter()
            .filter_map(|i| match self.owner.get(i) {
                Some(&Owner::Entry(e, p)) => Some((e, p)),
                _ => None,
            })
            .collect()
    }

    /// Indices (within the entry) of the patterns of entry `entry` that match `line`.
    #[cfg(test)]
    pub fn patterns_of_entry_matching(&self, entry: usize, line: &str) -> Vec<usize> {
        self.set
            .matches(line.as_bytes())
            .iter()
            .filter_map(|i| match self.owner.get(i) {
                Some(&Owner::Entry(e, p)) if e == entry => Some(p),
                _ => None,
            })
            .collect()
    }
}

/// What the exit code or scheduler state says about `entry`, if it lists either.
fn context_agreement(entry: &Entry, ctx: &ScanContext) -> (Option<String>, Option<String>) {
    let state =
        ctx.scheduler_state.filter(|s| entry.scheduler_states.contains(s)).map(|s| format!("scheduler state {s}"));
    let code = ctx.exit_code.filter(|c| entry.exit_codes.contains(c)).map(|c| format!("exit code {c}"));
    (state, code)
}

/// Scan `text` with `entries` (compiled as `matcher`; the analyzers' outcomes among them) and
/// apply the verdict rule.
pub(crate) fn scan(entries: &[Entry], matcher: &Matcher, text: &str, ctx: &ScanContext) -> Hints {
    let text = strip_ansi(text);
    // Per entry, its last few matching lines (1-based number, text).
    let mut hits: Vec<Vec<(usize, &str)>> = vec![Vec::new(); entries.len()];
    // Per analyzer, the (0-based) lines that woke it.
    let mut woken: Vec<Vec<usize>> = vec![Vec::new(); matcher.first_outcome.len()];
    let mut seen_on_line: Vec<usize> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.is_empty() || !matcher.set.is_match(line.as_bytes()) {
            continue;
        }
        seen_on_line.clear();
        for p in matcher.set.matches(line.as_bytes()).iter() {
            let e = match matcher.owner.get(p) {
                Some(&Owner::Entry(e, _)) => e,
                Some(&Owner::Analyzer(a)) => {
                    if let Some(w) = woken.get_mut(a)
                        && w.last() != Some(&i)
                    {
                        if w.len() == MAX_WOKEN_LINES {
                            w.remove(0);
                        }
                        w.push(i);
                    }
                    continue;
                }
                None => continue,
            };
            if seen_on_line.contains(&e) {
                continue;
            }
            seen_on_line.push(e);
            if let Some(h) = hits.get_mut(e) {
                if h.len() == Hints::MAX_LINES_PER_ENTRY {
                    h.remove(0);
                }
                h.push((i + 1, line));
            }
        }
    }

    let mut candidates = Vec::new();
    let mut listed: Vec<(Candidate, HintMatch)> = Vec::new();
    for (e, entry) in entries.iter().enumerate() {
        let (state, code) = context_agreement(entry, ctx);
        let record = |line: usize, text: String, confirmed_by: Option<String>| HintMatch {
            id: entry.id.clone(),
            class: entry.class,
            category: entry.category.clone(),
            line,
            text,
            confirmed_by,
        };
        let entry_hits = hits.get(e).map_or(&[][..], Vec::as_slice);
        if let Some(&(last, _)) = entry_hits.last() {
            let confirmed_by = state.or(code);
            let basis = if confirmed_by.is_some() { Basis::TextConfirmed } else { Basis::TextOnly };
            for &(n, t) in entry_hits {
                let cand = Candidate { entry: e, line: n, basis };
                listed.push((cand, record(n, excerpt(t), confirmed_by.clone())));
            }
            candidates.push(Candidate { entry: e, line: last, basis });
        } else if entry.patterns.is_empty() {
            let (basis, what) = match (state, code) {
                (Some(s), _) => (Basis::StateOnly, s),
                (None, Some(c)) => (Basis::ExitCodeOnly, c),
                (None, None) => continue,
            };
            let cand = Candidate { entry: e, line: 0, basis };
            listed.push((cand.clone(), record(0, what, None)));
            candidates.push(cand);
        }
    }

    if woken.iter().any(|w| !w.is_empty()) {
        let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        for (a, w) in woken.iter().enumerate().filter(|(_, w)| !w.is_empty()) {
            let (Some(analyzer), Some(&first)) = (analyzers::ALL.get(a), matcher.first_outcome.get(a)) else {
                continue;
            };
            let Some(f) = analyzer.analyze(&Input { lines: &lines, woken: w, ctx }) else {
                continue;
            };
            let (Some(entry), Some(line)) = (entries.get(first + f.outcome), lines.get(f.line)) else {
                continue;
            };
            let basis = if f.confirmed_by.is_some() { Basis::TextConfirmed } else { Basis::TextOnly };
            let cand = Candidate { entry: first + f.outcome, line: f.line + 1, basis };
            let m = HintMatch {
                id: entry.id.clone(),
                class: entry.class,
                category: entry.category.clone(),
                line: f.line + 1,
                text: excerpt(line),
                confirmed_by: f.confirmed_by,
            };
            listed.push((cand.clone(), m));
            candidates.push(cand);
        }
    }

    let Some(best) = decide(&candidates, entries) else {
        return Hints::unknown();
    };
    let Some(entry) = entries.get(best.entry) else {
        return Hints::unknown();
    };
    let evidence = listed.iter().find(|(c, _)| c.entry == best.entry && c.line == best.line).map(|(_, m)| m.clone());
    if let Some(other) = contrary(&candidates, best, entries)
        && let Some(o) = entries.get(other.entry)
    {
        return Hints {
            verdict: crate::model::Verdict::Unknown,
            category: Some(entry.category.clone()),
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
            matches: cap_matches(listed, best),
            evidence,
        };
    }
    Hints {
        verdict: entry.class.verdict(),
        category: Some(entry.category.clone()),
        action: Some(entry.action),
        strategy: Some(entry.strategy),
        hint: Some(entry.hint.clone()),
        matches: cap_matches(listed, best),
        evidence,
    }
}

/// Line order (line-0 matches first), at most [`Hints::MAX_MATCHES`], keeping the latest
/// lines and always the deciding match.
fn cap_matches(mut listed: Vec<(Candidate, HintMatch)>, best: &Candidate) -> Vec<HintMatch> {
    listed.sort_by_key(|(c, _)| (c.line, c.entry));
    if listed.len() > Hints::MAX_MATCHES {
        let is_best = |c: &Candidate| c.entry == best.entry && c.line == best.line;
        let best_pos = listed.iter().position(|(c, _)| is_best(c));
        let line0 = listed.iter().take_while(|(c, _)| c.line == 0).count();
        let drop = listed.len() - Hints::MAX_MATCHES;
        // Drop the earliest text matches (after the line-0 ones), but not the deciding one.
        let mut kept = Vec::with_capacity(Hints::MAX_MATCHES);
        let mut dropped = 0;
        for (i, item) in listed.into_iter().enumerate() {
            if i >= line0 && dropped < drop && Some(i) != best_pos {
                dropped += 1;
                continue;
            }
            kept.push(item);
        }
        listed = kept;
    }
    listed.into_iter().map(|(_, m)| m).collect()
}
