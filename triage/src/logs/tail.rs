//! The tail of a file: its last N lines (as GNU `tail -n N`) or last N bytes (`tail -c N`),
//! read in fixed-size blocks backwards from the end.
//!
//! Why: a job's stderr can be gigabytes, and the agent needs its last 50 lines. Reading from
//! the end makes the cost the tail's, not the file's: the bytes read are bounded by the bytes
//! returned plus one block (plus one more for each line that was shortened; see
//! [`TailOptions`] for the caps that keep even a 1 GiB single-line file cheap).
//!
//! Semantics, for a file that is not capped: the same bytes as GNU `tail -n N`. A final newline
//! ends the last line (it is not an extra empty line); a last line without a newline is still a
//! line; CR LF and invalid UTF-8 are kept byte for byte ([`Tail::text`] decodes lossily).
//!
//! Caps, and the choice of which end of a long line to keep: a line longer than
//! `max_line_bytes` (counting its newline) keeps its **end**, where an error line is most
//! informative (the exception after a long prefix, the last state of a progress bar). Finding
//! where a long line starts means reading it, so the scan reads at most `max_line_bytes` plus
//! one block of any line: if the line's start lies in the blocks already read, the cut is exact
//! and the scan goes on to earlier lines; otherwise the scan stops, that line is the first one
//! returned, and the cut is known only as a lower bound. The whole tail is also capped at
//! `max_bytes`, keeping its end. Every cut is recorded in [`Tail::cuts`], sets
//! [`Tail::truncated`], and shows in [`Tail::text`] as a marker like `[… 3145728 bytes cut …]`.
//!
//! A file being appended to while it is read gives a consistent tail: its length is taken once,
//! at the start, and nothing past it is read. A file that shrinks meanwhile is an error.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::backward::{Backward, Shrank, read_exact_or_shrank};

/// Size of the blocks read backwards from the end of the file.
pub(crate) const BLOCK_SIZE: usize = 64 * 1024;

/// Caps on what a tail returns; the defaults suit an agent's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailOptions {
    /// At most this many bytes are returned (the end is kept). Default 1 MiB. 0 acts as 1.
    pub max_bytes: u64,
    /// A line longer than this (newline included) keeps only its last `max_line_bytes` bytes.
    /// Default 64 KiB. 0 acts as 1. Not applied by [`tail_bytes`], which is byte-exact.
    pub max_line_bytes: usize,
}

impl Default for TailOptions {
    fn default() -> Self {
        TailOptions { max_bytes: 1024 * 1024, max_line_bytes: 64 * 1024 }
    }
}

/// Where bytes were left out of a [`Tail`]: always at the start of a line, whose end is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Index in [`Tail::bytes`] where the bytes were removed.
    pub at: usize,
    /// How many bytes were removed; a lower bound when `exact` is false.
    pub removed: u64,
    /// Whether `removed` is exact (the line's start was found) or a lower bound.
    pub exact: bool,
}

/// The tail of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The returned bytes, unchanged from the file except for the [`cuts`](Tail::cuts).
    pub bytes: Vec<u8>,
    /// How many lines `bytes` holds (a last line without a newline counts).
    pub lines: usize,
    /// The file's length when the read started; nothing past it was read.
    pub file_len: u64,
    /// File offset of the first returned byte.
    pub start_offset: u64,
    /// The tail was capped: its first line is cut, or a line longer than `max_line_bytes` was
    /// shortened. [`cuts`](Tail::cuts) says where.
    pub truncated: bool,
    /// Where bytes were left out, in order.
    pub cuts: Vec<Cut>,
}

impl Tail {
    /// The tail as text: invalid UTF-8 decoded lossily, each cut shown as a marker such as
    /// `[… 3145728 bytes cut …]` (or `[… at least 65536 bytes cut …]` when only a bound is known).
    pub fn text(&self) -> Cow<'_, str> {
        if self.cuts.is_empty() {
            return String::from_utf8_lossy(&self.bytes);
        }
        let mut out = String::with_capacity(self.bytes.len() + 40 * self.cuts.len());
        let mut from = 0;
        for cut in &self.cuts {
            out.push_str(&String::from_utf8_lossy(&self.bytes[from..cut.at]));
            let bound = if cut.exact { "" } else { "at least " };
            out.push_str(&format!("[… {bound}{} bytes cut …]", cut.removed));
            // A cut can split a UTF-8 character: skip its continuation bytes.
            from = cut.at;
            while from < self.bytes.len() && from < cut.at + 3 && self.bytes[from] & 0xC0 == 0x80 {
                from += 1;
            }
        }
        out.push_str(&String::from_utf8_lossy(&self.bytes[from..]));
        Cow::Owned(out)
    }
}

/// Why a tail could not be read. Each message names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    #[error(
        "cannot read the tail of {path}: no such file. Check the path; a job's stderr file \
         exists only once its attempt has started"
    )]
    NotFound { path: PathBuf },
    #[error(
        "cannot read the tail of {path}: permission denied. Run as a user who may read it, or \
         ask its owner to make it readable"
    )]
    PermissionDenied { path: PathBuf },
    #[error("cannot read the tail of {path}: it is a directory. Name the log file inside it")]
    IsDirectory { path: PathBuf },
    #[error(
        "cannot read the tail of {path}: it is not a regular file ({kind}), so it cannot be \
         read from the end. Copy it to a file first"
    )]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error(
        "cannot read the tail of {path}: it shrank while being read (it had {len} bytes); it was \
         truncated or rotated. Read it again"
    )]
    Shrank { path: PathBuf, len: u64 },
    #[error("cannot read the tail of {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The last `n` lines of the file at `path`, as GNU `tail -n n` prints them, within `opts`.
pub fn tail_lines(path: &Path, n: usize, opts: &TailOptions) -> Result<Tail, TailError> {
    let mut file = open(path)?;
    scan_lines(&mut file, n, opts, BLOCK_SIZE).map_err(|e| io_error(path, e))
}

/// The last `n` bytes of the file at `path`, as GNU `tail -c n` prints them, at most
/// `opts.max_bytes` of them (then the first byte kept is the start of a cut).
pub fn tail_bytes(path: &Path, n: u64, opts: &TailOptions) -> Result<Tail, TailError> {
    let mut file = open(path)?;
    scan_bytes(&mut file, n, opts).map_err(|e| io_error(path, e))
}

/// [`tail_lines`] over any seekable reader (errors name the file `<reader>`).
pub fn tail_lines_from<R: Read + Seek>(reader: R, n: usize, opts: &TailOptions) -> Result<Tail, TailError> {
    tail_lines_with_block(reader, n, opts, BLOCK_SIZE)
}

/// [`tail_lines_from`] with a chosen block size, so tests can put lines across block edges.
pub(crate) fn tail_lines_with_block<R: Read + Seek>(
    mut reader: R,
    n: usize,
    opts: &TailOptions,
    block: usize,
) -> Result<Tail, TailError> {
    scan_lines(&mut reader, n, opts, block).map_err(|e| io_error(Path::new("<reader>"), e))
}

/// [`tail_bytes`] over any seekable reader (errors name the file `<reader>`).
pub fn tail_bytes_from<R: Read + Seek>(mut reader: R, n: u64, opts: &TailOptions) -> Result<Tail, TailError> {
    scan_bytes(&mut reader, n, opts).map_err(|e| io_error(Path::new("<reader>"), e))
}

fn open(path: &Path) -> Result<File, TailError> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(TailError::IsDirectory { path: path.to_path_buf() });
    }
    if !kind.is_file() {
        let kind = "a device, pipe or socket";
        return Err(TailError::NotAFile { path: path.to_path_buf(), kind });
    }
    Ok(file)
}

fn io_error(path: &Path, source: io::Error) -> TailError {
    let path = path.to_path_buf();
    match source.kind() {
        io::ErrorKind::NotFound => TailError::NotFound { path },
        io::ErrorKind::PermissionDenied => TailError::PermissionDenied { path },
        io::ErrorKind::IsADirectory => TailError::IsDirectory { path },
        _ => match source.get_ref().and_then(|e| e.downcast_ref::<Shrank>()) {
            Some(Shrank(len)) => TailError::Shrank { path, len: *len },
            None => TailError::Io { path, source },
        },
    }
}

/// One returned line: file range `[start, end)`, whose first `cut` bytes are left out.
struct Piece {
    start: u64,
    end: u64,
    cut: Option<(u64, bool)>,
}

fn scan_lines<R: Read + Seek>(reader: &mut R, n: usize, opts: &TailOptions, block: usize) -> io::Result<Tail> {
    let len = reader.seek(SeekFrom::End(0))?;
    if n == 0 || len == 0 {
        return Ok(Tail { file_len: len, start_offset: len, ..Tail::default() });
    }
    let max_bytes = opts.max_bytes.max(1);
    let max_line = (opts.max_line_bytes.max(1) as u64).min(max_bytes);
    let mut back = Backward::new(reader, len, block);
    back.read_previous()?;
    let mut line_end = len;
    // `[.., scan)` is where the newline ending the previous line is looked for; a final
    // newline ends the last line and is not searched.
    let mut scan = if back.byte(len - 1) == Some(b'\n') { len - 1 } else { len };
    let mut pieces: Vec<Piece> = Vec::new();
    let mut kept: u64 = 0;
    loop {
        let limit = max_line.min(max_bytes - kept);
        if let Some(nl) = back.rfind_newline(scan) {
            let start = nl + 1;
            let piece = keep_end(start, line_end, limit, true);
            let budget_hit = piece.cut.is_some() && limit < max_line;
            kept += piece.end - piece.start;
            pieces.push(piece);
            line_end = start;
            scan = nl;
            if pieces.len() == n || budget_hit || kept >= max_bytes {
                break;
            }
            continue;
        }
        scan = back.low();
        if scan == 0 {
            pieces.push(keep_end(0, line_end, limit, true));
            break;
        }
        if line_end - scan > limit {
            // The line is longer than what may be kept, and its start has not been read:
            // stop rather than read the rest of it.
            pieces.push(keep_end(scan, line_end, limit, false));
            break;
        }
        back.read_previous()?;
    }
    Ok(assemble(&back, pieces, len))
}

/// The line `[start, end)` kept to at most `limit` bytes at its end. `exact`: `start` is the
/// line's true start (else only a bound).
fn keep_end(start: u64, end: u64, limit: u64, exact: bool) -> Piece {
    if end - start <= limit && exact {
        return Piece { start, end, cut: None };
    }
    let from = end - limit.min(end - start);
    Piece { start: from, end, cut: Some((from - start, exact)) }
}

fn assemble<R>(back: &Backward<'_, R>, mut pieces: Vec<Piece>, len: u64) -> Tail {
    pieces.reverse();
    let total: u64 = pieces.iter().map(|p| p.end - p.start).sum();
    let mut tail = Tail {
        bytes: Vec::with_capacity(usize::try_from(total).unwrap_or(0)),
        lines: pieces.len(),
        file_len: len,
        start_offset: pieces.first().map_or(len, |p| p.start),
        ..Tail::default()
    };
    for piece in &pieces {
        if let Some((removed, exact)) = piece.cut {
            tail.truncated = true;
            tail.cuts.push(Cut { at: tail.bytes.len(), removed, exact });
        }
        back.copy_range(piece.start, piece.end, &mut tail.bytes);
    }
    tail
}

fn scan_bytes<R: Read + Seek>(reader: &mut R, n: u64, opts: &TailOptions) -> io::Result<Tail> {
    let len = reader.seek(SeekFrom::End(0))?;
    let want = n.min(len);
    let keep = want.min(opts.max_bytes.max(1));
    let start = len - keep;
    let mut bytes = vec![0; usize::try_from(keep).map_err(io::Error::other)?];
    reader.seek(SeekFrom::Start(start))?;
    read_exact_or_shrank(reader, &mut bytes, len)?;
    let lines = bytes.iter().filter(|&&b| b == b'\n').count() + usize::from(bytes.last().is_some_and(|&b| b != b'\n'));
    let cuts = if keep < want { vec![Cut { at: 0, removed: want - keep, exact: true }] } else { Vec::new() };
    Ok(Tail { bytes, lines, file_len: len, start_offset: start, truncated: !cuts.is_empty(), cuts })
}

#[cfg(test)]
#[path = "tail_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "tail_io_tests.rs"]
mod io_tests;
