//! Matching: one `RegexSet` holding every pattern of every entry, run once per line.
//!
//! The set is built once, at load. A scan strips ANSI escapes, splits the text into lines,
//! asks the set whether the line matches anything (the common answer is no, and that costs
//! one pass of the set's DFA), and only for lines that do, which patterns; each pattern index
//! maps back to its entry. Entries without patterns match on the exit code or scheduler state
//! alone. The verdict rule (`verdict.rs`) then picks the deciding match.

use regex::{RegexSet, RegexSetBuilder};

use super::ansi::strip_ansi;
use super::entry::Entry;
use super::hints::{HintMatch, Hints, ScanContext, excerpt};
use super::verdict::{Basis, Candidate, decide};

/// Compiled size allowed for one pattern (compiled alone to check examples or find a bad one).
pub(crate) const REGEX_SIZE_LIMIT: usize = 4 << 20;
/// Compiled size allowed for the whole set.
const SET_SIZE_LIMIT: usize = 256 << 20;
/// Lazy-DFA cache for the set; large enough that a big catalog does not thrash it.
const DFA_SIZE_LIMIT: usize = 32 << 20;

/// Every pattern of every entry, in one set.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    set: RegexSet,
    /// Set index → (entry index, pattern index within the entry).
    owner: Vec<(usize, usize)>,
}

impl Matcher {
    /// Compile the patterns of `entries` into one set.
    pub fn build(entries: &[Entry]) -> Result<Matcher, String> {
        let mut owner = Vec::new();
        let mut patterns = Vec::new();
        for (e, entry) in entries.iter().enumerate() {
            for (p, pattern) in entry.patterns.iter().enumerate() {
                owner.push((e, p));
                patterns.push(pattern.as_str());
            }
        }
        let set = RegexSetBuilder::new(patterns)
            .size_limit(SET_SIZE_LIMIT)
            .dfa_size_limit(DFA_SIZE_LIMIT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Matcher { set, owner })
    }

    /// (entry index, pattern index) of every pattern that matches the empty line.
    pub fn matching_empty_line(&self) -> Vec<(usize, usize)> {
        self.set.matches("").iter().filter_map(|i| self.owner.get(i).copied()).collect()
    }

    /// Indices (within the entry) of the patterns of entry `entry` that match `line`.
    #[cfg(test)]
    pub fn patterns_of_entry_matching(&self, entry: usize, line: &str) -> Vec<usize> {
        self.set
            .matches(line)
            .iter()
            .filter_map(|i| self.owner.get(i))
            .filter(|(e, _)| *e == entry)
            .map(|&(_, p)| p)
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

/// Scan `text` with `entries` (compiled as `matcher`) and apply the verdict rule.
pub(crate) fn scan(entries: &[Entry], matcher: &Matcher, text: &str, ctx: &ScanContext) -> Hints {
    let text = strip_ansi(text);
    // Per entry, its last few matching lines (1-based number, text).
    let mut hits: Vec<Vec<(usize, &str)>> = vec![Vec::new(); entries.len()];
    let mut seen_on_line: Vec<usize> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.is_empty() || !matcher.set.is_match(line) {
            continue;
        }
        seen_on_line.clear();
        for p in matcher.set.matches(line).iter() {
            let Some(&(e, _)) = matcher.owner.get(p) else {
                continue;
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

    let Some(best) = decide(&candidates, entries) else {
        return Hints::unknown();
    };
    let Some(entry) = entries.get(best.entry) else {
        return Hints::unknown();
    };
    let evidence = listed.iter().find(|(c, _)| c.entry == best.entry && c.line == best.line).map(|(_, m)| m.clone());
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
