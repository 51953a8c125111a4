//! Two walks over a parsed regex (`regex_syntax::hir::Hir`) that the prefilter's rewrites
//! share: rebuild it with its leaves replaced, and ask whether any leaf has a property.

use regex_syntax::hir::{Hir, HirKind};

/// `hir` rebuilt with every leaf (a literal, a class, a look-around, the empty regex) replaced
/// by `leaf(it)`; concatenations, alternations, groups and repetitions keep their shape.
pub(crate) fn map_leaves(hir: &Hir, leaf: &impl Fn(&Hir) -> Hir) -> Hir {
    match hir.kind() {
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(|p| map_leaves(p, leaf)).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(|p| map_leaves(p, leaf)).collect()),
        HirKind::Capture(c) => {
            let mut c = c.clone();
            c.sub = Box::new(map_leaves(&c.sub, leaf));
            Hir::capture(c)
        }
        HirKind::Repetition(r) => {
            let mut r = r.clone();
            r.sub = Box::new(map_leaves(&r.sub, leaf));
            Hir::repetition(r)
        }
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => leaf(hir),
    }
}

/// Whether some leaf of `hir` (see [`map_leaves`]) meets `test`.
pub(crate) fn any_leaf(hir: &Hir, test: &impl Fn(&Hir) -> bool) -> bool {
    match hir.kind() {
        HirKind::Concat(parts) | HirKind::Alternation(parts) => parts.iter().any(|p| any_leaf(p, test)),
        HirKind::Capture(c) => any_leaf(&c.sub, test),
        HirKind::Repetition(r) => any_leaf(&r.sub, test),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => test(hir),
    }
}
