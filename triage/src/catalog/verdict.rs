//! The verdict rule: how the matches of one scan make one verdict.
//!
//! Every matching entry is a candidate, at its latest matching line. The candidate with the
//! highest key decides, comparing in this order:
//!
//! 1. **Basis.** Text confirmed by the exit code or scheduler state (the entry lists them and
//!    they agree) > scheduler state alone > text alone > exit code alone. A specific match
//!    beats a generic one (DESIGN.md, seed 001); the scheduler saying PREEMPTED or TIMEOUT is
//!    strong evidence; an exit code alone (137, 139) rarely says why.
//! 2. **Priority.** The entry's `priority` (default 0). Root causes that explain the noise
//!    after them (an OOM kill, an ECC error, a time limit) are high; generic lines that are
//!    often *consequences* (a broken pipe, "No matching distribution" after network errors, a
//!    wrapper's "worker died") are low.
//! 3. **Line.** The later line wins: a tail ends with the fatal error, and earlier lines are
//!    often warnings that were retried or recovered.
//! 4. **Class, on the same line.** permanent > transient > context, so a context entry can
//!    only take a line from a decisive entry by a higher priority.
//! 5. **Catalog order**: the earlier entry.
//!
//! **Conflict.** When a transient and a permanent candidate tie on basis and priority and only
//! the line order (3) separates them, the tail holds contrary evidence of the same weight: the
//! verdict is `unknown`, with both named in the hint ([`contrary`]). Consequences are written
//! with lower priorities than the root causes they follow, so they never conflict with them.
//!
//! A `context` entry never yields transient or permanent. When one decides (it outranked every
//! decisive match, or nothing else matched) the verdict is `unknown`, with that entry's
//! category and hint, so "CUDA out of memory" or "exit 137" sends the job to a person (or to
//! the agent's judgement) with the reason attached.

use std::cmp::Reverse;

use super::entry::Entry;
use crate::model::EntryClass;

/// How a candidate matched, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Basis {
    /// An entry without patterns matched the exit code.
    ExitCodeOnly,
    /// Patterns matched; the exit code and state did not confirm (or the entry lists none).
    TextOnly,
    /// An entry without patterns matched the scheduler state.
    StateOnly,
    /// Patterns matched and the exit code or scheduler state agreed.
    TextConfirmed,
}

/// One entry that matched.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// Index into the catalog's entries.
    pub entry: usize,
    /// Latest matching line (1-based); 0 for an exit-code or state match.
    pub line: usize,
    pub basis: Basis,
}

fn class_rank(class: EntryClass) -> u8 {
    match class {
        EntryClass::Permanent => 2,
        EntryClass::Transient => 1,
        EntryClass::Context => 0,
    }
}

/// The comparison key of the rule above; larger wins.
fn key(c: &Candidate, entries: &[Entry]) -> (Basis, i32, usize, u8, Reverse<usize>) {
    let (priority, class) = entries.get(c.entry).map_or((i32::MIN, EntryClass::Context), |e| (e.priority, e.class));
    (c.basis, priority, c.line, class_rank(class), Reverse(c.entry))
}

/// The deciding candidate, if any matched.
pub(crate) fn decide<'a>(candidates: &'a [Candidate], entries: &[Entry]) -> Option<&'a Candidate> {
    candidates.iter().max_by_key(|c| key(c, entries))
}

/// A decisive candidate of the class opposite to `best`'s that ties with it on basis and
/// priority, on another line: the tail carries transient and permanent evidence of the same
/// weight, and only the line order would separate them. That is a conflict, and the verdict is
/// `unknown` (a wrong verdict costs more than none). On `best`'s own line the class order
/// (rule 4) stands: one line is one piece of evidence. A lower priority never conflicts: root
/// causes outrank their consequences by priority, so the catalog keeps deciding for them.
pub(crate) fn contrary<'a>(candidates: &'a [Candidate], best: &Candidate, entries: &[Entry]) -> Option<&'a Candidate> {
    let b = entries.get(best.entry)?;
    let opposite = match b.class {
        EntryClass::Transient => EntryClass::Permanent,
        EntryClass::Permanent => EntryClass::Transient,
        EntryClass::Context => return None,
    };
    candidates
        .iter()
        .filter(|c| c.basis == best.basis && c.line != best.line)
        .filter(|c| entries.get(c.entry).is_some_and(|e| e.class == opposite && e.priority == b.priority))
        .max_by_key(|c| key(c, entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Strategy, SuggestedAction};

    fn entry(id: &str, class: EntryClass, priority: i32) -> Entry {
        Entry {
            id: id.into(),
            class,
            category: "x".into(),
            patterns: vec!["x".into()],
            exit_codes: vec![],
            scheduler_states: vec![],
            action: SuggestedAction::Escalate,
            strategy: Strategy::Escalate,
            hint: "h".into(),
            priority,
            examples: vec![],
            counter_examples: vec![],
            source: "test".into(),
        }
    }

    fn cand(entry: usize, line: usize, basis: Basis) -> Candidate {
        Candidate { entry, line, basis }
    }

    fn winner(cands: &[Candidate], entries: &[Entry]) -> usize {
        decide(cands, entries).map(|c| c.entry).unwrap_or(usize::MAX)
    }

    #[test]
    fn basis_beats_priority_and_line() {
        let es = [entry("a", EntryClass::Transient, 50), entry("b", EntryClass::Permanent, 0)];
        let cs = [cand(0, 9, Basis::TextOnly), cand(1, 1, Basis::TextConfirmed)];
        assert_eq!(winner(&cs, &es), 1);
        let cs = [cand(0, 9, Basis::TextOnly), cand(1, 0, Basis::StateOnly)];
        assert_eq!(winner(&cs, &es), 1);
        let cs = [cand(0, 9, Basis::TextOnly), cand(1, 0, Basis::ExitCodeOnly)];
        assert_eq!(winner(&cs, &es), 0);
    }

    #[test]
    fn priority_beats_line_and_later_line_beats_earlier() {
        let es = [entry("a", EntryClass::Transient, 10), entry("b", EntryClass::Permanent, 0)];
        assert_eq!(winner(&[cand(0, 1, Basis::TextOnly), cand(1, 5, Basis::TextOnly)], &es), 0);
        let es = [entry("a", EntryClass::Transient, 0), entry("b", EntryClass::Permanent, 0)];
        assert_eq!(winner(&[cand(0, 7, Basis::TextOnly), cand(1, 5, Basis::TextOnly)], &es), 0);
    }

    #[test]
    fn same_line_permanent_then_transient_then_context_then_order() {
        let es = [
            entry("c", EntryClass::Context, 0),
            entry("t", EntryClass::Transient, 0),
            entry("p", EntryClass::Permanent, 0),
            entry("p2", EntryClass::Permanent, 0),
        ];
        let all: Vec<_> = (0..4).map(|i| cand(i, 3, Basis::TextOnly)).collect();
        assert_eq!(winner(&all, &es), 2);
        assert_eq!(winner(&all[..2], &es), 1);
    }

    #[test]
    fn equal_weight_on_two_lines_conflicts() {
        let es = [entry("t", EntryClass::Transient, 0), entry("p", EntryClass::Permanent, 0)];
        let cs = [cand(0, 2, Basis::TextOnly), cand(1, 5, Basis::TextOnly)];
        let best = decide(&cs, &es).unwrap();
        assert_eq!(contrary(&cs, best, &es).map(|c| c.entry), Some(0));
        // On one line, the class order decides: no conflict.
        let cs = [cand(0, 5, Basis::TextOnly), cand(1, 5, Basis::TextOnly)];
        assert!(contrary(&cs, decide(&cs, &es).unwrap(), &es).is_none());
        // A lower priority (a consequence) or a weaker basis never conflicts.
        let es = [entry("t", EntryClass::Transient, -5), entry("p", EntryClass::Permanent, 0)];
        let cs = [cand(0, 9, Basis::TextOnly), cand(1, 5, Basis::TextOnly)];
        assert!(contrary(&cs, decide(&cs, &es).unwrap(), &es).is_none());
        let es = [entry("t", EntryClass::Transient, 0), entry("p", EntryClass::Permanent, 0)];
        let cs = [cand(0, 9, Basis::TextOnly), cand(1, 5, Basis::TextConfirmed)];
        assert!(contrary(&cs, decide(&cs, &es).unwrap(), &es).is_none());
    }

    #[test]
    fn nothing_decides_nothing() {
        assert!(decide(&[], &[]).is_none());
    }
}
