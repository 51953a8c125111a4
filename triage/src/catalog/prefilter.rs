//! The scan's literal prefilter: which lines can a pattern match at all?
//!
//! Why: one lazy DFA for a few hundred patterns at once (a `RegexSet`) spends most of its time
//! building and evicting states, and scans well under 100 MiB/s; most lines of a tail match
//! nothing. Nearly every catalog pattern contains some literal text that any match must
//! contain (`Connection reset`, `oom-kill`, `NCCL`). This module finds such literals with
//! `regex-syntax`'s own literal extractor, so one Aho-Corasick pass over the whole tail
//! (ASCII case-insensitive, overlapping) names the few (line, pattern) pairs worth a regex;
//! the scan then runs each of those patterns' own small regex on its line. A pattern without
//! a usable literal is *always* a candidate, on every line: the prefilter only ever removes
//! pairs that cannot match, so the matches are exactly the plain per-line `RegexSet`'s (a test
//! compares both on every corpus file).
//!
//! How literals are found, per pattern (parsed exactly as it is compiled: bytes, Unicode off):
//! 1. ASCII case folding is undone (`(?i)` turns `a` into the class `[Aa]`, which would make a
//!    12-letter word 4,096 literals): such classes become the lowercase letter, since the
//!    search ignores ASCII case anyway;
//! 2. every sub-expression that any match must contain (the whole, the parts of a
//!    concatenation, the body of a group or of a repetition of at least one) is offered to the
//!    extractor, for prefixes and for suffixes, and an alternation also gives the union of its
//!    branches' own best answers (so `\b403\b.{0,3}Forbidden|status[:=]403\b` is found by
//!    `forbidden` or `status`); a finite set of literals of at least 3 bytes, none with a line
//!    break, is a usable answer;
//! 3. the best answer is kept: the longest shortest literal (fewer false candidates) up to 8
//!    bytes, then the fewest literals.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, HirKind, Repetition};

/// A pattern's literals must be at least this long to be used (shorter ones hit nearly every
/// line, and running the pattern on every line is then cheaper than the bookkeeping).
const MIN_LITERAL_LEN: usize = 3;

/// Literals this long are specific enough: fewer of them then beat longer ones.
const GOOD_LITERAL_LEN: usize = 6;

/// What the parser says about one pattern.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// Literals (lowercase ASCII) one of which every match contains; `None`: no usable ones.
    pub literals: Option<Vec<Vec<u8>>>,
    /// The pattern may match an empty line (only such patterns need compiling at load to
    /// check that they do not).
    pub may_match_empty: bool,
}

/// Parse `pattern` as the scan compiles it (bytes, Unicode off) and find its literals.
pub(crate) fn analyze(pattern: &str) -> Result<Analysis, String> {
    let hir = ParserBuilder::new().unicode(false).utf8(false).build().parse(pattern).map_err(|e| e.to_string())?;
    let may_match_empty = hir.properties().minimum_len().is_none_or(|n| n == 0);
    let hir = fold_ascii_case(&hir);
    let literals =
        best_literals(&hir).and_then(|seq| seq.literals().map(|l| l.iter().map(|l| l.as_bytes().to_vec()).collect()));
    Ok(Analysis { literals, may_match_empty })
}

/// The best usable literal set of `hir`: from the extractor on each required sub-expression,
/// or, for an alternation, the union of its branches' best sets when every branch has one.
fn best_literals(hir: &Hir) -> Option<Seq> {
    let mut required = Vec::new();
    collect_required(hir, &mut required);
    let mut best: Option<Seq> = None;
    let mut consider = |seq: Seq| {
        if usable(&seq) && best.as_ref().is_none_or(|b| better(&seq, b)) {
            best = Some(seq);
        }
    };
    for sub in required {
        for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
            consider(Extractor::new().kind(kind).extract(sub));
        }
        if let HirKind::Alternation(branches) = sub.kind() {
            let mut union = Seq::empty();
            for branch in branches {
                match best_literals(branch) {
                    Some(mut seq) => union.union(&mut seq),
                    None => {
                        union = Seq::infinite();
                        break;
                    }
                }
            }
            union.dedup();
            consider(union);
        }
    }
    best
}

/// Finite, non-empty, every literal long enough and within one line.
fn usable(seq: &Seq) -> bool {
    match seq.literals() {
        Some(lits) if !lits.is_empty() => {
            lits.iter().all(|l| l.len() >= MIN_LITERAL_LEN && !l.as_bytes().iter().any(|&b| b == b'\n' || b == b'\r'))
        }
        _ => false,
    }
}

/// Longer shortest literal first (up to [`GOOD_LITERAL_LEN`]: past it, a literal is rare
/// enough), then fewer literals.
fn better(a: &Seq, b: &Seq) -> bool {
    let key = |s: &Seq| {
        (s.min_literal_len().unwrap_or(0).min(GOOD_LITERAL_LEN), std::cmp::Reverse(s.len().unwrap_or(usize::MAX)))
    };
    key(a) > key(b)
}

/// Sub-expressions every match of `hir` contains a match of (`hir` itself first).
fn collect_required<'h>(hir: &'h Hir, out: &mut Vec<&'h Hir>) {
    out.push(hir);
    match hir.kind() {
        HirKind::Concat(parts) => parts.iter().for_each(|p| collect_required(p, out)),
        HirKind::Capture(c) => collect_required(&c.sub, out),
        HirKind::Repetition(r) if r.min >= 1 => collect_required(&r.sub, out),
        _ => {}
    }
}

/// `hir` with every class that is one ASCII letter in both cases (`[Aa]`) made that letter in
/// lowercase, and every literal lowercased: a copy for literal extraction only.
fn fold_ascii_case(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Literal(lit) => Hir::literal(lit.0.to_ascii_lowercase()),
        HirKind::Class(class) => match single_folded_byte(class) {
            Some(b) => Hir::literal([b]),
            None => hir.clone(),
        },
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(fold_ascii_case).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(fold_ascii_case).collect()),
        HirKind::Capture(c) => {
            let mut c = c.clone();
            c.sub = Box::new(fold_ascii_case(&c.sub));
            Hir::capture(c)
        }
        HirKind::Repetition(r) => Hir::repetition(Repetition { sub: Box::new(fold_ascii_case(&r.sub)), ..r.clone() }),
        HirKind::Empty | HirKind::Look(_) => hir.clone(),
    }
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

/// The literals of every pattern in one automaton, and which patterns each literal speaks for.
#[derive(Debug, Clone)]
pub(crate) struct Prefilter {
    /// `None` when no pattern has literals.
    automaton: Option<AhoCorasick>,
    /// Per automaton pattern (a distinct literal), the pattern indices it stands for.
    owners: Vec<Vec<usize>>,
    /// Patterns with no usable literal: candidates on every line.
    always: Vec<usize>,
}

impl Prefilter {
    /// From each pattern's literals (`None`: always a candidate).
    pub fn build(literals: &[Option<Vec<Vec<u8>>>]) -> Result<Prefilter, String> {
        let mut index: std::collections::HashMap<&[u8], usize> = std::collections::HashMap::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        let mut lits: Vec<&[u8]> = Vec::new();
        let mut always = Vec::new();
        for (p, l) in literals.iter().enumerate() {
            let Some(l) = l else {
                always.push(p);
                continue;
            };
            for lit in l {
                let slot = *index.entry(lit.as_slice()).or_insert_with(|| {
                    lits.push(lit.as_slice());
                    owners.push(Vec::new());
                    owners.len() - 1
                });
                if owners[slot].last() != Some(&p) {
                    owners[slot].push(p);
                }
            }
        }
        let automaton = if lits.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    // The crate's choice for about a thousand literals, a contiguous NFA: a DFA
                    // searches about 20% faster but takes 8 MB and 25 ms to build at load.
                    .build(&lits)
                    .map_err(|e| e.to_string())?,
            )
        };
        Ok(Prefilter { automaton, owners, always })
    }

    /// Patterns that are candidates on every line.
    pub fn always(&self) -> &[usize] {
        &self.always
    }

    /// Calls `found(start, pattern)` for every occurrence of a literal in `text`, at its start
    /// offset, once per pattern the literal speaks for.
    pub fn for_each_hit(&self, text: &[u8], mut found: impl FnMut(usize, usize)) {
        let Some(ac) = &self.automaton else { return };
        for m in ac.find_overlapping_iter(text) {
            for &p in self.owners.get(m.pattern().as_usize()).map_or(&[][..], Vec::as_slice) {
                found(m.start(), p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(p: &str) -> Option<Vec<String>> {
        analyze(p).unwrap().literals.map(|v| v.into_iter().map(|l| String::from_utf8(l).unwrap()).collect())
    }

    #[test]
    fn case_insensitive_words_are_one_lowercase_literal() {
        assert_eq!(lits(r"(?i)connection reset by peer"), Some(vec!["connection reset by peer".into()]));
    }

    #[test]
    fn a_required_middle_part_is_used_when_the_ends_are_classes() {
        assert_eq!(lits(r"\d+ oom[-_]kill events?\b"), Some(vec!["kill event".into()]));
        let l = lits(r"\d+ (?:GPU|HBM) ECC\b").unwrap();
        assert!(l.iter().all(|l| l.ends_with(" ecc")), "{l:?}");
    }

    #[test]
    fn alternations_give_one_literal_per_branch() {
        let mut l = lits(r"(?i)\b(?:ECONNRESET|ETIMEDOUT)\b").unwrap();
        l.sort();
        assert_eq!(l, vec!["econnreset".to_string(), "etimedout".into()]);
    }

    #[test]
    fn alternations_of_patterns_with_literals_have_literals() {
        let mut l = lits(r"(?i)\b403\b.{0,3}\bForbidden\b|^Terminated\s*$").unwrap();
        l.sort();
        assert_eq!(l, vec!["forbidden".to_string(), "terminated".into()]);
    }

    #[test]
    fn patterns_without_a_literal_are_always_candidates() {
        assert_eq!(lits(r"^\w+$"), None);
        assert_eq!(lits(r"(?:ab)?\d+"), None);
        assert_eq!(lits(r"a\nbcd"), None, "a line never holds a line break");
    }

    #[test]
    fn builtin_patterns_mostly_have_literals() {
        let c = crate::catalog::Catalog::builtin();
        let mut without = Vec::new();
        for p in c.entries().iter().flat_map(|e| &e.patterns) {
            if analyze(p).unwrap().literals.is_none() {
                without.push(p.clone());
            }
        }
        eprintln!("{} patterns without literals: {without:#?}", without.len());
        assert!(without.len() * 10 < c.entries().len(), "most patterns should have literals: {without:#?}");
    }

    #[test]
    fn empty_matches_are_flagged() {
        assert!(analyze(r"x*").unwrap().may_match_empty);
        assert!(analyze(r"^$").unwrap().may_match_empty);
        assert!(!analyze(r"x+").unwrap().may_match_empty);
    }

    #[test]
    fn hits_name_their_patterns() {
        let pf = Prefilter::build(&[Some(vec![b"abc".to_vec()]), None, Some(vec![b"abc".to_vec(), b"xyz".to_vec()])])
            .unwrap();
        let mut hits = Vec::new();
        pf.for_each_hit(b"..ABC..xyz", |s, p| hits.push((s, p)));
        assert_eq!(hits, vec![(2, 0), (2, 2), (7, 2)]);
        assert_eq!(pf.always(), &[1]);
    }
}
