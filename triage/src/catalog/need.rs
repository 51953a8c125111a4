//! What a pattern needs: the literals any line it matches must contain, worked out from the
//! parsed regex, for the scan's literal prefilter (`prefilter.rs`).
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
//!
//! The embedded catalog's analyses are worked out once, by the build script (which includes
//! this file), and embedded as a [`Table`]: a process looks its patterns up there instead of
//! parsing and walking about two thousand regexes at each start. A pattern the table lacks (a
//! user's catalog file's, an analyzer's trigger) is analyzed at load ([`analyze`]).

use std::borrow::Cow;

use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, HirKind};

use super::freq;
use super::hir_walk;
use super::word_edges;

/// A pattern's literals must be at least this long to be used (shorter ones hit nearly every
/// line, and running the pattern on every line is then cheaper than the bookkeeping).
const MIN_LITERAL_LEN: usize = 3;

/// Literals this long are specific enough: fewer of them then beat longer ones.
const GOOD_LITERAL_LEN: usize = 8;

/// A larger literal set is cut (see [`cut`]) to about this many literals.
pub(crate) const MAX_SET: usize = 16;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// What a line must contain for the pattern to match it.
    pub need: Need,
    /// The pattern may match an empty line (only such patterns need compiling at load to
    /// check that they do not).
    pub may_match_empty: bool,
    /// The need's anchors ([`Need::anchors`]), worked out once here: weighing an "all of"'s
    /// parts by their literals' frequencies was most of a load's time when every start did it.
    pub anchors: Option<Vec<Vec<u8>>>,
    /// Where a match is, measured against the need's anchors.
    pub anchoring: Anchoring,
}

impl Analysis {
    /// The analysis of a pattern whose need is `need` and nothing more (it may not match an
    /// empty line; its matches may be anywhere), for tests of what uses a need.
    #[cfg(test)]
    pub fn of_need(need: Need) -> Analysis {
        let anchors = need.anchors().map(Cow::into_owned);
        Analysis { need, may_match_empty: false, anchors, anchoring: Anchoring::Anywhere }
    }
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
    let anchors = need.anchors().map(Cow::into_owned);
    let anchoring = match &anchors {
        Some(anchors) if is_literal_set(&hir, marked, anchors) => Anchoring::IsAnchor,
        Some(anchors) if starts_with_one_of(&folded, anchors) => Anchoring::AtAnchor,
        _ => Anchoring::Anywhere,
    };
    Ok(Analysis { need, may_match_empty, anchors, anchoring })
}

/// The first bytes of a table of analyses ([`write_table`]), with the format's version.
const TABLE_MAGIC: &[u8] = b"triage needs 3\n";

/// The analyses of `patterns` as a table for [`Table::parse`]: the build script's output for
/// the embedded catalog. Records sorted by [`pattern_key`], each a key (8 bytes, little
/// endian), the length of the analysis and the analysis ([`encode`]). A pattern that does not
/// parse is left out: a process analyzes it at load, which reports the error.
///
/// # Panics
///
/// When two different patterns have the same key (for a 64-bit hash of a few thousand
/// patterns, about one chance in 10^12): the build then fails and says which.
#[cfg_attr(not(test), allow(dead_code, reason = "the build script writes the table; a process only reads it"))]
pub(crate) fn write_table<'p>(patterns: impl IntoIterator<Item = &'p str>) -> Vec<u8> {
    let mut keyed: Vec<(u64, &str)> = patterns.into_iter().map(|p| (pattern_key(p), p)).collect();
    keyed.sort_unstable();
    keyed.dedup();
    if let Some(w) = keyed.windows(2).find(|w| w[0].0 == w[1].0) {
        panic!("patterns {:?} and {:?} have the same key: change one (e.g. a redundant group)", w[0].1, w[1].1);
    }
    let mut out = TABLE_MAGIC.to_vec();
    let mut record = Vec::new();
    for (key, pattern) in keyed {
        let Ok(analysis) = analyze(pattern) else { continue };
        record.clear();
        encode(&analysis, &mut record);
        out.extend_from_slice(&key.to_le_bytes());
        put_len(&mut out, record.len());
        out.extend_from_slice(&record);
    }
    out
}

/// A pattern's key in a table: FNV-1a (64-bit) of its text. A user's pattern that the
/// embedded catalog lacks shares a key with one of its patterns about once in 10^15: it
/// would then get that pattern's need, and the prefilter could hide some of its matches.
fn pattern_key(pattern: &str) -> u64 {
    pattern.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A table of analyses by pattern ([`write_table`]), read in place.
#[derive(Debug, Default)]
pub(crate) struct Table<'t> {
    /// (key, encoded analysis), sorted by key.
    records: Vec<(u64, &'t [u8])>,
}

impl<'t> Table<'t> {
    /// The table in `bytes`; empty if they are not one (every pattern is then analyzed).
    pub fn parse(bytes: &'t [u8]) -> Table<'t> {
        let mut records = Vec::new();
        let Some(mut rest) = bytes.strip_prefix(TABLE_MAGIC) else { return Table::default() };
        while !rest.is_empty() {
            let Some((key, after)) = rest.split_first_chunk::<8>() else { return Table::default() };
            let Some((analysis, after)) = take_sized(after) else { return Table::default() };
            records.push((u64::from_le_bytes(*key), analysis));
            rest = after;
        }
        if !records.is_sorted_by(|a, b| a.0 < b.0) {
            return Table::default();
        }
        Table { records }
    }

    /// The analysis of `pattern`, if the table has it.
    pub fn get(&self, pattern: &str) -> Option<Analysis> {
        let key = pattern_key(pattern);
        let i = self.records.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        decode(self.records.get(i)?.1)
    }

    /// How many patterns the table has.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.records.len()
    }
}

/// `a` as bytes: one byte of flags (bit 0 `may_match_empty`, bits 1 and 2 the anchoring),
/// then the need ([`encode_need`]), then the anchors (a byte, 0 for none, 1 for a literal set,
/// [`encode_literals`]).
#[cfg_attr(not(test), allow(dead_code, reason = "the build script writes the table; a process only reads it"))]
fn encode(a: &Analysis, out: &mut Vec<u8>) {
    let anchoring = match a.anchoring {
        Anchoring::Anywhere => 0,
        Anchoring::AtAnchor => 1,
        Anchoring::IsAnchor => 2,
    };
    out.push(u8::from(a.may_match_empty) | (anchoring << 1));
    encode_need(&a.need, out);
    match &a.anchors {
        None => out.push(0),
        Some(anchors) => {
            out.push(1);
            encode_literals(anchors, out);
        }
    }
}

/// A literal set as its count, then each literal (length, bytes).
#[cfg_attr(not(test), allow(dead_code, reason = "the build script writes the table; a process only reads it"))]
fn encode_literals(lits: &[Vec<u8>], out: &mut Vec<u8>) {
    put_len(out, lits.len());
    for lit in lits {
        put_len(out, lit.len());
        out.extend_from_slice(lit);
    }
}

/// The literal set [`encode_literals`] wrote, from the front of `rest`.
fn decode_literals(rest: &mut &[u8]) -> Option<Vec<Vec<u8>>> {
    let n = take_len(rest)?;
    let mut lits = Vec::with_capacity(n.min(rest.len()));
    for _ in 0..n {
        let (lit, after) = take_sized(rest)?;
        lits.push(lit.to_vec());
        *rest = after;
    }
    Some(lits)
}

/// A need as a tag (0 nothing, 1 one of some literals, 2 all of, 3 one of), then for 1 the
/// literals ([`encode_literals`]), for 2 and 3 the count and each part.
#[cfg_attr(not(test), allow(dead_code, reason = "the build script writes the table; a process only reads it"))]
fn encode_need(need: &Need, out: &mut Vec<u8>) {
    match need {
        Need::Nothing => out.push(0),
        Need::AnyOf(lits) => {
            out.push(1);
            encode_literals(lits, out);
        }
        Need::All(parts) | Need::Either(parts) => {
            out.push(if matches!(need, Need::All(_)) { 2 } else { 3 });
            put_len(out, parts.len());
            parts.iter().for_each(|p| encode_need(p, out));
        }
    }
}

/// The analysis [`encode`] wrote, if `bytes` are exactly one.
fn decode(bytes: &[u8]) -> Option<Analysis> {
    let (&flags, mut rest) = bytes.split_first()?;
    let anchoring = match flags >> 1 {
        0 => Anchoring::Anywhere,
        1 => Anchoring::AtAnchor,
        2 => Anchoring::IsAnchor,
        _ => return None,
    };
    let need = decode_need(&mut rest, 0)?;
    let (&has_anchors, mut rest) = rest.split_first()?;
    let anchors = match has_anchors {
        0 => None,
        1 => Some(decode_literals(&mut rest)?),
        _ => return None,
    };
    rest.is_empty().then_some(Analysis { need, may_match_empty: flags & 1 == 1, anchors, anchoring })
}

/// Deeper than this, a need is not one [`encode_need`] wrote (the catalog's nest a few levels).
const MAX_DEPTH: usize = 64;

fn decode_need(rest: &mut &[u8], depth: usize) -> Option<Need> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (&tag, after) = rest.split_first()?;
    *rest = after;
    match tag {
        0 => Some(Need::Nothing),
        1 => decode_literals(rest).map(Need::AnyOf),
        2 | 3 => {
            let n = take_len(rest)?;
            let mut parts = Vec::with_capacity(n.min(rest.len()));
            for _ in 0..n {
                parts.push(decode_need(rest, depth + 1)?);
            }
            Some(if tag == 2 { Need::All(parts) } else { Need::Either(parts) })
        }
        _ => None,
    }
}

/// `n` as LEB128 (seven bits a byte, low first).
#[cfg_attr(not(test), allow(dead_code, reason = "the build script writes the table; a process only reads it"))]
fn put_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A length [`put_len`] wrote, from the front of `rest`.
fn take_len(rest: &mut &[u8]) -> Option<usize> {
    let mut n: usize = 0;
    for shift in (0..usize::BITS).step_by(7) {
        let (&b, after) = rest.split_first()?;
        *rest = after;
        n |= usize::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(n);
        }
    }
    None
}

/// A length, then that many bytes: (the bytes, what follows).
fn take_sized(mut rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = take_len(&mut rest)?;
    (n <= rest.len()).then(|| rest.split_at(n))
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

/// The helpers are the prefilter's tests' too.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn need(p: &str) -> Need {
        analyze(p).unwrap().need
    }

    /// The anchors of `p`, with their word-boundary marks written `\\b`.
    pub(crate) fn lits(p: &str) -> Option<Vec<String>> {
        need(p)
            .anchors()
            .map(|v| v.iter().map(|l| String::from_utf8(l.clone()).unwrap().replace('\u{1}', r"\b")).collect())
    }

    pub(crate) fn any(lits: &[&str]) -> Need {
        Need::AnyOf(lits.iter().map(|l| l.as_bytes().to_vec()).collect())
    }

    #[test]
    fn case_insensitive_words_are_one_lowercase_literal() {
        assert_eq!(need(r"(?i)connection reset by peer"), any(&["connection reset by peer"]));
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
    fn a_table_gives_back_each_analysis_and_refuses_what_it_did_not_write() {
        let patterns =
            [r"(?i)\b(?:loss|weights?)\b.{0,20}\b(?:is|=)\s*nan\b", r"^\w+$", r"x*", r"(?i)\bHTTP 50[234]\b", "("];
        let bytes = write_table(patterns);
        let table = Table::parse(&bytes);
        assert_eq!(table.len(), 4, "the pattern that does not parse is left out");
        for p in &patterns[..4] {
            assert_eq!(table.get(p), Some(analyze(p).unwrap()), "{p}");
        }
        assert_eq!(table.get("("), None);
        assert_eq!(table.get("absent"), None);
        assert_eq!(table.get(&format!("{} ", patterns[0])), None, "a pattern's own text, not a near one");
        // Cut short anywhere: each pattern's analysis or none (then it is analyzed), never a
        // wrong one, never a panic; bytes that are not a table are an empty one.
        for end in 0..bytes.len() {
            let cut = Table::parse(&bytes[..end]);
            assert!(patterns[..4].iter().all(|p| cut.get(p).is_none_or(|a| a == analyze(p).unwrap())), "{end}");
        }
        assert_eq!(Table::parse(b"not a table").len(), 0);
    }

    #[test]
    fn the_embedded_table_holds_what_a_load_would_work_out() {
        let table = Table::parse(crate::catalog::load::BUILTIN_NEEDS);
        let c = crate::catalog::Catalog::builtin();
        let mut patterns: Vec<&str> = c.entries().iter().flat_map(|e| &e.patterns).map(String::as_str).collect();
        patterns.sort_unstable();
        patterns.dedup();
        assert_eq!(table.len(), patterns.len(), "one record per pattern of the embedded catalog");
        for p in patterns {
            assert_eq!(table.get(p), Some(analyze(p).unwrap()), "{p}");
        }
    }

    #[test]
    fn empty_matches_are_flagged() {
        assert!(analyze(r"x*").unwrap().may_match_empty);
        assert!(analyze(r"^$").unwrap().may_match_empty);
        assert!(!analyze(r"x+").unwrap().may_match_empty);
    }
}
