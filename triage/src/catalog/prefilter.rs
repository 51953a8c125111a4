//! The scan's literal prefilter: which lines can a pattern match at all?
//!
//! Why: one lazy DFA for a few hundred patterns at once (a `RegexSet`) spends most of its time
//! building and evicting states, and scans well under 100 MiB/s; most lines of a tail match
//! nothing. Nearly every catalog pattern contains literal text that any match must contain
//! (`Connection reset`, `oom-kill`, `NCCL`). This module works out, per pattern, *what a line
//! must contain* for the pattern to match it (a [`Need`]: literals, all of some, one of
//! others), searches the whole tail once for one literal set per pattern (its *anchors*, the
//! most specific set it needs; `grams.rs` finds them all in one pass), and on each line where
//! an anchor occurs checks the rest of the pattern's need (the other literals it needs, found
//! with `memchr::memmem` on the lowercased line) before the scan runs the pattern's own
//! regex. A pattern without a usable literal is a candidate on every line. The prefilter only
//! ever removes (line, pattern) pairs that cannot match, so the matches are exactly the plain
//! per-line `RegexSet`'s (a test compares both on every corpus file).
//!
//! How a need is found, per pattern (parsed exactly as it is compiled: bytes, Unicode off):
//! 1. ASCII case folding is undone (`(?i)` turns `a` into the class `[Aa]`, which would make a
//!    12-letter word 4,096 literals): such classes become the lowercase letter, since the
//!    search ignores ASCII case anyway;
//! 2. a literal of at least 3 bytes, without a line break, is needed as such; a concatenation
//!    needs all its parts' needs and also what `regex-syntax`'s literal extractor finds for
//!    it as a whole (prefixes and suffixes that cross its parts, as `oom-kill` and `oom_kill`
//!    for `oom[-_]kill`); an alternation needs one of its branches' needs; a group or a
//!    repetition of at least one needs its body's; anything else (a class, a look-around, an
//!    optional part) needs nothing;
//! 3. the anchors are the best literal set the need implies: for "all of", the set that lines
//!    of real tails are least likely to have (estimated from the corpus's counts of 3- and
//!    4-byte windows, `freq.rs`: `(?i)\bOut of memory: Kill(?:ed)? process\b` is anchored on
//!    `out of memory: kill`, not on the ` process` of every "processed" line), then the one
//!    with the longest shortest literal (up to 8 bytes), then the fewest literals; for "one
//!    of", the union of each branch's anchors. So `\b(?:loss|weights?)\b.{0,20}=\s*nan\b` is anchored
//!    on `loss` and `weight` and then needs `nan` on the same line, and
//!    `\b403\b.{0,3}\bForbidden\b|status[:=]403\b` is anchored on `forbidden` and `status`;
//! 4. a `\b` next to a literal stays with it (`word_edges.rs`): `\b137\b` is anchored on
//!    `137` as a whole word, so the `137` in `1370 ms` or a hex digest wakes nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use memchr::memmem;
use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, HirKind};

use super::freq;
use super::grams::Grams;
use super::hir_walk;
use super::lines::Lines;
use super::packed::Packed;
use super::word_edges::{self, Edges};

/// A pattern's literals must be at least this long to be used (shorter ones hit nearly every
/// line, and running the pattern on every line is then cheaper than the bookkeeping).
const MIN_LITERAL_LEN: usize = 3;

/// Literals this long are specific enough: fewer of them then beat longer ones.
const GOOD_LITERAL_LEN: usize = 8;

/// A larger literal set is cut (see [`cut`]) to about this many literals.
const MAX_SET: usize = 16;

/// A literal set larger than this is not checked on candidate lines (only as anchors).
const MAX_CHECKED: usize = 4 * MAX_SET;

/// Literals are not cut shorter than this.
const CUT_LEN: usize = 4;

/// Parts of a concatenation offered together to the prefix extractor.
const PREFIX_WINDOW: usize = 4;

/// At most this many of the needs of a concatenation are kept (the most specific ones): each
/// one kept costs a substring search on the lines where the pattern is a candidate.
const MAX_ALL_OF: usize = 4;

/// What a line must contain (ASCII case ignored) for a pattern to match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// Nothing known: every line may match.
    Nothing,
    /// One of these literals (lowercase, at least [`MIN_LITERAL_LEN`] bytes of text, no line
    /// break), each with a [`word_edges::MARK`] at an end that must be a word boundary.
    AnyOf(Vec<Vec<u8>>),
    /// Every one of these (none of them `Nothing`).
    All(Vec<Need>),
    /// At least one of these (none of them `Nothing`).
    Either(Vec<Need>),
}

impl Need {
    /// `parts` all needed: flattened, without `Nothing` or repeats, the most specific
    /// [`MAX_ALL_OF`] kept.
    fn all(parts: Vec<Need>) -> Need {
        let mut flat: Vec<Need> = Vec::new();
        for p in parts {
            let items = match p {
                Need::Nothing => Vec::new(),
                Need::All(inner) => inner,
                other => vec![other],
            };
            for item in items {
                if !flat.contains(&item) {
                    flat.push(item);
                }
            }
        }
        // A literal set that another one implies adds nothing (`weight` or `loss` is implied
        // by `weights` or `loss=`, or by themselves as whole words), unless it is the more
        // specific or the cheaper anchor.
        let keys: Vec<_> = flat.iter().map(Need::anchor_key).collect();
        let implied = |i: usize| {
            let Need::AnyOf(x) = &flat[i] else { return false };
            flat.iter().zip(&keys).any(|(b, kb)| match b {
                Need::AnyOf(y) => {
                    x != y
                        && (*kb >= keys[i] || cost(y) < cost(x))
                        && y.iter().all(|y| x.iter().any(|x| contains(y, x)))
                }
                _ => false,
            })
        };
        let drop: Vec<bool> = (0..flat.len()).map(implied).collect();
        let mut kept: Vec<(Option<Key>, Need)> =
            flat.into_iter().zip(keys).zip(drop).filter(|(_, d)| !d).map(|((n, k), _)| (k, n)).collect();
        // Most specific first (a stable sort: ties keep the pattern's order).
        kept.sort_by_key(|(k, _)| std::cmp::Reverse(*k));
        let mut flat: Vec<Need> = kept.into_iter().map(|(_, n)| n).collect();
        flat.truncate(MAX_ALL_OF);
        match flat.len() {
            0 => Need::Nothing,
            1 => flat.pop().unwrap_or(Need::Nothing),
            _ => Need::All(flat),
        }
    }

    /// One of `branches` needed: `Nothing` if any branch needs nothing; literal sets merged.
    fn either(branches: Vec<Need>) -> Need {
        let mut flat: Vec<Need> = Vec::new();
        for b in branches {
            match b {
                Need::Nothing => return Need::Nothing,
                Need::Either(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        if flat.iter().all(|n| matches!(n, Need::AnyOf(_))) {
            let lits: Vec<Vec<u8>> =
                flat.into_iter().flat_map(|n| if let Need::AnyOf(l) = n { l } else { Vec::new() }).collect();
            return if lits.is_empty() { Need::Nothing } else { Need::AnyOf(cut(&lits)) };
        }
        match flat.len() {
            0 => Need::Nothing,
            1 => flat.pop().unwrap_or(Need::Nothing),
            _ => Need::Either(flat),
        }
    }

    /// The one literal set any matching line contains one of (the most specific one), or
    /// `None` when the need is `Nothing`.
    pub fn anchors(&self) -> Option<Cow<'_, [Vec<u8>]>> {
        match self {
            Need::Nothing => None,
            Need::AnyOf(lits) => Some(Cow::Borrowed(lits)),
            Need::All(parts) => parts
                .iter()
                .filter_map(|p| Some((p.anchor_cost()?, p.anchor_key()?, p)))
                .min_by_key(|&(cost, key, _)| (cost, std::cmp::Reverse(key)))
                .and_then(|(_, _, p)| p.anchors()),
            Need::Either(branches) => {
                let mut union = Vec::new();
                for b in branches {
                    union.extend(b.anchors()?.iter().cloned());
                }
                Some(Cow::Owned(minimal(union)))
            }
        }
    }

    /// The [`key`] of [`Need::anchors`], without building them (for "one of", from the
    /// branches' keys: the shortest literal and the sum of their sizes, at most the union's).
    fn anchor_key(&self) -> Option<Key> {
        match self {
            Need::Nothing => None,
            Need::AnyOf(lits) => Some(key(lits)),
            Need::All(parts) => parts.iter().filter_map(Need::anchor_key).max(),
            Need::Either(branches) => {
                let (mut shortest, mut count) = (usize::MAX, 0);
                for b in branches {
                    let (s, std::cmp::Reverse(c)) = b.anchor_key()?;
                    shortest = shortest.min(s);
                    count += c;
                }
                Some((shortest, std::cmp::Reverse(count)))
            }
        }
    }

    /// The [`cost`] of [`Need::anchors`], without building them (for "one of", the sum of the
    /// branches' costs, at least the union's).
    fn anchor_cost(&self) -> Option<u64> {
        match self {
            Need::Nothing => None,
            Need::AnyOf(lits) => Some(cost(lits)),
            Need::All(parts) => parts.iter().filter_map(Need::anchor_cost).min(),
            Need::Either(branches) => branches.iter().map(Need::anchor_cost).sum(),
        }
    }

    /// Every literal this need names, appended to `out`.
    #[cfg(test)]
    pub fn literals(&self, out: &mut Vec<Vec<u8>>) {
        match self {
            Need::Nothing => {}
            Need::AnyOf(lits) => out.extend(lits.iter().cloned()),
            Need::All(parts) | Need::Either(parts) => parts.iter().for_each(|p| p.literals(out)),
        }
    }
}

/// `lits`, or, when there are more than [`MAX_SET`], with the literals that share the
/// longest start replaced by that start (any line with one of them has it), again and again,
/// until at most [`MAX_SET`] are left or no two share [`CUT_LEN`] bytes: an extractor's product
/// of alternatives (`access token has expired`, `access token is expired`, ...) becomes a
/// few literals.
fn cut(lits: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut set = lits.to_vec();
    set.sort();
    set.dedup();
    // `set` is sorted: the longest shared start is between neighbours. Per neighbour pair, the
    // length of their shared start (kept up to date as runs are replaced).
    let shared = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let pairs = |set: &[Vec<u8>], from: usize, to: usize| -> Vec<usize> {
        set.get(from..to + 1).map_or(Vec::new(), |w| w.windows(2).map(|w| shared(&w[0], &w[1])).collect())
    };
    let mut lens = if set.len() > MAX_SET { pairs(&set, 0, set.len() - 1) } else { Vec::new() };
    while set.len() > MAX_SET {
        let Some((len, i)) = lens.iter().enumerate().map(|(i, &l)| (l, i)).max() else { break };
        if len < CUT_LEN {
            break;
        }
        let start = set[i][..len].to_vec();
        // The literals with that start are neighbours, from `i` on (the first is `start` itself
        // when it is in the set).
        let end = i + set[i..].iter().take_while(|l| l.starts_with(&start)).count();
        let old_len = set.len();
        set.splice(i..end, [start]);
        // The pairs that had a replaced literal, and those the new one has.
        let from = i.saturating_sub(1);
        lens.splice(from..end.min(old_len - 1), pairs(&set, from, (i + 1).min(set.len() - 1)));
    }
    // Checking containment is quadratic: only for sets of the size kept.
    if set.len() <= 4 * MAX_SET { minimal(set) } else { set }
}

/// `lits` without repeats and without the literals that contain another one (a line with
/// `weights` has `weight`), sorted.
fn minimal(mut lits: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    lits.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    lits.dedup();
    let mut kept: Vec<Vec<u8>> = Vec::with_capacity(lits.len());
    for lit in lits {
        if !kept.iter().any(|k| contains(&lit, k)) {
            kept.push(lit);
        }
    }
    kept.sort();
    kept
}

/// Whether `needle` occurs in `haystack` (short strings: a plain search beats building a
/// `memmem` searcher).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// How specific a literal set is (greater: more).
type Key = (usize, std::cmp::Reverse<usize>);

/// How specific a literal set is: its shortest literal's length (up to
/// [`GOOD_LITERAL_LEN`]: past it, a literal is rare enough), then fewer literals.
fn key(lits: &[Vec<u8>]) -> Key {
    let shortest = lits.iter().map(|l| word_edges::text(l).len()).min().unwrap_or(0);
    (shortest.min(GOOD_LITERAL_LEN), std::cmp::Reverse(lits.len()))
}

/// How many lines a literal set is expected to wake, relatively (the sum of its literals'
/// corpus estimates, see `freq.rs`, and 1 per literal): the anchors of "all of" are the set
/// that costs least.
fn cost(lits: &[Vec<u8>]) -> u64 {
    lits.iter()
        .map(|l| {
            let (text, edges) = word_edges::split(l);
            1 + u64::from(freq::estimate_at_boundaries(text, edges.start, edges.end))
        })
        .sum()
}

/// What the parser says about one pattern.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// What a line must contain for the pattern to match it.
    pub need: Need,
    /// The pattern may match an empty line (only such patterns need compiling at load to
    /// check that they do not).
    pub may_match_empty: bool,
    /// Where a match is, measured against the need's anchors.
    pub anchoring: Anchoring,
}

/// Where a pattern's matches are, measured against its anchors (the literals the prefilter
/// searches for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchoring {
    /// Anywhere on a line that meets the need: the regex runs over the line.
    Anywhere,
    /// Every match starts where one of the anchors occurs: the regex runs anchored at those
    /// places only, not across the whole line.
    AtAnchor,
    /// A match is an occurrence of an anchor and nothing more (the pattern is a set of
    /// literals, ASCII case ignored, with word boundaries only at their ends): a found anchor
    /// is a match, and no regex runs.
    IsAnchor,
}

/// Parse `pattern` as the scan compiles it (bytes, Unicode off) and find what it needs.
pub(crate) fn analyze(pattern: &str) -> Result<Analysis, String> {
    let hir = ParserBuilder::new().unicode(false).utf8(false).build().parse(pattern).map_err(|e| e.to_string())?;
    let may_match_empty = hir.properties().minimum_len().is_none_or(|n| n == 0);
    let folded = fold_ascii_case(&hir);
    let marked = word_edges::mark(&folded);
    let marked = marked.as_ref().unwrap_or(&folded);
    let need = need_of(marked);
    let anchors = need.anchors();
    let anchoring = match anchors {
        Some(anchors) if is_literal_set(&hir, marked, &anchors) => Anchoring::IsAnchor,
        Some(anchors) if starts_with_one_of(&folded, &anchors) => Anchoring::AtAnchor,
        _ => Anchoring::Anywhere,
    };
    Ok(Analysis { need, may_match_empty, anchoring })
}

/// Whether every occurrence of one of `anchors` is a match of the pattern `hir`, whose
/// case-folded form with its `\b` marked is `marked`: the pattern ignores ASCII case
/// throughout and has no look-around but `\b`, and `marked` matches exactly a finite set of
/// strings holding each anchor (with its marks, so the anchor search checks each boundary).
fn is_literal_set(hir: &Hir, marked: &Hir, anchors: &[Vec<u8>]) -> bool {
    let case_free = !hir_walk::any_leaf(hir, &|leaf| match leaf.kind() {
        HirKind::Literal(lit) => lit.0.iter().any(u8::is_ascii_alphabetic),
        HirKind::Class(Class::Bytes(class)) => class.ranges().iter().any(|r| {
            (r.start()..=r.end()).any(|b| {
                b.is_ascii_alphabetic() && !class.ranges().iter().any(|o| (o.start()..=o.end()).contains(&(b ^ 0x20)))
            })
        }),
        HirKind::Class(Class::Unicode(_)) => true,
        HirKind::Look(look) => *look != regex_syntax::hir::Look::WordAscii,
        HirKind::Empty => false,
        _ => true,
    });
    if !case_free {
        return false;
    }
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(marked);
    let Some(exact) = seq.literals().filter(|_| seq.is_exact()) else { return false };
    anchors.iter().all(|a| exact.iter().any(|e| e.as_bytes() == a.as_slice()))
}

/// Whether every match of `hir` (case-folded) starts with one of `anchors`: the extractor's
/// prefixes are finite (every match starts with one of them; look-arounds such as `\b` or `^`
/// count as empty, and the anchored regex checks them in place) and each starts with an
/// anchor.
fn starts_with_one_of(hir: &Hir, anchors: &[Vec<u8>]) -> bool {
    let prefixes = Extractor::new().kind(ExtractKind::Prefix).extract(hir);
    prefixes.literals().is_some_and(|lits| {
        !lits.is_empty() && lits.iter().all(|l| anchors.iter().any(|a| l.as_bytes().starts_with(word_edges::text(a))))
    })
}

/// What any match of `hir` (case-folded) contains.
fn need_of(hir: &Hir) -> Need {
    match hir.kind() {
        HirKind::Literal(lit) => usable_literal(&lit.0).map_or(Need::Nothing, |l| Need::AnyOf(vec![l])),
        HirKind::Capture(c) => need_of(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => need_of(&r.sub),
        HirKind::Concat(parts) => {
            let mut needs = Vec::with_capacity(2 * parts.len() + 1);
            if let Some(lits) = usable_seq(&Extractor::new().kind(ExtractKind::Suffix).extract(hir)) {
                needs.push(Need::AnyOf(lits));
            }
            // The prefixes of the whole, and of the few parts from each short literal or class
            // that does not follow a literal: `code=50[0234]\b` gives `500`, `502`, ... though the
            // whole has no finite suffix.
            let prefixes = Extractor::new();
            if let Some(lits) = usable_seq(&prefixes.extract(hir)) {
                needs.push(Need::AnyOf(lits));
            }
            for (i, part) in parts.iter().enumerate() {
                let after_literal = i > 0 && matches!(parts[i - 1].kind(), HirKind::Literal(_));
                let next_is_literal = matches!(parts.get(i + 1).map(Hir::kind), Some(HirKind::Literal(_)));
                // A literal too short to be needed alone, or a class before a literal.
                let starts_literal = match part.kind() {
                    HirKind::Literal(l) => l.0.len() < MIN_LITERAL_LEN,
                    HirKind::Class(_) => next_is_literal,
                    _ => false,
                };
                if i > 0 && !after_literal && starts_literal {
                    let window = Hir::concat(parts.iter().skip(i).take(PREFIX_WINDOW).cloned().collect());
                    if let Some(lits) = usable_seq(&prefixes.extract(&window)) {
                        needs.push(Need::AnyOf(lits));
                    }
                }
                needs.push(need_of(part));
            }
            Need::all(needs)
        }
        HirKind::Alternation(branches) => Need::either(branches.iter().map(need_of).collect()),
        HirKind::Repetition(_) | HirKind::Class(_) | HirKind::Look(_) | HirKind::Empty => Need::Nothing,
    }
}

/// `lit` (its word-boundary marks normalized), if its text is long enough and within one line.
fn usable_literal(lit: &[u8]) -> Option<Vec<u8>> {
    let lit = word_edges::normalize(lit);
    let text = word_edges::text(&lit);
    (text.len() >= MIN_LITERAL_LEN && !text.iter().any(|&b| b == b'\n' || b == b'\r')).then_some(lit)
}

/// The literals of `seq` when it is finite, non-empty and every literal is usable.
fn usable_seq(seq: &Seq) -> Option<Vec<Vec<u8>>> {
    let lits = seq.literals()?;
    if lits.is_empty() {
        return None;
    }
    let out = lits.iter().map(|l| usable_literal(l.as_bytes())).collect::<Option<Vec<_>>>()?;
    Some(cut(&out))
}

/// `hir` with every class that is one ASCII letter in both cases (`[Aa]`) made that letter in
/// lowercase, and every literal lowercased: a copy for literal extraction only.
fn fold_ascii_case(hir: &Hir) -> Hir {
    hir_walk::map_leaves(hir, &|leaf| match leaf.kind() {
        HirKind::Literal(lit) => Hir::literal(lit.0.to_ascii_lowercase()),
        HirKind::Class(class) => match single_folded_byte(class) {
            Some(b) => Hir::literal([b]),
            None => lowercase_class(class).map_or_else(|| leaf.clone(), |c| Hir::class(Class::Bytes(c))),
        },
        _ => leaf.clone(),
    })
}

/// The lowercase byte a class stands for when it is exactly one byte up to ASCII case.
fn single_folded_byte(class: &Class) -> Option<u8> {
    let bytes: Vec<u8> = match class {
        Class::Bytes(c) => expand(c)?,
        Class::Unicode(c) => {
            let mut out = Vec::new();
            for r in c.ranges() {
                if !r.end().is_ascii() || (r.end() as u32 - r.start() as u32) > 2 {
                    return None;
                }
                out.extend((r.start() as u8)..=(r.end() as u8));
            }
            out
        }
    };
    let first = bytes.first()?.to_ascii_lowercase();
    bytes.iter().all(|b| b.to_ascii_lowercase() == first).then_some(first)
}

/// An ASCII class with its capital letters lowercased (`P[SDCZ]` in a case-sensitive pattern
/// becomes `p[sdcz]`), so the literals extracted through it are lowercase like every other
/// literal: a capital letter left in one would never occur in the lowercased line it is looked
/// for in, and the pattern would never be tried. `None` for a class with non-ASCII bytes (its
/// literals, if any, contain no ASCII capital to lose).
fn lowercase_class(class: &Class) -> Option<ClassBytes> {
    let ranges: Vec<(u32, u32)> = match class {
        Class::Bytes(c) => c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))).collect(),
        Class::Unicode(c) => c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect(),
    };
    if ranges.iter().any(|&(_, end)| end > 0x7f) {
        return None;
    }
    let lowered = ranges.into_iter().flat_map(|(start, end)| start..=end).map(|b| {
        let b = (b as u8).to_ascii_lowercase();
        ClassBytesRange::new(b, b)
    });
    Some(ClassBytes::new(lowered))
}

/// A small byte class's bytes (at most a few).
fn expand(c: &ClassBytes) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for r in c.ranges() {
        let r: &ClassBytesRange = r;
        if r.end() - r.start() > 2 {
            return None;
        }
        out.extend(r.start()..=r.end());
    }
    Some(out)
}

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
    /// Per pattern, where its matches are against its anchors ([`Analysis`]).
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
    /// From each pattern's need.
    pub fn build(needs: &[Need], anchoring: Vec<Anchoring>) -> Prefilter {
        // Every literal is interned as a slice of the needs (or of the anchor sets built from
        // them), not copied: the catalog names about twelve thousand, and three owned copies
        // of each (key, list, text) were most of a process's peak heap while it built this.
        let anchor_sets: Vec<Option<Cow<'_, [Vec<u8>]>>> = needs.iter().map(Need::anchors).collect();
        let mut interner = Interner::default();
        let mut anchored: Vec<(usize, usize)> = Vec::new();
        let mut always = Vec::new();
        for (p, anchors) in anchor_sets.iter().enumerate() {
            match anchors {
                Some(anchors) => anchored.extend(anchors.iter().map(|lit| (interner.intern(lit), p))),
                None => always.push(p),
            }
        }
        let anchors = anchored.iter().map(|&(lit, _)| lit + 1).max().unwrap_or(0);
        let conds: Vec<Cond> = needs.iter().map(|n| to_cond(n, &mut interner)).collect();
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
    index: HashMap<&'a [u8], usize>,
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

    fn build(needs: &[Need]) -> Prefilter {
        Prefilter::build(needs, vec![Anchoring::Anywhere; needs.len()])
    }

    fn need(p: &str) -> Need {
        analyze(p).unwrap().need
    }

    /// The anchors of `p`, with their word-boundary marks written `\\b`.
    fn lits(p: &str) -> Option<Vec<String>> {
        need(p)
            .anchors()
            .map(|v| v.iter().map(|l| String::from_utf8(l.clone()).unwrap().replace('\u{1}', r"\b")).collect())
    }

    fn any(lits: &[&str]) -> Need {
        Need::AnyOf(lits.iter().map(|l| l.as_bytes().to_vec()).collect())
    }

    #[test]
    fn case_insensitive_words_are_one_lowercase_literal() {
        assert_eq!(need(r"(?i)connection reset by peer"), any(&["connection reset by peer"]));
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
    fn a_required_middle_part_is_used_when_the_ends_are_classes() {
        assert_eq!(lits(r"\d+ oom[-_]kill events?\b"), Some(vec!["kill event".into()]));
        let l = lits(r"\d+ (?:GPU|HBM) ECC\b").unwrap();
        assert!(l.iter().all(|l| l.ends_with(r" ecc\b")), "{l:?}");
    }

    #[test]
    fn every_required_part_is_needed_and_the_most_specific_anchors() {
        let n = need(r"(?i)\b(?:loss|weights?)\b.{0,20}\b(?:is|=)\s*nan\b");
        let marked = |l: &str| l.replace(r"\b", "\u{1}");
        let any_marked = |l: &[&str]| Need::AnyOf(l.iter().map(|l| marked(l).into_bytes()).collect());
        assert_eq!(
            n,
            Need::All(vec![any_marked(&[r"\bloss\b", r"\bweight\b", r"\bweights\b"]), any_marked(&[r"nan\b"])])
        );
        assert_eq!(
            lits(r"(?i)\b(?:loss|weights?)\b.{0,20}\b(?:is|=)\s*nan\b"),
            Some(vec![r"\bloss\b".into(), r"\bweight\b".into(), r"\bweights\b".into()])
        );
    }

    #[test]
    fn alternations_give_one_literal_per_branch() {
        assert_eq!(
            lits(r"(?i)\b(?:ECONNRESET|ETIMEDOUT)\b"),
            Some(vec![r"\beconnreset\b".into(), r"\betimedout\b".into()])
        );
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
    fn patterns_without_a_literal_are_always_candidates() {
        assert_eq!(lits(r"^\w+$"), None);
        assert_eq!(lits(r"(?:ab)?\d+"), None);
        assert_eq!(lits(r"a\nbcd"), None, "a line never holds a line break");
        assert_eq!(lits(r"abcd|\d+"), None, "one branch needs nothing");
    }

    #[test]
    fn builtin_patterns_mostly_have_literals() {
        let c = crate::catalog::Catalog::builtin();
        let mut without = Vec::new();
        for p in c.entries().iter().flat_map(|e| &e.patterns) {
            if analyze(p).unwrap().need == Need::Nothing {
                without.push(p.clone());
            }
        }
        eprintln!("{} patterns without literals: {without:#?}", without.len());
        let all: Vec<&String> = c.entries().iter().flat_map(|e| &e.patterns).collect();
        let literal_sets = all.iter().filter(|p| analyze(p).unwrap().anchoring == Anchoring::IsAnchor).count();
        eprintln!("{literal_sets} of {} patterns are literal sets", all.len());
        assert!(literal_sets * 10 > all.len(), "the catalog's plain phrases should run no regex");
        assert!(without.len() * 10 < c.entries().len(), "most patterns should have literals: {without:#?}");
    }

    /// `cut` as first written (every neighbour pair measured again after each replacement).
    fn cut_plainly(lits: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut set = lits.to_vec();
        set.sort();
        set.dedup();
        while set.len() > MAX_SET {
            let shared = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
            let Some((len, i)) = set.windows(2).enumerate().map(|(i, w)| (shared(&w[0], &w[1]), i)).max() else {
                break;
            };
            if len < CUT_LEN {
                break;
            }
            let start = set[i][..len].to_vec();
            let end = i + set[i..].iter().take_while(|l| l.starts_with(&start)).count();
            set.splice(i..end, [start]);
        }
        if set.len() <= 4 * MAX_SET { minimal(set) } else { set }
    }

    #[test]
    fn cut_keeps_its_first_results() {
        let mut sets: Vec<Vec<Vec<u8>>> = Vec::new();
        let c = crate::catalog::Catalog::builtin();
        for p in c.entries().iter().flat_map(|e| &e.patterns) {
            let hir = ParserBuilder::new().unicode(false).utf8(false).build().parse(p).unwrap();
            let hir = fold_ascii_case(&hir);
            for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
                if let Some(lits) = Extractor::new().kind(kind).extract(&hir).literals() {
                    sets.push(lits.iter().map(|l| l.as_bytes().to_vec()).collect());
                }
            }
        }
        let words = ["access", "accessor", "token", "tokens", "expired", "abcdefgh", "abcdxyz", "abcz", "zzzz"];
        for n in 0..200usize {
            let set: Vec<Vec<u8>> = (0..n % 40 + 10)
                .map(|k| {
                    format!("{}{}{}", words[(n + k) % 9], words[(n * 7 + k * 3) % 9], k % (n % 5 + 1)).into_bytes()
                })
                .collect();
            sets.push(set);
        }
        assert!(sets.iter().filter(|s| s.len() > MAX_SET).count() > 50);
        for set in &sets {
            assert_eq!(cut(set), cut_plainly(set), "{set:?}");
        }
    }

    #[test]
    fn patterns_that_begin_with_their_anchors_run_anchored() {
        let starts = |p: &str| analyze(p).unwrap().anchoring != Anchoring::Anywhere;
        assert!(starts(r"(?i)\bNo such file or directory\b|\bENOENT\b"), "each branch begins with its anchor");
        assert!(starts(r"^Killed process \d+"), "a leading `^` is checked in place");
        assert!(!starts(r"(?i)\bstatus[:=]\s*50[0234]\b"), "anchored on the number, after `status`");
        assert!(!starts(r"(?i)\w+Error: out of memory"), "a match may begin before the anchor");
    }

    #[test]
    fn literal_sets_match_by_their_anchors_alone() {
        let anchoring = |p: &str| analyze(p).unwrap().anchoring;
        assert_eq!(anchoring(r"(?i)\bconnection reset by peer\b"), Anchoring::IsAnchor);
        assert_eq!(anchoring(r"(?i)(?:broken pipe|connection reset by peer)"), Anchoring::IsAnchor);
        assert_eq!(anchoring(r"(?i)\bHTTP 50[234]\b"), Anchoring::IsAnchor, "a small class is spelled out");
        // Not: case matters, a look-around other than `\b`, a repetition, a `\b` inside, an
        // anchor that is a piece of the match.
        assert_ne!(anchoring(r"Connection reset by peer"), Anchoring::IsAnchor);
        assert_ne!(anchoring(r"(?i)^connection reset"), Anchoring::IsAnchor);
        assert_ne!(anchoring(r"(?i)connection reset \d+"), Anchoring::IsAnchor);
        assert_ne!(anchoring(r"(?i)reset\b by peer"), Anchoring::IsAnchor);
        assert_ne!(anchoring(r"(?i)connection (?:re)?set by peer"), Anchoring::IsAnchor);
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
    fn empty_matches_are_flagged() {
        assert!(analyze(r"x*").unwrap().may_match_empty);
        assert!(analyze(r"^$").unwrap().may_match_empty);
        assert!(!analyze(r"x+").unwrap().may_match_empty);
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
