//! The scan's literal prefilter: which lines can a pattern match at all?
//!
//! Why: one lazy DFA for a few hundred patterns at once (a `RegexSet`) spends most of its time
//! building and evicting states, and scans well under 100 MiB/s; most lines of a tail match
//! nothing. Nearly every catalog pattern contains literal text that any match must contain
//! (`Connection reset`, `oom-kill`, `NCCL`). `need.rs` works out, per pattern, *what a line
//! must contain* for the pattern to match it (a [`Need`]: literals, all of some, one of
//! others); this module searches the whole tail once for one literal set per pattern (its *anchors*, the
//! most specific set it needs; `grams.rs` finds them all in one pass), and on each line where
//! an anchor occurs checks the rest of the pattern's need (the other literals it needs, found
//! with `memchr::memmem` on the lowercased line) before the scan runs the pattern's own
//! regex. A pattern without a usable literal is a candidate on every line. The prefilter only
//! ever removes (line, pattern) pairs that cannot match, so the matches are exactly the plain
//! per-line `RegexSet`'s (a test compares both on every corpus file).

use std::sync::OnceLock;

use memchr::memmem;

use super::grams::Grams;
use super::lines::Lines;
use super::need::{Analysis, Anchoring, MAX_SET, Need};
use super::packed::Packed;
use super::word_edges::{self, Edges};

/// A literal set larger than this is not checked on candidate lines (only as anchors).
const MAX_CHECKED: usize = 4 * MAX_SET;

/// A [`Need`] with its literals as indices into [`Prefilter::literals`].
#[derive(Debug, Clone)]
enum Cond {
    Always,
    AnyOf(Vec<usize>),
    All(Vec<Cond>),
    Either(Vec<Cond>),
}

/// Every pattern's need, ready to check lines: the anchors in one [`Grams`] search; a pattern
/// is a candidate on a line where one of its anchors occurs, and passes when the line meets
/// its need (the other literals are looked for in the candidate lines only).
#[derive(Debug, Clone)]
pub(crate) struct Prefilter {
    /// Finds the anchors, `literals[..anchors]`.
    grams: Grams,
    /// Every literal any need names (lowercase), the anchors first.
    literals: Packed<u8>,
    anchors: usize,
    /// A searcher for each literal past the anchors (`literals[anchors + i]`), built the
    /// first time a line is searched for it: the catalog has thousands of such literals, a
    /// searcher takes about 300 bytes, and a process that scans a few tails needs few of them.
    finders: Vec<OnceLock<Box<memmem::Finder<'static>>>>,
    /// Per literal, the patterns anchored on it (none for a literal that is only checked).
    owners: Packed<usize>,
    /// Per pattern, its need.
    conds: Vec<Cond>,
    /// Patterns that need nothing: candidates on every line.
    always: Vec<usize>,
    /// Per pattern, where its matches are against its anchors (`need::Analysis`).
    anchoring: Vec<Anchoring>,
}

/// The anchors found on one line, as (offset in the line, literal index), by offset.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineHits<'h> {
    /// Where the line starts in the text (the hits' offsets are the text's).
    start: usize,
    hits: &'h [(usize, usize)],
}

/// State of a scan: which literals and patterns were looked at on which line (lines are told
/// apart by a `stamp`, unique per line and never 0, and never reused on the thread: see
/// [`Scratch::next_stamp`]), and buffers. Kept per thread and reused, so a scan neither
/// allocates nor clears a table the size of the catalog (on a tail of a few KiB, that was a
/// tenth of the time).
#[derive(Default)]
struct Scratch {
    /// Per literal, `2 * stamp + found` for the last line it was looked for on.
    literal_seen: Vec<usize>,
    /// Per pattern, the stamp of the last line it was a candidate on.
    pattern_seen: Vec<usize>,
    /// Per pattern, the first stamp of the last scan that retired it ([`Retired`]).
    pattern_retired: Vec<usize>,
    candidates: Vec<usize>,
    passing: Vec<usize>,
    /// The current line, lowercased when a need looked for a literal that is not an anchor.
    lower: Vec<u8>,
    lowered: bool,
    /// The anchors found in the text.
    hits: Vec<(usize, usize)>,
    /// Stamps from this one on were never used: a scan's line ending at byte `end` is
    /// `next_stamp + end`, and the scan then moves it past its text.
    next_stamp: usize,
}

thread_local! {
    /// The thread's [`Scratch`], taken by a scan and put back after it (a scan started
    /// inside another one's `visit` gets a fresh one).
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

impl Prefilter {
    /// From each pattern's analysis (its need, anchors and anchoring).
    pub fn build(analyses: &[Analysis]) -> Prefilter {
        // Every literal is interned as a slice of the analyses, not copied: the catalog names
        // about twelve thousand, and three owned copies of each (key, list, text) were most of
        // a process's peak heap while it built this.
        let mut interner = Interner::default();
        let mut anchored: Vec<(usize, usize)> = Vec::new();
        let mut always = Vec::new();
        for (p, analysis) in analyses.iter().enumerate() {
            match &analysis.anchors {
                Some(anchors) => anchored.extend(anchors.iter().map(|lit| (interner.intern(lit), p))),
                None => always.push(p),
            }
        }
        let anchors = anchored.iter().map(|&(lit, _)| lit + 1).max().unwrap_or(0);
        let conds: Vec<Cond> = analyses.iter().map(|a| to_cond(&a.need, &mut interner)).collect();
        let anchoring = analyses.iter().map(|a| a.anchoring).collect();
        let mut owners = vec![Vec::new(); anchors];
        for (lit, p) in anchored {
            if let Some(o) = owners.get_mut(lit)
                && o.last() != Some(&p)
            {
                o.push(p);
            }
        }
        // The anchors are searched for with the word boundaries their marks ask for; every
        // literal is kept, and looked for, as its text.
        let (literals, edges): (Vec<&[u8]>, Vec<Edges>) =
            interner.literals.iter().map(|l| word_edges::split(l)).unzip();
        let grams = Grams::with_edges(literals.get(..anchors).unwrap_or(&[]), &edges);
        let finders = (anchors..literals.len()).map(|_| OnceLock::new()).collect();
        let literals = Packed::new(&literals);
        let owners = Packed::new(&owners);
        Prefilter { grams, literals, anchors, finders, owners, conds, always, anchoring }
    }

    /// Where on its line a match of pattern `p` (one of the line's passing patterns) can
    /// start, as offsets into the line, ascending, when every match of it starts at one of its
    /// anchors; `None` when it may start anywhere.
    pub fn starts<'a>(&'a self, p: usize, line: LineHits<'a>) -> Option<impl Iterator<Item = usize> + 'a> {
        if !matches!(self.anchoring.get(p), Some(Anchoring::AtAnchor | Anchoring::IsAnchor)) {
            return None;
        }
        let mut last = None;
        Some(line.hits.iter().filter_map(move |&(at, lit)| {
            let offset = at.checked_sub(line.start)?;
            let owned = self.owners.get(lit).is_some_and(|o| o.binary_search(&p).is_ok());
            (owned && last.replace(offset) != Some(offset)).then_some(offset)
        }))
    }

    /// Whether a candidate `p` (one of its anchors is on the line) matches by that alone
    /// ([`Anchoring::IsAnchor`]).
    pub fn is_anchor(&self, p: usize) -> bool {
        self.anchoring.get(p) == Some(&Anchoring::IsAnchor)
    }

    /// Calls `visit(number, line, patterns, hits, retired)` for every non-empty line (0-based
    /// number, without its `\r`) where some pattern's need holds, with those patterns,
    /// ascending, and the anchors found on the line (for [`Prefilter::starts`]).
    ///
    /// Lines are visited last to first, and `visit` may retire patterns ([`Retired`]): they
    /// are no longer candidates on the lines before. A scan keeps only the last few lines each
    /// entry matches, so once an entry has them, its patterns need not be looked at again: on
    /// a long tail where the same error repeats, most lines then cost only the anchor search.
    pub fn for_each_line<'t>(
        &self,
        lines: &Lines<'t>,
        mut visit: impl FnMut(usize, &'t str, &[usize], LineHits<'_>, &mut Retired<'_>),
    ) {
        let text = lines.text();
        let bytes = text.as_bytes();
        let mut scratch = SCRATCH.take().unwrap_or_default();
        // Stamps of earlier scans are below `next_stamp`: the tables need no clearing, only
        // to be as long as this catalog's.
        if scratch.next_stamp >= usize::MAX / 4 - bytes.len() {
            // Never in practice (2^61 bytes scanned on one thread), but stamps must stay unique.
            scratch.literal_seen.fill(0);
            scratch.pattern_seen.fill(0);
            scratch.pattern_retired.fill(0);
            scratch.next_stamp = 1;
        }
        let base = scratch.next_stamp.max(1);
        scratch.next_stamp = base + bytes.len() + 1;
        if scratch.literal_seen.len() < self.literals.len() {
            scratch.literal_seen.resize(self.literals.len(), 0);
        }
        if scratch.pattern_seen.len() < self.conds.len() {
            scratch.pattern_seen.resize(self.conds.len(), 0);
            scratch.pattern_retired.resize(self.conds.len(), 0);
        }
        let mut hits = std::mem::take(&mut scratch.hits);
        hits.clear();
        self.grams.find(bytes, &mut hits);
        // Each line (with an anchor, or every line when some pattern needs none) from the last
        // one back.
        let mut next = hits.len();
        let mut number = lines.count();
        loop {
            number = if self.always.is_empty() {
                match next.checked_sub(1).and_then(|j| hits.get(j)) {
                    Some(&(at, _)) => lines.number_at(at),
                    None => break,
                }
            } else {
                match number.checked_sub(1) {
                    Some(n) => n,
                    None => break,
                }
            };
            let (start, end) = lines.bounds(number);
            let first = hits_from(&hits, next, start);
            let on_line = hits.get(first..next).unwrap_or(&[]);
            let line = lines.line(number);
            if !line.is_empty() && self.check_line(base, base + end, line.as_bytes(), on_line, &mut scratch) {
                let mut retired = Retired { stamps: &mut scratch.pattern_retired, scan: base };
                visit(number, line, &scratch.passing, LineHits { start, hits: on_line }, &mut retired);
            }
            next = first;
        }
        scratch.hits = hits;
        SCRATCH.set(Some(scratch));
    }

    /// Which candidates of `line` (the owners of the anchors it has, its `hits`, and the
    /// `always` patterns) have their need met: left in `scratch.passing`, ascending; true when
    /// there are some. `stamp` is unique to the line and not 0; `scan` is the scan's first
    /// stamp, which marks the patterns it retired.
    fn check_line(
        &self,
        scan: usize,
        stamp: usize,
        line: &[u8],
        hits: &[(usize, usize)],
        scratch: &mut Scratch,
    ) -> bool {
        scratch.candidates.clear();
        scratch.passing.clear();
        scratch.lowered = false;
        for &(_, lit) in hits {
            if let Some(seen) = scratch.literal_seen.get_mut(lit) {
                *seen = 2 * stamp + 1;
            }
            for &p in self.owners.get(lit).unwrap_or(&[]) {
                if let (Some(seen), Some(&retired)) = (scratch.pattern_seen.get_mut(p), scratch.pattern_retired.get(p))
                    && *seen != stamp
                    && retired != scan
                {
                    *seen = stamp;
                    scratch.candidates.push(p);
                }
            }
        }
        let retired = &scratch.pattern_retired;
        scratch.candidates.extend(self.always.iter().filter(|&&p| retired.get(p) != Some(&scan)));
        scratch.candidates.sort_unstable();
        let candidates = std::mem::take(&mut scratch.candidates);
        for &p in &candidates {
            if self.is_anchor(p) || self.conds.get(p).is_some_and(|c| self.holds(c, stamp, line, scratch)) {
                scratch.passing.push(p);
            }
        }
        scratch.candidates = candidates;
        !scratch.passing.is_empty()
    }

    /// Whether `line` (told apart by `stamp`) meets `cond`.
    fn holds(&self, cond: &Cond, stamp: usize, line: &[u8], scratch: &mut Scratch) -> bool {
        match cond {
            Cond::Always => true,
            Cond::AnyOf(lits) => lits.iter().any(|&l| self.present(l, stamp, line, scratch)),
            Cond::All(parts) => parts.iter().all(|c| self.holds(c, stamp, line, scratch)),
            Cond::Either(parts) => parts.iter().any(|c| self.holds(c, stamp, line, scratch)),
        }
    }

    /// Whether literal `lit` occurs in `line` (ASCII case ignored). Anchors are known from the
    /// search; another literal is looked for in the lowercased line, once per line.
    fn present(&self, lit: usize, stamp: usize, line: &[u8], scratch: &mut Scratch) -> bool {
        let Some(&seen) = scratch.literal_seen.get(lit) else { return false };
        if seen / 2 == stamp {
            return seen % 2 == 1;
        }
        let (Some(finder), Some(needle)) =
            (lit.checked_sub(self.anchors).and_then(|i| self.finders.get(i)), self.literals.get(lit))
        else {
            // An anchor that the search did not find on this line.
            return false;
        };
        let finder = finder.get_or_init(|| Box::new(memmem::Finder::new(needle).into_owned()));
        if !scratch.lowered {
            scratch.lower.clear();
            scratch.lower.extend_from_slice(line);
            scratch.lower.make_ascii_lowercase();
            scratch.lowered = true;
        }
        let found = finder.find(&scratch.lower).is_some();
        if let Some(seen) = scratch.literal_seen.get_mut(lit) {
            *seen = 2 * stamp + usize::from(found);
        }
        found
    }
}

/// The start of the run of `hits` ending before `next` that are at `start` or after (a
/// line's few hits: a linear walk beats a binary search).
fn hits_from(hits: &[(usize, usize)], next: usize, start: usize) -> usize {
    let mut first = next;
    while first > 0 && hits.get(first - 1).is_some_and(|h| h.0 >= start) {
        first -= 1;
    }
    first
}

/// Patterns a scan no longer looks for, from the line being visited back: their owner (an
/// entry, an analyzer) already has all the lines it keeps. Given to the visitor of
/// [`Prefilter::for_each_line`].
pub(crate) struct Retired<'s> {
    stamps: &'s mut Vec<usize>,
    scan: usize,
}

impl<'s> Retired<'s> {
    /// A visitor's argument that retires nothing (for a scan done another way, in the tests).
    #[cfg(test)]
    pub fn ignored(stamps: &'s mut Vec<usize>) -> Retired<'s> {
        stamps.clear();
        Retired { stamps, scan: 1 }
    }

    /// Retire `patterns` for the rest of the scan.
    pub fn retire(&mut self, patterns: std::ops::Range<usize>) {
        for stamp in self.stamps.get_mut(patterns).into_iter().flatten() {
            *stamp = self.scan;
        }
    }
}

/// The distinct literals of a catalog's needs, each numbered by its first appearance.
#[derive(Default)]
struct Interner<'a> {
    literals: Vec<&'a [u8]>,
    /// By FxHash, not SipHash: the keys are the catalog's literals, not input, and hashing
    /// them was a tenth of a load.
    index: rustc_hash::FxHashMap<&'a [u8], usize>,
}

impl<'a> Interner<'a> {
    /// The number of `lit`, given it if new.
    fn intern(&mut self, lit: &'a [u8]) -> usize {
        *self.index.entry(lit).or_insert_with(|| {
            self.literals.push(lit);
            self.literals.len() - 1
        })
    }
}

/// `need` with its literals interned.
fn to_cond<'a>(need: &'a Need, interner: &mut Interner<'a>) -> Cond {
    match need {
        Need::Nothing => Cond::Always,
        // Each literal of a set costs a search on the candidate lines; the regex decides anyway.
        // But a set of specific literals (host names) spares the regex, and its compiling on a
        // first scan, on the lines that merely have a common anchor (`host`).
        Need::AnyOf(lits) if lits.len() > MAX_CHECKED => Cond::Always,
        Need::AnyOf(lits) => Cond::AnyOf(lits.iter().map(|l| interner.intern(l)).collect()),
        Need::All(parts) => Cond::All(parts.iter().map(|p| to_cond(p, interner)).collect()),
        Need::Either(parts) => Cond::Either(parts.iter().map(|p| to_cond(p, interner)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::need::tests::{any, lits, need};

    fn build(needs: &[Need]) -> Prefilter {
        let analyses: Vec<Analysis> = needs.iter().cloned().map(Analysis::of_need).collect();
        Prefilter::build(&analyses)
    }

    #[test]
    fn capitals_in_a_class_of_a_case_sensitive_pattern_are_looked_for_lowercase() {
        let mut l = lits(r"\bERROR in diagonalization P[SDCZ]HEEVX\b").unwrap();
        l.sort();
        assert!(l.iter().all(|l| !l.bytes().any(|b| b.is_ascii_uppercase())), "{l:?}");
        let pf = build(&[need(r"\bERROR in diagonalization P[SDCZ]HEEVX\b")]);
        let mut lines = Vec::new();
        pf.for_each_line(&Lines::new("ok\nERROR in diagonalization PZHEEVX\n"), |n, _, _, _, _| lines.push(n));
        assert_eq!(lines, vec![1], "the line the pattern matches is a candidate");
    }

    #[test]
    fn alternations_of_patterns_with_literals_have_literals() {
        let mut l = lits(r"(?i)\b403\b.{0,3}\bForbidden\b|^Terminated\s*$").unwrap();
        l.sort();
        assert_eq!(l, vec![r"\bforbidden\b".to_string(), "terminated".into()]);
        let mut l = lits(r"(?i)\b403\b.{0,3}\bForbidden\b|\bcode=403\b").unwrap();
        l.sort();
        assert_eq!(l, vec![r"\bcode=403\b".to_string(), r"\bforbidden\b".into()]);
        let pf = build(&[need(r"(?i)\b403\b.{0,3}\bForbidden\b|\bcode=403\b")]);
        let mut lines = Vec::new();
        pf.for_each_line(
            &Lines::new("Forbidden\n403 Forbidden\nCODE=403\ncode=40\nForbiddenX 403"),
            |n, _, _, _, _| lines.push(n),
        );
        lines.reverse();
        assert_eq!(lines, vec![1, 2], "each branch's needs, not the anchors alone, with their word boundaries");
    }

    #[test]
    fn scans_on_one_thread_do_not_see_each_others_lines() {
        // The per-thread tables keep the last scan's marks: a later scan, of another
        // prefilter with other literals at the same indices, must not take them for its own.
        let a = build(&[Need::All(vec![any(&["abcd"]), any(&["nan"])]), any(&["xyz"])]);
        let b = build(&[Need::All(vec![any(&["nan"]), any(&["qqqq"])]), any(&["abcd"])]);
        let lines = |pf: &Prefilter, text: &str| {
            let mut out = Vec::new();
            pf.for_each_line(&Lines::new(text), |n, _, ps, _, _| out.push((n, ps.to_vec())));
            out.reverse();
            out
        };
        let text = "abcd nan\nxyz\nqqqq\nabcd";
        let first = lines(&a, text);
        assert_eq!(first, vec![(0, vec![0]), (1, vec![1])]);
        assert_eq!(lines(&b, text), vec![(0, vec![1]), (3, vec![1])]);
        assert_eq!(lines(&b, "nan qqqq\nabcd"), vec![(0, vec![0]), (1, vec![1])]);
        assert_eq!(lines(&a, text), first);
        assert_eq!(lines(&a, "nan\nabcd"), Vec::<(usize, Vec<usize>)>::new());
    }

    #[test]
    fn lines_are_named_with_the_patterns_whose_needs_hold() {
        let needs = [
            any(&["abc"]),
            Need::Nothing,
            Need::All(vec![any(&["abcd", "xyz"]), any(&["nan"])]),
            Need::Either(vec![any(&["zzzz"]), Need::All(vec![any(&["qqq"]), any(&["www"])])]),
        ];
        let pf = build(&needs);
        let text = "..ABC..xyz\n\nxyz NaN\r\nabcd\nwww qqq\nwww\nplain";
        let mut lines = Vec::new();
        pf.for_each_line(&Lines::new(text), |n, line, ps, _, _| lines.push((n, line.to_string(), ps.to_vec())));
        lines.reverse();
        assert_eq!(
            lines,
            vec![
                (0, "..ABC..xyz".into(), vec![0, 1]),
                (2, "xyz NaN".into(), vec![1, 2]),
                (3, "abcd".into(), vec![0, 1]),
                (4, "www qqq".into(), vec![1, 3]),
                (5, "www".into(), vec![1]),
                (6, "plain".into(), vec![1]),
            ]
        );
        let pf = build(&needs[2..]);
        let mut lines = Vec::new();
        pf.for_each_line(&Lines::new(text), |n, _, ps, _, _| lines.push((n, ps.to_vec())));
        assert_eq!(lines, vec![(4, vec![1]), (2, vec![0])], "last line first");
    }
}
