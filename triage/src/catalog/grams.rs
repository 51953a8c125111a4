//! Every occurrence of many short literals (a few thousand, 3 bytes or longer) in a text, ASCII
//! case ignored, in one pass that tests each position independently.
//!
//! Why not Aho-Corasick: its automaton takes one transition per byte, each a memory load that
//! depends on the one before, so a search is bound by load latency; for the catalog's
//! literals it ran at about 200 MiB/s as an NFA and 330 MiB/s as an 8 MB DFA (and its packed,
//! SIMD searcher takes at most 64 literals). Here each position's next 4 bytes, with the ASCII
//! case bit cleared, are hashed to one word of a bitmap of the literals' *key windows* and three
//! bits in it; the tests of successive positions do not depend on each other. With AVX2 (found
//! at run time) 8 positions are tested at once: their windows by a byte shuffle, the hashes by
//! vector multiplies, the 8 words by one gather (the whole search then takes about half the
//! time on a 1 MiB tail); else a scalar loop does the same test. The few positions with all
//! three bits set are checked against the literals filed under that bitmap word (the same
//! window, then the literal's first 8 bytes where it would start, made ASCII lower case all at
//! once, then the rest of a longer literal).
//!
//! A literal's key window is the 4 bytes of it that real tails have least often (by the
//! corpus's counts, and for windows the corpus lacks, by how common their 3-byte halves are:
//! `freq.rs`): `gradient` is keyed by `dien`, not by `grad`, and `worker
//! lost` not by the `work` of every `worker-3 processed` line. Common windows are where the
//! time goes: each position whose window is some literal's key costs a follow-up check. A
//! 3-byte literal is keyed by its 3 bytes, filed under all 128 values its fourth byte can take
//! once the case bit is cleared.
//!
//! Nothing is missed: a literal that occurs at a position has, at its key window's offset,
//! the same cleared bytes as it was filed under (bytes that are equal ignoring ASCII case
//! differ at most in that bit), so both its bits are set and the literal is checked there. The
//! tests compare every occurrence with Aho-Corasick's.

use super::freq;
use super::packed::Packed;
use super::word_edges::Edges;

/// Bits of a bitmap word index (2^13 words of 32 bits: 32 KiB, within the L1 data cache).
const WORD_BITS: u32 = 13;
/// Words of a bitmap.
const WORDS: usize = 1 << WORD_BITS;
/// Clears the ASCII case bit (0x20) of each of 8 bytes: `a` and `A` become the same.
const FOLD: u64 = 0xDFDF_DFDF_DFDF_DFDF;
/// The multipliers of the two hashes of a window (odd, well spread: Fibonacci hashing's
/// `2^32 / phi` and a second one of the same kind).
const MUL_1: u32 = 0x9E37_79B1;
const MUL_2: u32 = 0x85EB_CA77;

/// Where a folded 4-byte window is filed: a bitmap word (the top bits of one multiplicative
/// hash) and three bits in it (three 5-bit fields of another). Only the top bits of a product
/// depend on every byte of the window, as the word and two of the bits do; the third, from
/// bits 17-21, depends on the first three bytes only, which still tells most windows apart and
/// costs a 3-byte literal's 128 filings a single bit. A position passes the first test when all
/// three bits are set: on the 1 MiB benchmark tail about 8,900 positions pass it per scan
/// (most of them some literal's key window), against 10,000 with two bits and 13,000+ with one.
#[inline(always)]
fn probe(window: u32) -> (usize, u32) {
    let h = window.wrapping_mul(MUL_1);
    let g = window.wrapping_mul(MUL_2);
    ((h >> (32 - WORD_BITS)) as usize, 1 << ((g >> 17) & 31) | 1 << ((g >> 22) & 31) | 1 << (g >> 27))
}

/// One literal filed under its key window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    /// The key window, folded (for a 3-byte literal, with a fourth byte).
    window: u32,
    /// Where the key window starts in the literal.
    offset: u32,
    /// The literal's first 8 bytes (as many as it has, zeros after), ASCII lower case: one
    /// exact test of a literal of up to 8 bytes, and of the start of a longer one.
    head: u64,
    /// The literal's length.
    len: u32,
    index: u32,
    /// The word boundaries an occurrence must have to count.
    edges: Edges,
}

/// The searcher.
#[derive(Debug, Clone)]
pub(crate) struct Grams {
    /// The bits of every literal's key window: the test at each position.
    bitmap: Box<[u32; WORDS]>,
    /// Per bitmap word, where its entries start in `entries` (`WORDS + 1` offsets).
    starts: Vec<u32>,
    /// The literals by the bitmap word of their key window.
    entries: Vec<Entry>,
    literals: Packed<u8>,
}

/// Of 8 folded bytes, the first 4.
const FIRST_4: u64 = 0xFFFF_FFFF;

impl Grams {
    /// A searcher for `literals`, each at least 3 bytes long (shorter ones are never found).
    #[cfg(test)]
    pub fn new(literals: &[Vec<u8>]) -> Grams {
        Grams::with_edges(literals, &[])
    }

    /// A searcher for `literals`, each at least 3 bytes long (shorter ones are never found),
    /// that reports an occurrence of `literals[i]` only where it has the word boundaries
    /// `edges[i]` asks for (none when `edges` is shorter).
    pub fn with_edges<L: AsRef<[u8]>>(literals: &[L], edges: &[Edges]) -> Grams {
        let mut filed: Vec<(usize, Entry)> = Vec::new();
        let mut bitmap = Box::new([0u32; WORDS]);
        let mut file = |window: u32, entry: Entry| {
            let (word, bits) = probe(window);
            if let Some(w) = bitmap.get_mut(word) {
                *w |= bits;
            }
            filed.push((word, entry));
        };
        for (i, lit) in literals.iter().enumerate() {
            let lit = lit.as_ref();
            let Ok(index) = u32::try_from(i) else { break };
            let Ok(len) = u32::try_from(lit.len()) else { continue };
            let head = lower_8(load_8(lit));
            let edges = edges.get(i).copied().unwrap_or_default();
            match lit.len() {
                0..=2 => {}
                3 => {
                    for d in (0..=255u64).filter(|d| d & 0x20 == 0) {
                        let window = ((load_8(lit) & FOLD | d << 24) & FIRST_4) as u32;
                        file(window, Entry { window, offset: 0, head, len, index, edges });
                    }
                }
                _ => {
                    let offset = key_offset(lit);
                    let window = (load_8(lit.get(offset..).unwrap_or(&[])) & FOLD & FIRST_4) as u32;
                    let offset = u32::try_from(offset).unwrap_or(0);
                    file(window, Entry { window, offset, head, len, index, edges });
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
        // A new allocation of the exact size (collected in place, the entries would keep the
        // pushes' spare room and the wider items' stride: up to twice the memory, for life).
        let mut entries = Vec::with_capacity(filed.len());
        entries.extend(filed.into_iter().map(|(_, e)| e));
        Grams { bitmap, starts, entries, literals: Packed::new(literals) }
    }

    /// Appends to `hits` every occurrence of every literal in `text` as (position, literal
    /// index) (ASCII case ignored, overlapping ones too), by ascending position.
    pub fn find(&self, text: &[u8], hits: &mut Vec<(usize, usize)>) {
        self.find_with(text, hits, true);
    }

    /// [`Grams::find`], with the vector first pass when `vector` and the CPU has it.
    fn find_with(&self, text: &[u8], hits: &mut Vec<(usize, usize)>, vector: bool) {
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
        let mut at = 0usize;
        #[cfg(target_arch = "x86_64")]
        if vector && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            at = unsafe { self.first_pass_avx2(text, &mut found) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = vector;
        // The scalar pass (and the vector pass's last positions): 5 positions per 8-byte load,
        // a bitmap test each; the rare ones that pass go to `check`, out of line.
        while let Some(chunk) = text.get(at..at + 8) {
            let w =
                u64::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
            for k in 0..5 {
                if self.is_set(((w >> (8 * k)) & FIRST_4 & FOLD) as u32) {
                    self.check(text, at + k, &mut found);
                }
            }
            at += 5;
        }
        // The last positions, one by one (padded with zero bytes: a 3-byte literal is filed
        // under every fourth byte, zero included).
        for at in at..text.len() {
            if self.is_set((load_8(text.get(at..).unwrap_or(&[])) & FOLD & FIRST_4) as u32) {
                self.check(text, at, &mut found);
            }
        }
    }

    /// The first test at 16 positions per step, with AVX2: the positions' windows by one byte
    /// shuffle per 8, both hashes by vector multiplies, the 8 bitmap words by one gather, and
    /// the positions where all three bits are set as a mask; those go to `check`. Returns where it
    /// stopped (the scalar pass does the last positions).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn first_pass_avx2(&self, text: &[u8], found: &mut impl FnMut(usize, usize)) -> usize {
        use std::arch::x86_64::{
            __m128i, __m256i, _mm_loadu_si128, _mm256_and_si256, _mm256_andnot_si256, _mm256_broadcastsi128_si256,
            _mm256_castsi256_ps, _mm256_i32gather_epi32, _mm256_movemask_ps, _mm256_mullo_epi32, _mm256_set1_epi32,
            _mm256_setr_epi8, _mm256_shuffle_epi8, _mm256_sllv_epi32, _mm256_srli_epi32, _mm256_xor_si256,
        };
        // Windows at positions 0..4 of the low lane's 16 bytes, and 4..8 of the high lane's
        // (the same 16 bytes).
        let windows = _mm256_setr_epi8(
            0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10,
        );
        let fold = _mm256_set1_epi32(FOLD as u32 as i32);
        let mul_1 = _mm256_set1_epi32(MUL_1 as i32);
        let mul_2 = _mm256_set1_epi32(MUL_2 as i32);
        let low_5 = _mm256_set1_epi32(31);
        let bitmap = self.bitmap.as_ptr().cast::<i32>();
        // Of 8 positions from 16 loaded bytes, a bit per position whose three bits are set.
        let test = |bytes: __m128i| -> u32 {
            let w = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes), windows), fold);
            let h = _mm256_mullo_epi32(w, mul_1);
            let g = _mm256_mullo_epi32(w, mul_2);
            let word = _mm256_srli_epi32::<{ 32 - WORD_BITS as i32 }>(h);
            // SAFETY: every index is below 2^WORD_BITS = WORDS, the bitmap's length in i32s.
            let words: __m256i = unsafe { _mm256_i32gather_epi32::<4>(bitmap, word) };
            // Shift each bit to the sign: by 31 minus its place.
            let first = _mm256_sllv_epi32(words, _mm256_andnot_si256(_mm256_srli_epi32::<22>(g), low_5));
            let second = _mm256_sllv_epi32(words, _mm256_xor_si256(_mm256_srli_epi32::<27>(g), low_5));
            let third = _mm256_sllv_epi32(words, _mm256_andnot_si256(_mm256_srli_epi32::<17>(g), low_5));
            _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_and_si256(first, second), third))) as u32
        };
        let mut at = 0usize;
        while let Some(chunk) = text.get(at..at + 24) {
            // SAFETY: `chunk` has 24 bytes: the loads read bytes 0..16 and 8..24 of it.
            let (a, b) =
                unsafe { (_mm_loadu_si128(chunk.as_ptr().cast()), _mm_loadu_si128(chunk.as_ptr().add(8).cast())) };
            let mut passed = test(a) | test(b) << 8;
            while passed != 0 {
                self.check(text, at + passed.trailing_zeros() as usize, found);
                passed &= passed - 1;
            }
            at += 16;
        }
        at
    }

    /// Whether all three bits of `window` (folded) are set.
    #[inline(always)]
    fn is_set(&self, window: u32) -> bool {
        let (word, bits) = probe(window);
        self.bitmap[word & (WORDS - 1)] & bits == bits
    }

    /// Reports the literals whose key window is at `at`, where the first test held.
    #[inline(never)]
    fn check(&self, text: &[u8], at: usize, found: &mut impl FnMut(usize, usize)) {
        let window = (load_8(text.get(at..).unwrap_or(&[])) & FOLD & FIRST_4) as u32;
        let (word, _) = probe(window);
        let bucket = match (self.starts.get(word), self.starts.get(word + 1)) {
            (Some(&from), Some(&to)) => self.entries.get(from as usize..to as usize).unwrap_or(&[]),
            _ => &[],
        };
        for e in bucket.iter().filter(|e| e.window == window) {
            let Some(start) = at.checked_sub(e.offset as usize) else { continue };
            let len = e.len as usize;
            let Some(occurrence) = text.get(start..start + len) else { continue };
            // The first 8 bytes (as many as the literal has) in one test, the rest (if any)
            // byte by byte.
            let mask = if len >= 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
            // (Loaded from the text, not the occurrence: a slice shorter than 8 bytes would be
            // copied first.)
            if lower_8(load_8(text.get(start..).unwrap_or(&[]))) & mask == e.head
                && (len <= 8
                    || self.literals.get(e.index as usize).is_some_and(|lit| {
                        occurrence.get(8..).unwrap_or(&[]).eq_ignore_ascii_case(lit.get(8..).unwrap_or(&[]))
                    }))
                && e.edges.hold(text, start, len)
            {
                found(start, e.index as usize);
            }
        }
    }
}

/// Where the key window of `lit` (4 bytes or more) starts: its 4 bytes least likely in log
/// text (`freq::window_weight`), the first of those.
fn key_offset(lit: &[u8]) -> usize {
    let mut best = (u64::MAX, 0);
    for (k, w) in lit.windows(4).enumerate() {
        let mut window = [0u8; 4];
        for (d, s) in window.iter_mut().zip(w) {
            *d = s.to_ascii_lowercase();
        }
        let weight = freq::window_weight(window);
        if weight < best.0 {
            best = (weight, k);
            if weight == 0 {
                break;
            }
        }
    }
    best.1
}

/// The first 8 bytes of `bytes` (as many as it has, zeros after), little-endian.
#[inline(always)]
fn load_8(bytes: &[u8]) -> u64 {
    if let Some(&[a, b, c, d, e, f, g, h]) = bytes.get(..8) {
        return u64::from_le_bytes([a, b, c, d, e, f, g, h]);
    }
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(bytes) {
        *d = *s;
    }
    u64::from_le_bytes(b)
}

/// Each of the 8 bytes of `x` made ASCII lower case (`u8::to_ascii_lowercase`), all at once:
/// a byte below 0x80 whose low 7 bits are from `A` to `Z` gets the 0x20 bit. Adding to the low
/// 7 bits of a byte never carries into the next byte.
#[inline(always)]
fn lower_8(x: u64) -> u64 {
    const LOW_7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low = x & LOW_7;
    // The high bit of each byte: set where the low 7 bits are above `Z` (0x5A) ...
    let above_z = low + 0x2525_2525_2525_2525;
    // ... and where they are `A` (0x41) or above.
    let from_a = low + 0x3F3F_3F3F_3F3F_3F3F;
    let upper = from_a & !above_z & !x & HIGH;
    x | upper >> 2
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

    /// What `find` reports (checked to be in ascending positions, and the same with and
    /// without the vector first pass), sorted.
    fn found(g: &Grams, text: &[u8]) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        g.find(text, &mut v);
        let mut scalar = Vec::new();
        g.find_with(text, &mut scalar, false);
        assert_eq!(v, scalar, "the vector and scalar passes agree");
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
    fn every_position_of_texts_of_every_length_is_tested() {
        // Literals at every offset of texts around the vector pass's step (16 positions, 24
        // bytes loaded), including the last positions, which the scalar pass finishes.
        let lits: Vec<Vec<u8>> = ["abc", "wxyz", "kernel panic", "q9q"].iter().map(|s| s.as_bytes().to_vec()).collect();
        let g = Grams::new(&lits);
        for len in 0..70usize {
            for lit in &lits {
                for at in 0..=len.saturating_sub(lit.len()) {
                    if at + lit.len() > len {
                        continue;
                    }
                    let mut text = vec![b'.'; len];
                    text[at..at + lit.len()].copy_from_slice(&lit.to_ascii_uppercase());
                    assert_eq!(found(&g, &text), reference(&lits, &text), "{len} {at}");
                }
            }
        }
    }

    #[test]
    fn lower_8_is_to_ascii_lowercase_at_every_place() {
        for b in 0..=255u8 {
            for place in 0..8 {
                let mut bytes = *b"aZ@[`{z\xff";
                bytes[place] = b;
                let want: Vec<u8> = bytes.iter().map(u8::to_ascii_lowercase).collect();
                assert_eq!(lower_8(u64::from_le_bytes(bytes)).to_le_bytes().to_vec(), want, "{b:#x} at {place}");
            }
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
            super::super::need::analyze(p).unwrap().need.literals(&mut lits);
        }
        let mut lits: Vec<Vec<u8>> = lits.iter().map(|l| super::super::word_edges::text(l).to_vec()).collect();
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
