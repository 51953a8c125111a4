//! The lines of a text: where each ends, found in one pass, so that a scan can go from a byte
//! position to its line (number, start, end) without searching the text again.
//!
//! A scan needs lines three ways: the prefilter finds literals anywhere in the text and must
//! name each one's line and line number, a pattern runs on its line, and an analyzer reads
//! lines by number. Searching for the `\n` before and after each hit and counting the ones
//! before it took a tenth of a scan of a few KiB (a `memchr` call costs about 60 instructions
//! however short the line). Here every `\n` is found once: with AVX2 (found at run time), 64
//! bytes compared at a time and the matches read from a bit mask; else with `memchr`. The same
//! pass notes whether the text has an ESC or a 0x9B byte (the 8-bit CSI ends in it), so a
//! scan knows without another pass whether ANSI escapes must be stripped first.

/// The lines of one text, split at `\n` (a text ending in `\n` has an empty last line, as
/// `str::split` gives).
pub(crate) struct Lines<'t> {
    text: &'t str,
    /// Byte position of every `\n`, ascending.
    ends: Vec<usize>,
    /// Whether the text has an ESC (0x1B) or 0x9B byte.
    escapes: bool,
}

/// ESC and 0x9B differ only in the high bit: a byte is one of them when its low 7 bits are ESC.
const LOW_7: u8 = 0x7F;
const ESC: u8 = 0x1B;

impl<'t> Lines<'t> {
    pub fn new(text: &'t str) -> Lines<'t> {
        Lines::with(text, true)
    }

    /// [`Lines::new`], with the vector pass when `vector` and the CPU has it.
    fn with(text: &'t str, vector: bool) -> Lines<'t> {
        let bytes = text.as_bytes();
        // About one line per 64 bytes of log text; a longer one costs a reallocation or two.
        let mut ends = Vec::with_capacity(bytes.len() / 64 + 1);
        let mut at = 0;
        let mut escapes = false;
        #[cfg(target_arch = "x86_64")]
        if vector && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            (at, escapes) = unsafe { newlines_avx2(bytes, &mut ends) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = vector;
        let rest = bytes.get(at..).unwrap_or(&[]);
        ends.extend(memchr::memchr_iter(b'\n', rest).map(|k| at + k));
        escapes |= memchr::memchr2(ESC, ESC | !LOW_7, rest).is_some();
        Lines { text, ends, escapes }
    }

    pub fn text(&self) -> &'t str {
        self.text
    }

    /// Whether the text has a byte that starts or ends an ANSI escape (ESC, or the 0x9B of the
    /// 8-bit CSI, which some other characters end in too): when not, it has no escapes to strip.
    pub fn may_have_escapes(&self) -> bool {
        self.escapes
    }

    /// How many lines (one more than the `\n`s).
    pub fn count(&self) -> usize {
        self.ends.len() + 1
    }

    /// The (0-based) number of the line that holds byte `at`.
    pub fn number_at(&self, at: usize) -> usize {
        self.ends.partition_point(|&e| e < at)
    }

    /// Where line `n` starts and ends (before its `\n`) in the text.
    pub fn bounds(&self, n: usize) -> (usize, usize) {
        let start = match n.checked_sub(1) {
            None => 0,
            Some(p) => self.ends.get(p).map_or(self.text.len(), |&e| e + 1),
        };
        (start, self.ends.get(n).copied().unwrap_or(self.text.len()))
    }

    /// Line `n` without its `\r` (empty past the last line).
    pub fn line(&self, n: usize) -> &'t str {
        let (start, end) = self.bounds(n);
        let raw = self.text.get(start..end).unwrap_or("");
        raw.strip_suffix('\r').unwrap_or(raw)
    }

    /// Every line, without its `\r`.
    pub fn all(&self) -> Vec<&'t str> {
        (0..self.count()).map(|n| self.line(n)).collect()
    }
}

/// Appends the position of every `\n` in `bytes` to `ends`, 64 bytes at a time, up to the last
/// whole 64; returns where it stopped, and whether those bytes hold an ESC or 0x9B.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn newlines_avx2(bytes: &[u8], ends: &mut Vec<usize>) -> (usize, bool) {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setzero_si256,
    };
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let low_7 = _mm256_set1_epi8(LOW_7 as i8);
    let esc = _mm256_set1_epi8(ESC as i8);
    let mut escapes = _mm256_setzero_si256();
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 64) {
        // SAFETY: `chunk` has 64 bytes, which the two unaligned loads read.
        let (a, b): (__m256i, __m256i) =
            unsafe { (_mm256_loadu_si256(chunk.as_ptr().cast()), _mm256_loadu_si256(chunk.as_ptr().add(32).cast())) };
        let is_esc = |v| _mm256_cmpeq_epi8(_mm256_and_si256(v, low_7), esc);
        escapes = _mm256_or_si256(escapes, _mm256_or_si256(is_esc(a), is_esc(b)));
        let low = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, newline)) as u32;
        let high = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, newline)) as u32;
        let mut mask = u64::from(low) | u64::from(high) << 32;
        while mask != 0 {
            ends.push(at + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
        at += 64;
    }
    (at, _mm256_movemask_epi8(escapes) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `str::split` says, for each way of finding the line ends.
    fn check(text: &str) {
        let expected: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        for vector in [true, false] {
            let lines = Lines::with(text, vector);
            assert_eq!(lines.all(), expected, "{text:?} vector={vector}");
            assert_eq!(lines.count(), expected.len());
            let mut start = 0;
            for (n, raw) in text.split('\n').enumerate() {
                assert_eq!(lines.bounds(n), (start, start + raw.len()), "{text:?} line {n}");
                for at in start..=start + raw.len() {
                    assert_eq!(lines.number_at(at), n, "{text:?} byte {at}");
                }
                start += raw.len() + 1;
            }
            assert_eq!(lines.line(expected.len()), "");
            assert_eq!(lines.may_have_escapes(), text.bytes().any(|b| b == 0x1b || b == 0x9b), "{text:?}");
        }
    }

    #[test]
    fn agrees_with_split_at_every_length_and_place() {
        for len in 0..100 {
            check(&"x".repeat(len));
            for at in 0..len {
                let mut text = vec![b'x'; len];
                text[at] = b'\n';
                if at + 1 < len {
                    text[at + 1] = b'\n';
                }
                check(std::str::from_utf8(&text).unwrap());
            }
        }
        check("a\r\nb\r\n\r\nc\n");
        for at in 0..140 {
            for escape in ["\x1b", "\u{9b}", "\u{11b}", "\u{9a}"] {
                let mut text = "y".repeat(at);
                text.push_str(escape);
                text.push_str(&"z\n".repeat(30));
                check(&text);
            }
        }
        check("\n\n\n");
        check(&"line of a log\n".repeat(40));
    }
}
