//! Tests of [`super`]: byte-for-byte agreement with GNU `tail` (run as a real process) and
//! the caps. The I/O side (bytes read, a growing file, errors) is in `tail_io_tests.rs`.

use std::fs;
use std::io::Cursor;
use std::path::Path;
use std::process::Command;

use super::*;

const UNCAPPED: TailOptions = TailOptions { max_bytes: u64::MAX, max_line_bytes: usize::MAX };

/// xorshift64*: a small deterministic generator, so a failing case can be replayed.
pub(super) struct Rng(pub(super) u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// A file of random lines: random lengths, empty lines, CR LF, invalid UTF-8, with or
/// without a final newline.
fn random_file(rng: &mut Rng) -> Vec<u8> {
    const ALPHABET: &[u8] = b"abcdefghij KLMNOP0123456789:/._-\t\xff\xc3\xa9\xe2\x80";
    let lines = rng.below(40);
    let max_len = [0, 3, 20, 150, 700][rng.below(5) as usize];
    let mut data = Vec::new();
    for _ in 0..lines {
        for _ in 0..rng.below(max_len + 1) {
            data.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
        }
        if rng.below(4) == 0 {
            data.push(b'\r');
        }
        data.push(b'\n');
    }
    if rng.below(2) == 0 {
        for _ in 0..rng.below(max_len + 2) {
            data.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
        }
    }
    data
}

fn gnu_tail(args: &[&str], path: &Path) -> Vec<u8> {
    let out = Command::new("tail").args(args).arg(path).output().expect("GNU tail runs");
    assert!(out.status.success(), "tail {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The last `n` lines of `data`, the slow and obvious way.
pub(super) fn naive_tail(data: &[u8], n: usize) -> &[u8] {
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let mut start = body.len();
    for _ in 0..n {
        match body[..start].iter().rposition(|&b| b == b'\n') {
            Some(i) => start = i,
            None => return data,
        }
    }
    if n == 0 { &data[data.len()..] } else { &data[start + 1..] }
}

#[test]
fn lines_match_gnu_tail_on_random_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5EED_0001);
    for case in 0..150 {
        let data = random_file(&mut rng);
        let path = dir.path().join(format!("case{case}.log"));
        fs::write(&path, &data).unwrap();
        let total_lines = data.split(|&b| b == b'\n').count() - usize::from(data.ends_with(b"\n") || data.is_empty());
        for n in [0, 1, 2, 5, 17, total_lines, total_lines + 3] {
            let expected = gnu_tail(&["-n", &n.to_string()], &path);
            assert_eq!(naive_tail(&data, n), &expected[..], "reference disagrees with GNU, case {case} n {n}");
            for block in [1, 2, 3, 7, 64, 4096] {
                let tail = tail_lines_with_block(Cursor::new(&data), n, &UNCAPPED, block).unwrap();
                assert_eq!(tail.bytes, expected, "case {case} n {n} block {block}");
                assert!(!tail.truncated && tail.cuts.is_empty());
                assert_eq!(tail.lines, n.min(total_lines), "case {case} n {n} block {block}");
                assert_eq!(tail.file_len, data.len() as u64);
                assert_eq!(tail.start_offset, (data.len() - expected.len()) as u64);
            }
            assert_eq!(tail_lines(&path, n, &UNCAPPED).unwrap().bytes, expected, "file, case {case} n {n}");
        }
    }
}

#[test]
fn bytes_match_gnu_tail_c() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5EED_0002);
    for case in 0..40 {
        let data = random_file(&mut rng);
        let path = dir.path().join(format!("case{case}.log"));
        fs::write(&path, &data).unwrap();
        for n in [0, 1, 2, 10, 333, data.len() as u64, data.len() as u64 + 10] {
            let expected = gnu_tail(&["-c", &n.to_string()], &path);
            let tail = tail_bytes(&path, n, &UNCAPPED).unwrap();
            assert_eq!(tail.bytes, expected, "case {case} n {n}");
            assert!(!tail.truncated);
            let lines = expected.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(tail.lines, lines + usize::from(!expected.is_empty() && !expected.ends_with(b"\n")));
        }
    }
}

#[test]
fn small_cases() {
    let t = |data: &[u8], n| tail_lines_from(Cursor::new(data), n, &TailOptions::default()).unwrap();
    assert_eq!(t(b"", 5).bytes, b"");
    assert_eq!(t(b"", 5).lines, 0);
    assert_eq!(t(b"a\nb\n", 0).bytes, b"");
    assert_eq!(t(b"\n", 1).bytes, b"\n");
    assert_eq!(t(b"\n\n\n", 2).bytes, b"\n\n");
    assert_eq!(t(b"a\nb", 1).bytes, b"b");
    assert_eq!(t(b"a\r\nb\r\n", 1).bytes, b"b\r\n");
    assert_eq!(t(b"a\nb\n", 9).bytes, b"a\nb\n");
    let bad = t(b"ok\n\xff\xfeend\n", 1);
    assert_eq!(bad.bytes, b"\xff\xfeend\n");
    assert_eq!(bad.text(), "\u{fffd}\u{fffd}end\n");
    let bytes = tail_bytes_from(Cursor::new(b"hello"), 3, &TailOptions::default()).unwrap();
    assert_eq!((bytes.bytes.as_slice(), bytes.start_offset, bytes.lines), (&b"llo"[..], 2, 1));
}

#[test]
fn five_megabyte_single_line_is_capped_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one-line.log");
    let mut data: Vec<u8> = (0..5_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    data.extend_from_slice(b" RuntimeError: the end\n");
    fs::write(&path, &data).unwrap();
    let opts = TailOptions::default();
    let tail = tail_lines(&path, 50, &opts).unwrap();
    assert!(tail.truncated);
    assert_eq!(tail.lines, 1);
    assert_eq!(tail.bytes.len(), opts.max_line_bytes);
    assert!(tail.bytes.ends_with(b"RuntimeError: the end\n"));
    assert_eq!(&tail.bytes[..], &data[data.len() - opts.max_line_bytes..]);
    assert_eq!(tail.start_offset, (data.len() - opts.max_line_bytes) as u64);
    let cut = tail.cuts[0];
    assert_eq!((cut.at, cut.exact), (0, false));
    assert!(cut.removed > 0 && cut.removed <= tail.start_offset);
    assert!(tail.text().starts_with(&format!("[… at least {} bytes cut …]", cut.removed)));
    // Small enough to find the line start within a block: the cut is exact.
    let whole = tail_lines_with_block(Cursor::new(&data), 1, &opts, 8 << 20).unwrap();
    assert_eq!(whole.cuts, vec![Cut { at: 0, removed: (data.len() - opts.max_line_bytes) as u64, exact: true }]);
    assert!(whole.text().starts_with(&format!("[… {} bytes cut …]", data.len() - opts.max_line_bytes)));
}

#[test]
fn long_line_in_the_middle() {
    let mut data = b"a\n".to_vec();
    data.extend(std::iter::repeat_n(b'X', 100));
    data.extend_from_slice(b"\nb\nc\n");
    let opts = TailOptions { max_bytes: 1 << 20, max_line_bytes: 10 };
    // Everything in one block: the long line's start is known, the cut is exact, the scan goes on.
    let tail = tail_lines_with_block(Cursor::new(&data), 10, &opts, 4096).unwrap();
    assert_eq!(tail.bytes, b"a\nXXXXXXXXX\nb\nc\n");
    assert_eq!(tail.cuts, vec![Cut { at: 2, removed: 91, exact: true }]);
    assert_eq!((tail.lines, tail.start_offset), (4, 0));
    assert_eq!(tail.text(), "a\n[… 91 bytes cut …]XXXXXXXXX\nb\nc\n");
    // Small blocks: the start is not read, the scan stops at the long line.
    let tail = tail_lines_with_block(Cursor::new(&data), 10, &opts, 64).unwrap();
    assert_eq!(tail.bytes, b"XXXXXXXXX\nb\nc\n");
    assert_eq!(tail.lines, 3);
    assert_eq!(tail.cuts.len(), 1);
    assert!(!tail.cuts[0].exact && tail.cuts[0].removed >= 1);
}

#[test]
fn max_bytes_keeps_the_end() {
    let data: Vec<u8> = (0..1000).flat_map(|i| format!("line number {i}\n").into_bytes()).collect();
    let opts = TailOptions { max_bytes: 100, max_line_bytes: 64 * 1024 };
    for block in [7, 64, 4096] {
        let tail = tail_lines_with_block(Cursor::new(&data), 50, &opts, block).unwrap();
        assert_eq!(tail.bytes, &data[data.len() - 100..], "block {block}");
        assert!(tail.truncated);
        assert_eq!(tail.cuts.len(), 1);
        assert_eq!(tail.cuts[0].at, 0);
        assert_eq!(tail.lines, 7);
        let bytes = tail_bytes_from(Cursor::new(&data), 500, &opts).unwrap();
        assert_eq!(bytes.bytes, &data[data.len() - 100..]);
        assert_eq!(bytes.cuts, vec![Cut { at: 0, removed: 400, exact: true }]);
    }
}
