//! Reading a file backwards, block by block, from a length taken once.
//!
//! Why: [`super::tail`] must find the last lines of a file without reading all of it. This
//! keeps the blocks read so far (nearest the end first), finds newlines in them, and copies
//! ranges out; nothing at or past the length given at the start is ever read, so a file being
//! appended to reads as the prefix it had when the tail began.

use std::io::{self, Read, Seek, SeekFrom};

/// The reader ended before the length taken at the start: the file shrank.
#[derive(Debug, thiserror::Error)]
#[error("the file shrank below {0} bytes while being read")]
pub(crate) struct Shrank(pub(crate) u64);

/// `read_exact`, with an early end of file reported as [`Shrank`] (`len`: the length expected).
pub(crate) fn read_exact_or_shrank<R: Read>(reader: &mut R, buf: &mut [u8], len: u64) -> io::Result<()> {
    match reader.read_exact(buf) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(io::Error::new(e.kind(), Shrank(len))),
        other => other,
    }
}

/// Blocks of a reader's first `len` bytes, read from the end towards the start.
pub(crate) struct Backward<'r, R> {
    reader: &'r mut R,
    len: u64,
    block: u64,
    /// Blocks read so far as (file offset, bytes), nearest the end first; together they cover
    /// `[low, len)` without gaps.
    blocks: Vec<(u64, Vec<u8>)>,
    low: u64,
}

impl<'r, R: Read + Seek> Backward<'r, R> {
    /// Nothing read yet; `len` is the file length taken once by the caller.
    pub(crate) fn new(reader: &'r mut R, len: u64, block: usize) -> Self {
        Backward { reader, len, block: block.max(1) as u64, blocks: Vec::new(), low: len }
    }

    /// Reads the block before the lowest offset read so far; does nothing at the start of file.
    pub(crate) fn read_previous(&mut self) -> io::Result<()> {
        if self.low == 0 {
            return Ok(());
        }
        let size = self.block.min(self.low);
        let start = self.low - size;
        let mut buf = vec![0; usize::try_from(size).map_err(io::Error::other)?];
        self.reader.seek(SeekFrom::Start(start))?;
        read_exact_or_shrank(self.reader, &mut buf, self.len)?;
        self.blocks.push((start, buf));
        self.low = start;
        Ok(())
    }
}

impl<R> Backward<'_, R> {
    /// The lowest file offset read so far (the file length before any read).
    pub(crate) fn low(&self) -> u64 {
        self.low
    }

    /// The byte at file offset `pos`, if it has been read.
    pub(crate) fn byte(&self, pos: u64) -> Option<u8> {
        let (start, buf) = self.blocks.get(self.containing(pos))?;
        buf.get(usize::try_from(pos - start).ok()?).copied()
    }

    /// Index of the block holding `pos` (blocks are in descending order of offset); past the
    /// last block when `pos` was not read.
    fn containing(&self, pos: u64) -> usize {
        self.blocks.partition_point(|(start, _)| *start > pos)
    }

    /// File offset of the last newline before `before`, among the bytes read so far.
    pub(crate) fn rfind_newline(&self, before: u64) -> Option<u64> {
        let first = self.containing(before.checked_sub(1)?);
        for (start, buf) in self.blocks.iter().skip(first) {
            let end = usize::try_from(before - start).map_or(buf.len(), |e| e.min(buf.len()));
            if let Some(i) = buf[..end].iter().rposition(|&b| b == b'\n') {
                return Some(start + i as u64);
            }
        }
        None
    }

    /// Appends the file's bytes `[from, to)` to `out`; the range must have been read.
    pub(crate) fn copy_range(&self, from: u64, to: u64, out: &mut Vec<u8>) {
        let last = self.containing(from).min(self.blocks.len());
        let through = if last < self.blocks.len() { last + 1 } else { last };
        for (start, buf) in self.blocks[..through].iter().rev() {
            let end = start + buf.len() as u64;
            if *start >= to {
                break;
            }
            if end <= from {
                continue;
            }
            let a = (from.max(*start) - start) as usize;
            let b = (to.min(end) - start) as usize;
            out.extend_from_slice(&buf[a..b]);
        }
    }
}
