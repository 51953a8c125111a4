//! Crash-safe file primitives: an exclusive folder lock, atomic replace (temp file, fsync,
//! rename, fsync the folder; the replaced file's mode, group and owner kept), the same for many
//! files flushed together ([`AtomicBatch`]), and durable appends. Taking a folder's lock clears
//! the temp files of writers killed mid-write. Used by the directory store, the circuit-breaker
//! state and the Slurm backend's ledger folder. Errors are plain `io::Error`s; callers add
//! which file.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt, fchown};
use std::path::Path;

/// An exclusive lock on a folder (`.lock` inside it), released on drop. Advisory (`flock`):
/// it orders triage processes among themselves, which is what it is for.
pub struct FolderLock {
    file: File,
}

impl FolderLock {
    /// Block until the folder's lock is ours, then remove the temp files of [`write_atomic`]
    /// that a writer killed mid-write left behind (see [`remove_stale_partials`]).
    pub fn acquire(folder: &Path) -> io::Result<FolderLock> {
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(folder.join(".lock"))?;
        file.lock()?;
        remove_stale_partials(folder);
        Ok(FolderLock { file })
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Remove the `.tmp-*.partial` files of [`write_atomic`] in `folder`; returns how many.
///
/// Call it only while holding the folder's lock: every write into a locked folder is made
/// under its lock, so a partial file seen by the lock holder belongs to a writer that died
/// (the lock holder's own are all renamed or removed by the time it returns). Best effort:
/// a file that cannot be removed is logged and left; it never fails the caller.
pub fn remove_stale_partials(folder: &Path) -> usize {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!("cannot list {} to remove stale temp files: {e}", folder.display());
            return 0;
        }
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Regular files only: `file_type` does not follow symlinks.
        if !is_partial_name(name) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => {
                removed += 1;
                tracing::info!("removed {}, left by a write that was interrupted", entry.path().display());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot remove the stale temp file {}: {e}", entry.path().display()),
        }
    }
    removed
}

/// The names [`write_atomic`] gives its temp files.
fn is_partial_name(name: &str) -> bool {
    name.len() > TMP_PREFIX.len() + TMP_SUFFIX.len() && name.starts_with(TMP_PREFIX) && name.ends_with(TMP_SUFFIX)
}

const TMP_PREFIX: &str = ".tmp-";
const TMP_SUFFIX: &str = ".partial";

/// Replace `path` with `contents` atomically: readers see the old file or the new one, and a
/// crash leaves one of the two, never a mix.
///
/// The new file keeps the old one's permission bits and group (and owner, when the process
/// may give files away, i.e. runs as root), so replacing a group-shared `workflow.json`
/// (mode 664, group `team`) does not lock the group out. A file that did not exist gets
/// what `File::create` gives: 0666 less the umask. A group the process is not a member of
/// cannot be kept; the file then has the process's group, as any file it creates would.
///
/// A writer killed mid-write leaves its `.tmp-*.partial` file; the next [`FolderLock`]
/// holder removes it.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    replace_durably(temp_beside(path, contents)?, path)
}

/// Flush `tmp`, rename it to `path`, flush the folder.
fn replace_durably(tmp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_folder(folder_of(path))
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// A temp file beside `path` holding `contents`, with the mode, group and owner of the file
/// it will replace (see [`write_atomic`]); not yet flushed to disk.
fn temp_beside(path: &Path, contents: &[u8]) -> io::Result<tempfile::NamedTempFile> {
    let old = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    // An existing file's mode is set below, from 0600 (never wider than the old file in
    // between); a new file is created as `File::create` would, the umask applying.
    let create_mode = if old.is_some() { 0o600 } else { 0o666 };
    let mut tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .suffix(TMP_SUFFIX)
        .permissions(Permissions::from_mode(create_mode))
        .tempfile_in(folder_of(path))?;
    tmp.write_all(contents)?;
    if let Some(old) = &old {
        keep_owner_and_mode(tmp.as_file(), old)?;
    }
    Ok(tmp)
}

/// Many files replaced as [`write_atomic`] replaces one, made durable together.
///
/// [`write_atomic`] waits for the disk twice per file (the file, then its folder): a few
/// milliseconds each on a busy disk, which for thousands of small files (the log copies of a
/// batch of Slurm moves) is most of the time the batch takes. Here each file is written to its
/// temp file when staged (only one file's contents is held at a time), and
/// [`AtomicBatch::commit`] flushes all of them at once, from several threads (a journaling
/// filesystem commits the flushes that wait together in one go), then renames each into place
/// and flushes each folder once. Until `commit` returns, no target is replaced; a batch
/// dropped without `commit` removes its temp files. Each file is still replaced atomically:
/// a crash leaves the old file or the new one, and a file `commit` reported is on disk.
#[derive(Default)]
pub struct AtomicBatch {
    staged: Vec<(tempfile::TempPath, std::path::PathBuf)>,
}

/// How many flushes [`AtomicBatch::commit`] has waiting at once.
const FLUSHES_AT_ONCE: usize = 16;

impl AtomicBatch {
    pub fn new() -> AtomicBatch {
        AtomicBatch::default()
    }

    /// Write `contents` to a temp file beside `path`, to replace `path` on [`AtomicBatch::commit`].
    /// The temp file is closed (a batch of thousands holds no descriptors open).
    pub fn stage(&mut self, path: &Path, contents: &[u8]) -> io::Result<()> {
        let tmp = temp_beside(path, contents)?;
        self.staged.push((tmp.into_temp_path(), path.to_path_buf()));
        Ok(())
    }

    /// How many files are staged.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Flush every staged file to disk, rename each into place, flush each folder once.
    pub fn commit(self) -> io::Result<()> {
        let temps: Vec<&Path> = self.staged.iter().map(|(t, _)| t.as_ref()).collect();
        flush_files(&temps)?;
        let mut folders = std::collections::BTreeSet::new();
        for (tmp, path) in self.staged {
            folders.insert(folder_of(&path).to_path_buf());
            tmp.persist(&path).map_err(|e| e.error)?;
        }
        folders.iter().try_for_each(|f| sync_folder(f))
    }
}

/// `fsync` each file, at most [`FLUSHES_AT_ONCE`] at a time.
fn flush_files(paths: &[&Path]) -> io::Result<()> {
    let flush = |path: &Path| -> io::Result<()> {
        // Any descriptor of the file flushes it; a temp file that took the mode of the file it
        // replaces may not be readable, and is then opened for writing.
        let file = match File::open(path) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => OpenOptions::new().write(true).open(path)?,
            other => other?,
        };
        file.sync_all()
    };
    if paths.len() <= 1 {
        return paths.iter().try_for_each(|p| flush(p));
    }
    let per_thread = paths.len().div_ceil(FLUSHES_AT_ONCE);
    std::thread::scope(|scope| {
        let threads: Vec<_> = paths
            .chunks(per_thread)
            .map(|chunk| scope.spawn(move || chunk.iter().try_for_each(|p| flush(p))))
            .collect();
        threads
            .into_iter()
            .try_for_each(|t| t.join().unwrap_or_else(|_| Err(io::Error::other("a thread flushing files panicked"))))
    })
}

/// [`write_atomic`] for a file only this user may read or write (mode 0600 whatever the umask
/// or the old file's mode): what triage later runs or trusts, like a kept batch script.
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    // Created 0600: the umask can only narrow it.
    let mut tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .suffix(TMP_SUFFIX)
        .permissions(Permissions::from_mode(0o600))
        .tempfile_in(folder_of(path))?;
    tmp.write_all(contents)?;
    replace_durably(tmp, path)
}

/// Give `file` the owner (where allowed), group (where allowed) and permission bits of
/// `old`. Ownership first: changing it clears the set-user/group-ID bits.
fn keep_owner_and_mode(file: &File, old: &std::fs::Metadata) -> io::Result<()> {
    let now = file.metadata()?;
    let (uid, gid) = (old.uid(), old.gid());
    if uid != now.uid() || gid != now.gid() {
        // Giving a file away needs root: without it, keep at least the group.
        let kept = match fchown(file, Some(uid), Some(gid)) {
            Err(e) if uid != now.uid() && is_not_permitted(&e) => fchown(file, None, Some(gid)),
            other => other,
        };
        match kept {
            Ok(()) => {}
            Err(e) if is_not_permitted(&e) => {
                tracing::warn!("cannot give the new file the group {gid} of the one it replaces: {e}")
            }
            Err(e) => return Err(e),
        }
    }
    file.set_permissions(Permissions::from_mode(old.permissions().mode() & 0o7777))
}

fn is_not_permitted(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_batch_replaces_nothing_before_commit_and_everything_after() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(&b).unwrap();
        let old = a.join("kept.txt");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::write(&old, b"old").unwrap();
        std::fs::set_permissions(&old, Permissions::from_mode(0o640)).unwrap();
        let mut batch = AtomicBatch::new();
        // More files than flushes at once, in two folders, one replacing an existing file.
        let paths: Vec<_> = (0..40).map(|i| [&a, &b][i % 2].join(format!("f{i}.txt"))).collect();
        for (i, p) in paths.iter().enumerate() {
            batch.stage(p, format!("file {i}").as_bytes()).unwrap();
        }
        batch.stage(&old, b"new").unwrap();
        assert_eq!(batch.len(), 41);
        assert!(paths.iter().all(|p| !p.exists()), "nothing is in place before commit");
        assert_eq!(std::fs::read(&old).unwrap(), b"old");
        batch.commit().unwrap();
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(std::fs::read_to_string(p).unwrap(), format!("file {i}"));
        }
        assert_eq!(std::fs::read(&old).unwrap(), b"new");
        assert_eq!(mode(&old), 0o640);
        let partials = |d: &Path| {
            std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .filter(|e| is_partial_name(&e.file_name().to_string_lossy()))
                .count()
        };
        assert_eq!(partials(&a) + partials(&b), 0, "no temp file is left");
        // A batch dropped without commit leaves no temp file and replaces nothing.
        let mut dropped = AtomicBatch::new();
        dropped.stage(&old, b"never").unwrap();
        assert_eq!(partials(&a), 1);
        drop(dropped);
        assert_eq!(partials(&a), 0);
        assert_eq!(std::fs::read(&old).unwrap(), b"new");
        assert!(AtomicBatch::new().commit().is_ok());
    }

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        let tmp = tempfile::tempdir().unwrap();
        for want in [0o664, 0o640, 0o600, 0o444] {
            let path = tmp.path().join(format!("workflow-{want:o}.json"));
            std::fs::write(&path, b"old").unwrap();
            std::fs::set_permissions(&path, Permissions::from_mode(want)).unwrap();
            write_atomic(&path, b"new").unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"new");
            assert_eq!(mode(&path), want, "mode {:o} became {:o}", want, mode(&path));
        }
    }

    #[test]
    fn a_replaced_file_keeps_its_group_and_as_root_its_owner() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("workflow.json");
        std::fs::write(&path, b"old").unwrap();
        let mine = std::fs::metadata(&path).unwrap();
        let (uid, gid) = if mine.uid() == 0 {
            (4242, 4343) // root may give a file to anyone
        } else {
            // Without root: another group of ours, if we have one.
            let out = std::process::Command::new("id").arg("-G").output().unwrap();
            let groups: Vec<u32> =
                String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|g| g.parse().ok()).collect();
            let Some(other) = groups.into_iter().find(|g| *g != mine.gid()) else {
                eprintln!("skipped: not root and in one group only");
                return;
            };
            (mine.uid(), other)
        };
        fchown(File::open(&path).unwrap(), Some(uid), Some(gid)).unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o664)).unwrap();
        write_atomic(&path, b"new").unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!((after.uid(), after.gid(), mode(&path)), (uid, gid, 0o664));
    }

    #[test]
    fn a_new_file_gets_what_file_create_gives() {
        let tmp = tempfile::tempdir().unwrap();
        let reference = tmp.path().join("reference");
        File::create(&reference).unwrap();
        let path = tmp.path().join("new.json");
        write_atomic(&path, b"{}").unwrap();
        assert_eq!(mode(&path), mode(&reference));
        // That is 0666 less the umask (0644 under the usual 022).
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(umask) = status.lines().find_map(|l| l.strip_prefix("Umask:")) {
            let umask = u32::from_str_radix(umask.trim(), 8).unwrap();
            assert_eq!(mode(&path), 0o666 & !umask);
        }
    }

    #[test]
    fn taking_the_lock_removes_stale_partials_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for f in [".tmp-abc.partial", ".tmp-Xy12zQ.partial", "notes.partial", ".tmp-abc.json", ".tmp-.partial"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        std::fs::create_dir(dir.join(".tmp-dir.partial")).unwrap();
        let _lock = FolderLock::acquire(dir).unwrap();
        let mut left: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, [".lock", ".tmp-.partial", ".tmp-abc.json", ".tmp-dir.partial", "notes.partial"]);
    }
}
