//! Every occurrence of many short literals (a few thousand, 3 bytes or longer) in a text, ASCII
//! case ignored, in one pass that tests each position independently.
//!
//! Why not Aho-Corasick: its automaton takes one transition per byte, each a memory load that
//! depends on the one before, so a search is bound by load latency; for the catalog's
//! literals it ran at about 200 MiB/s as an NFA and 330 MiB/s as an 8 MB DFA. Here each
//! position's next 4 bytes, with the ASCII case bit cleared, are hashed to one bit of a bitmap
//! of the literals' *key windows*; the tests of successive positions do not depend on each
//! other, so the CPU overlaps them. The few positions with a bit set are checked against the
//! literals filed under that bitmap word (the same window, then the literal's first 8 bytes
//! where it would start, then the whole literal, ASCII case ignored).
//!
//! A literal's key window is the 4 bytes of it that real tails have least often (by the
//! corpus's counts, `freq.rs`): `gradient` is keyed by `dien`, not by `grad`, and `worker
//! lost` not by the `work` of every `worker-3 processed` line. Common windows are where the
//! time goes: each position whose window is some literal's key costs a follow-up check. A
//! 3-byte literal is keyed by its 3 bytes, filed under all 128 values its fourth byte can take
//! once the case bit is cleared.
//!
//! Nothing is missed: a literal that occurs at a position has, at its key window's offset,
//! the same cleared bytes as it was filed under (bytes that are equal ignoring ASCII case
//! differ at most in that bit), so that bit is set and the literal is checked there. The
//! tests compare every occurrence with Aho-Corasick's.

use super::freq;

/// Bits of a bitmap index (2^18 bits: 32 KiB).
const BITS: u32 = 18;
/// Words of a bitmap.
const WORDS: usize = 1 << (BITS - 6);
/// Clears the ASCII case bit (0x20) of each of 8 bytes: `a` and `A` become the same.
const FOLD: u64 = 0xDFDF_DFDF_DFDF_DFDF;

/// The bitmap slot of folded bytes (multiplicative hashing: the top bits mix all input bits).
fn slot(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize
}

/// One literal filed under its key window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    /// The key window, folded (for a 3-byte literal, with a fourth byte).
    window: u32,
    /// Where the key window starts in the literal.
    offset: u32,
    /// The literal's first 8 bytes (as many as it has), folded: a cheap test before the whole
    /// literal is compared.
    head: u64,
    /// Which bytes of `head` it has.
    mask: u64,
    index: u32,
}

/// The searcher.
#[derive(Debug, Clone)]
pub(crate) struct Grams {
    /// The slots of every literal's key window: the test at each position.
    bitmap: Box<[u64; WORDS]>,
    /// Per bitmap word, where its entries start in `entries` (`WORDS + 1` offsets).
    starts: Vec<u32>,
    /// The literals by the bitmap word of their key window's slot.
    entries: Vec<Entry>,
    literals: Vec<Vec<u8>>,
}

/// Of 8 folded bytes, the first 4.
const FIRST_4: u64 = 0xFFFF_FFFF;

impl Grams {
    /// A searcher for `literals`, each at least 3 bytes long (shorter ones are never found).
    pub fn new(literals: &[Vec<u8>]) -> Grams {
        let mut filed: Vec<(usize, Entry)> = Vec::new();
        let mut bitmap = Box::new([0u64; WORDS]);
        let mut file = |window: u64, entry: Entry| {
            set(&mut bitmap, window);
            filed.push((slot(window) >> 6, entry));
        };
        for (i, lit) in literals.iter().enumerate() {
            let Ok(index) = u32::try_from(i) else { break };
            let (head, mask) = head_of(lit);
            match lit.len() {
                0..=2 => {}
                3 => {
                    for d in (0..=255u64).filter(|d| d & 0x20 == 0) {
                        let window = (head | d << 24) & FIRST_4;
                        file(window, Entry { window: window as u32, offset: 0, head, mask, index });
                    }
                }
                _ => {
                    let offset = key_offset(lit);
                    let (window, _) = head_of(lit.get(offset..).unwrap_or(&[]));
                    let window = window & FIRST_4;
                    let offset = u32::try_from(offset).unwrap_or(0);
                    file(window, Entry { window: window as u32, offset, head, mask, index });
                }
            }
        }
        filed.sort_unstable();
        filed.dedup();
        let mut starts = Vec::with_capacity(WORDS + 1);
        let mut next = 0usize;
        for word in 0..=WORDS {
            while filed.get(next).is_some_and(|f| f.0 < word) {
                next += 1;
            }
            starts.push(u32::try_from(next).unwrap_or(u32::MAX));
        }
        let entries = filed.into_iter().map(|(_, e)| e).collect();
        Grams { bitmap, starts, entries, literals: literals.to_vec() }
    }

    /// Appends to `hits` every occurrence of every literal in `text` as (position, literal
    /// index) (ASCII case ignored, overlapping ones too), by ascending position.
    pub fn find(&self, text: &[u8], hits: &mut Vec<(usize, usize)>) {
        let from = hits.len();
        let mut found = |at: usize, index: usize| {
            // A literal is found at its key window, up to a few bytes after its start: keep
            // `hits` in order.
            hits.push((at, index));
            let mut i = hits.len() - 1;
            while i > from && hits.get(i - 1).is_some_and(|h| h.0 > at) {
                hits.swap(i - 1, i);
                i -= 1;
            }
        };
        // The hot loop: 5 positions per 8-byte load, a bitmap test each; the rare set bits
        // go to `check`, out of line.
        let mut at = 0usize;
        while let Some(chunk) = text.get(at..at + 8) {
            let w =
                u64::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
            for k in 0..5 {
                if is_set(&self.bitmap, (w >> (8 * k)) & FIRST_4 & FOLD) {
                    self.check(text, at + k, &mut found);
                }
            }
            at += 5;
        }
        // The last positions, one by one (padded with zero bytes: a 3-byte literal is filed
        // under every fourth byte, zero included).
        for at in at..text.len() {
            let (head, _) = head_of(text.get(at..).unwrap_or(&[]));
            if is_set(&self.bitmap, head & FIRST_4) {
                self.check(text, at, &mut found);
            }
        }
    }

    /// Reports the literals whose key window is at `at`, where the first test held.
    #[inline(never)]
    fn check(&self, text: &[u8], at: usize, found: &mut impl FnMut(usize, usize)) {
        let (window, _) = head_of(text.get(at..).unwrap_or(&[]));
        let window = window & FIRST_4;
        let word = slot(window) >> 6;
        let bucket = match (self.starts.get(word), self.starts.get(word + 1)) {
            (Some(&from), Some(&to)) => self.entries.get(from as usize..to as usize).unwrap_or(&[]),
            _ => &[],
        };
        for e in bucket.iter().filter(|e| u64::from(e.window) == window) {
            let Some(start) = at.checked_sub(e.offset as usize) else { continue };
            let (head, _) = head_of(text.get(start..).unwrap_or(&[]));
            if head & e.mask == e.head
                && let Some(lit) = self.literals.get(e.index as usize)
                && text.get(start..start + lit.len()).is_some_and(|t| t.eq_ignore_ascii_case(lit))
            {
                found(start, e.index as usize);
            }
        }
    }
}

/// Where the key window of `lit` (4 bytes or more) starts: its rarest 4 bytes in the corpus,
/// the first of those.
fn key_offset(lit: &[u8]) -> usize {
    let mut best = (u32::MAX, 0);
    for (k, w) in lit.windows(4).enumerate() {
        let mut window = [0u8; 4];
        for (d, s) in window.iter_mut().zip(w) {
            *d = s.to_ascii_lowercase();
        }
        let count = freq::window_count(&window);
        if count < best.0 {
            best = (count, k);
            if count == 0 {
                break;
            }
        }
    }
    best.1
}

/// Whether the slot of `key` is set in `bitmap`.
#[inline(always)]
fn is_set(bitmap: &[u64; WORDS], key: u64) -> bool {
    let s = slot(key);
    bitmap[(s >> 6) & (WORDS - 1)] & (1 << (s & 63)) != 0
}

/// Sets the slot of `key` in `bitmap`.
fn set(bitmap: &mut [u64; WORDS], key: u64) {
    let s = slot(key);
    bitmap[(s >> 6) & (WORDS - 1)] |= 1 << (s & 63);
}

/// The first 8 bytes of `bytes` (as many as it has, zeros after), folded, and the mask of the
/// bytes it has.
fn head_of(bytes: &[u8]) -> (u64, u64) {
    if let Some(&[a, b, c, d, e, f, g, h]) = bytes.get(..8) {
        return (u64::from_le_bytes([a, b, c, d, e, f, g, h]) & FOLD, u64::MAX);
    }
    let mut b = [0u8; 8];
    let mut m = [0u8; 8];
    for ((d, m), s) in b.iter_mut().zip(m.iter_mut()).zip(bytes) {
        *d = *s;
        *m = 0xFF;
    }
    (u64::from_le_bytes(b) & FOLD, u64::from_le_bytes(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (position, literal) the way Aho-Corasick finds them.
    fn reference(literals: &[Vec<u8>], text: &[u8]) -> Vec<(usize, usize)> {
        let ac = aho_corasick::AhoCorasick::builder().ascii_case_insensitive(true).build(literals).unwrap();
        let mut v: Vec<_> = ac.find_overlapping_iter(text).map(|m| (m.start(), m.pattern().as_usize())).collect();
        v.sort_unstable();
        v
    }

    fn found(g: &Grams, text: &[u8]) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        g.find(text, &mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0), "ascending positions");
        sorted
    }

    #[test]
    fn finds_every_occurrence_in_any_case_including_overlaps_and_ends() {
        let lits: Vec<Vec<u8>> = ["oom", "kill", "oom-kill", "killed", "ABC", "bcd", "é\u{301}x"]
            .iter()
            .map(|s| s.as_bytes().to_ascii_lowercase())
            .collect();
        let g = Grams::new(&lits);
        for text in [
            "OOM-Killed here",
            "xoom",
            "oom",
            "oo",
            "",
            "abcd ABCD aBcD",
            "kill\nkilled\r\noom",
            "é\u{301}X and É",
            "[oom]",
        ] {
            assert_eq!(found(&g, text.as_bytes()), reference(&lits, text.as_bytes()), "{text:?}");
        }
    }

    #[test]
    fn case_bit_collisions_are_not_matches() {
        // `@` and `` ` `` differ only in the case bit, as do `[` and `{`: not letters, so not equal.
        let lits = vec![b"a@[x".to_vec()];
        let g = Grams::new(&lits);
        assert_eq!(found(&g, b"a`{x A@[X"), vec![(5, 0)]);
    }

    #[test]
    fn agrees_with_aho_corasick_on_the_catalog_literals_and_corpus() {
        let c = crate::catalog::Catalog::builtin();
        let mut lits: Vec<Vec<u8>> = Vec::new();
        for p in c.entries().iter().flat_map(|e| &e.patterns) {
            super::super::prefilter::analyze(p).unwrap().need.literals(&mut lits);
        }
        lits.sort();
        lits.dedup();
        assert!(lits.len() > 300, "{}", lits.len());
        let g = Grams::new(&lits);
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read(root.join("../fixtures/corpus/dev.jsonl")).unwrap();
        let fast = found(&g, &text);
        assert!(fast.len() > 1000, "{}", fast.len());
        assert_eq!(fast, reference(&lits, &text));
    }
}
