//! Crash-safe file primitives: an exclusive folder lock, atomic replace (temp file, fsync,
//! rename, fsync the folder), and durable appends. Used by the directory store and the
//! circuit-breaker state. Errors are plain `io::Error`s; callers add which file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// An exclusive lock on a folder (`.lock` inside it), released on drop. Advisory (`flock`):
/// it orders triage processes among themselves, which is what it is for.
pub struct FolderLock {
    file: File,
}

impl FolderLock {
    /// Block until the folder's lock is ours.
    pub fn acquire(folder: &Path) -> io::Result<FolderLock> {
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(folder.join(".lock"))?;
        file.lock()?;
        Ok(FolderLock { file })
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Replace `path` with `contents` atomically: readers see the old file or the new one, and a
/// crash leaves one of the two, never a mix.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").suffix(".partial").tempfile_in(folder)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_folder(folder)
}

/// Append `line` plus a newline to `path` in one write, and flush it to disk.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    append_lines(path, &[line])
}

/// Append each of `lines` plus a newline to `path` in one write (an `O_APPEND` write of a
/// regular file lands whole, after whatever was there), and flush it to disk.
pub fn append_lines<S: AsRef<str>>(path: &Path, lines: &[S]) -> io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let mut buf = Vec::with_capacity(lines.iter().map(|l| l.as_ref().len() + 1).sum());
    for line in lines {
        buf.extend_from_slice(line.as_ref().as_bytes());
        buf.push(b'\n');
    }
    file.write_all(&buf)?;
    file.sync_data()
}

/// Make a rename in `folder` durable. Some filesystems refuse fsync on directories; the
/// rename is still atomic there.
fn sync_folder(folder: &Path) -> io::Result<()> {
    match File::open(folder)?.sync_all() {
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
        other => other,
    }
}
