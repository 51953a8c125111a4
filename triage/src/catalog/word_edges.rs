//! Word boundaries at the ends of a prefilter literal: `\b500\b` needs a `500` with no word
//! byte on either side, so the `500` inside `1500 ms` or `batch 5001` wakes nothing.
//!
//! Why: short anchors (HTTP statuses, exit codes such as `137`, words such as `nan`) occur
//! inside longer numbers and words all through real tails; every such occurrence costs a line
//! lookup, a need check and sometimes a regex run, for a line the pattern cannot match.
//!
//! How: before its literals are extracted, a pattern's every `\b` (ASCII, as the scan compiles
//! it) becomes the byte [`MARK`], a literal like any other. The extractor then carries it into
//! the literals it finds next to the literal text (`\b500\b` gives `MARK 500 MARK`), and each
//! marked literal means "this text, with a word boundary here", exactly as the regex does: a
//! match of the pattern holds that text with that boundary. A mark inside a literal is dropped
//! (the literal is then only a little weaker); a mark at an end becomes an [`Edges`] flag that
//! the anchor search checks against the bytes around an occurrence. A pattern that already
//! holds the byte `MARK` is not marked at all.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::hir_walk::{any_leaf, map_leaves};

/// The byte a `\b` becomes in a literal (never in a catalog pattern's own text: see [`mark`]).
pub(crate) const MARK: u8 = 0x01;

/// Classes up to this size may be spelled out as literals by the extractor (its own limit is
/// smaller): only those can put a byte of theirs into a literal.
const SPELLED_CLASS: u32 = 64;

/// Which ends of an occurrence of a literal must be word boundaries (ASCII: a word byte is a
/// letter, a digit or `_`; the start and end of a line are boundaries before a word byte).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Edges {
    pub start: bool,
    pub end: bool,
}

impl Edges {
    /// Whether the occurrence `text[start..start + len]` has the boundaries asked for.
    #[inline]
    pub fn hold(self, text: &[u8], start: usize, len: usize) -> bool {
        let word =
            |i: Option<usize>| i.and_then(|i| text.get(i)).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
        let end = start + len;
        (!self.start || word(start.checked_sub(1)) != word(Some(start)))
            && (!self.end || word(end.checked_sub(1)) != word(Some(end)))
    }
}

/// `hir` with every ASCII `\b` made the literal byte [`MARK`], for literal extraction only;
/// `None` when `hir` has no `\b`, or has the byte `MARK` of its own (a mark would then be
/// ambiguous).
pub(crate) fn mark(hir: &Hir) -> Option<Hir> {
    (has_boundary(hir) && !has_mark_byte(hir)).then(|| marked(hir))
}

fn marked(hir: &Hir) -> Hir {
    map_leaves(hir, &|leaf| match leaf.kind() {
        HirKind::Look(Look::WordAscii) => Hir::literal([MARK]),
        _ => leaf.clone(),
    })
}

fn has_boundary(hir: &Hir) -> bool {
    any_leaf(hir, &|leaf| matches!(leaf.kind(), HirKind::Look(Look::WordAscii)))
}

/// Whether a literal extracted from `hir` could hold the byte [`MARK`]: a literal of it does,
/// or a class small enough for the extractor to spell out (`.` or `[^x]` never is).
fn has_mark_byte(hir: &Hir) -> bool {
    let small_with_mark = |ranges: &mut dyn Iterator<Item = (u32, u32)>| {
        let (mut size, mut with) = (0u32, false);
        for (start, end) in ranges {
            size += end - start + 1;
            with |= start <= u32::from(MARK) && u32::from(MARK) <= end;
        }
        with && size <= SPELLED_CLASS
    };
    any_leaf(hir, &|leaf| match leaf.kind() {
        HirKind::Literal(lit) => lit.0.contains(&MARK),
        HirKind::Class(Class::Bytes(c)) => {
            small_with_mark(&mut c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))))
        }
        HirKind::Class(Class::Unicode(c)) => {
            small_with_mark(&mut c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))))
        }
        _ => false,
    })
}

/// `lit` (with marks) in its one form: no mark inside the text, at most one at each end.
pub(crate) fn normalize(lit: &[u8]) -> Vec<u8> {
    let (text, edges) = split(lit);
    let mut out = Vec::with_capacity(text.len() + 2);
    if edges.start {
        out.push(MARK);
    }
    out.extend(text.iter().copied().filter(|&b| b != MARK));
    if edges.end {
        out.push(MARK);
    }
    out
}

/// `lit`'s text between its end marks (marks inside it are left: see [`normalize`]) and which
/// ends are marked. A literal that is only marks has no text and no edges.
pub(crate) fn split(lit: &[u8]) -> (&[u8], Edges) {
    let start = lit.iter().take_while(|&&b| b == MARK).count();
    let text = lit.get(start..).unwrap_or(&[]);
    let end = text.iter().rev().take_while(|&&b| b == MARK).count();
    let text = text.get(..text.len() - end).unwrap_or(&[]);
    (text, if text.is_empty() { Edges::default() } else { Edges { start: start > 0, end: end > 0 } })
}

/// `lit`'s text without its end marks.
pub(crate) fn text(lit: &[u8]) -> &[u8] {
    split(lit).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_checked_as_the_regex_checks_them() {
        let both = Edges { start: true, end: true };
        let at = |t: &str, lit: &str| t.find(lit).unwrap();
        for (text, lit, holds) in [
            ("exit 137", "137", true),
            ("137", "137", true),
            ("took 1370 ms", "137", false),
            ("x137 y", "137", false),
            ("code_137", "137", false),
            ("(137)", "137", true),
            ("é137", "137", true),
            (": error", ": e", false),
            ("x: e", ": e", true),
            (" : e", ": e", false),
        ] {
            assert_eq!(both.hold(text.as_bytes(), at(text, lit), lit.len()), holds, "{text:?} {lit:?}");
            let re = regex::bytes::RegexBuilder::new(&format!(r"\b{}\b", regex::escape(lit)))
                .unicode(false)
                .build()
                .unwrap();
            assert_eq!(re.is_match(text.as_bytes()), holds, "the regex agrees on {text:?}");
        }
        let start_only = Edges { start: true, end: false };
        assert!(start_only.hold(b"a 500x", 2, 3));
        assert!(!Edges { start: false, end: true }.hold(b"a 500x", 2, 3));
    }

    #[test]
    fn marks_become_edges_and_inner_marks_are_dropped() {
        let m = MARK;
        assert_eq!(split(&[m, b'a', b'b', b'c', m]), (&b"abc"[..], Edges { start: true, end: true }));
        assert_eq!(split(b"abc"), (&b"abc"[..], Edges::default()));
        assert_eq!(split(&[m, m]), (&b""[..], Edges::default()));
        assert_eq!(normalize(&[m, m, b'a', m, b'b', m]), vec![m, b'a', b'b', m]);
    }

    #[test]
    fn patterns_with_the_mark_byte_of_their_own_are_not_marked() {
        let parse = |p: &str| regex_syntax::ParserBuilder::new().unicode(false).utf8(false).build().parse(p).unwrap();
        assert!(mark(&parse(r"\babc\b")).is_some());
        assert!(mark(&parse(r"abc")).is_none(), "nothing to mark");
        assert!(mark(&parse(r"\babc\x01")).is_none());
        assert!(mark(&parse(r"\babc[\x00-\x05]")).is_none());
        assert!(mark(&parse(r"(?i)\babc\b.{0,20}[^x]+")).is_some(), "large classes are never spelled out");
    }
}
