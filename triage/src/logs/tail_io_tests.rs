//! Tests of [`super`]'s I/O: bytes read on big inputs (the cost is the tail's), a file appended
//! to while read, a file that shrinks, and the errors for missing or unreadable files.

use std::fs;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::tests::{Rng, naive_tail};
use super::*;

/// A reader that counts the bytes it hands out.
struct Counting<R> {
    inner: R,
    read: u64,
}
impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}
impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[test]
fn bytes_read_follow_the_tail_not_the_file() {
    let mut data = Vec::with_capacity(64 << 20);
    let mut i = 0u64;
    while data.len() < 64 << 20 {
        data.extend_from_slice(
            format!("[rank{}] step {i} loss 0.{} lr 3e-4 {}\n", i % 8, i % 997, "x".repeat((i % 300) as usize))
                .as_bytes(),
        );
        i += 1;
    }
    let mut reader = Counting { inner: Cursor::new(&data), read: 0 };
    let tail = tail_lines_from(&mut reader, 50, &TailOptions::default()).unwrap();
    assert_eq!(tail.lines, 50);
    assert!(reader.read <= tail.bytes.len() as u64 + BLOCK_SIZE as u64, "read {}", reader.read);

    let one_line = vec![b'z'; 64 << 20];
    let mut reader = Counting { inner: Cursor::new(&one_line), read: 0 };
    let tail = tail_lines_from(&mut reader, 50, &TailOptions::default()).unwrap();
    assert!(tail.truncated);
    assert!(reader.read <= tail.bytes.len() as u64 + BLOCK_SIZE as u64, "read {}", reader.read);

    let mut reader = Counting { inner: Cursor::new(&data), read: 0 };
    let tail = tail_lines_from(&mut reader, 1_000_000, &TailOptions::default()).unwrap();
    assert_eq!(tail.bytes.len(), 1 << 20);
    assert!(reader.read <= tail.bytes.len() as u64 + BLOCK_SIZE as u64, "read {}", reader.read);
}

/// The most the appending writer adds to the file.
const MAX_GROWTH: usize = 4 << 20;

#[test]
fn file_appended_while_tailing_gives_a_consistent_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.log");
    fs::write(&path, b"").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (path, stop) = (path.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
            let mut rng = Rng(0x5EED_0003);
            let mut i = 0u64;
            let mut written = 0usize;
            // Bounded: an unbounded writer outruns the reader on a loaded machine (each check
            // reads the whole file) and once filled a disk with tens of gigabytes.
            while !stop.load(Ordering::Relaxed) && written < MAX_GROWTH {
                let line = format!("attempt output line {i} {}\n", "y".repeat(rng.below(200) as usize));
                // Write in two pieces so a reader can see half a line.
                let split = rng.below(line.len() as u64) as usize;
                file.write_all(&line.as_bytes()[..split]).unwrap();
                file.write_all(&line.as_bytes()[split..]).unwrap();
                written += line.len();
                i += 1;
            }
        })
    };
    let opts = TailOptions::default();
    for _ in 0..100 {
        let tail = tail_lines_with_block(fs::File::open(&path).unwrap(), 5, &opts, 256).unwrap();
        let now = fs::read(&path).unwrap();
        assert!(tail.file_len <= now.len() as u64);
        let prefix = &now[..tail.file_len as usize];
        assert_eq!(tail.bytes, naive_tail(prefix, 5));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn shrinking_file_is_an_error_not_garbage() {
    /// Claims a length it cannot deliver, as a file truncated after its length was taken.
    struct Liar(Cursor<Vec<u8>>);
    impl Read for Liar {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read(buf)
        }
    }
    impl Seek for Liar {
        fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
            match pos {
                SeekFrom::End(0) => Ok(1000),
                other => self.0.seek(other),
            }
        }
    }
    let err = tail_lines_from(Liar(Cursor::new(b"short\n".to_vec())), 3, &TailOptions::default()).unwrap_err();
    assert!(matches!(err, TailError::Shrank { len: 1000, .. }), "{err:?}");
    assert!(err.to_string().contains("shrank"), "{err}");
}

#[test]
fn errors_name_the_path_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.log");
    let err = tail_lines(&missing, 5, &TailOptions::default()).unwrap_err();
    assert!(matches!(err, TailError::NotFound { .. }));
    assert!(err.to_string().contains("nope.log") && err.to_string().contains("no such file"), "{err}");

    let err = tail_lines(dir.path(), 5, &TailOptions::default()).unwrap_err();
    assert!(matches!(err, TailError::IsDirectory { .. }), "{err:?}");
    assert!(err.to_string().contains("is a directory"));

    let err = tail_bytes(Path::new("/dev/null"), 5, &TailOptions::default()).unwrap_err();
    assert!(matches!(err, TailError::NotAFile { .. }), "{err:?}");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = dir.path().join("locked.log");
        fs::write(&locked, b"secret\n").unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        // root reads anything: only check where the permission really bites.
        if fs::read(&locked).is_err() {
            let err = tail_lines(&locked, 5, &TailOptions::default()).unwrap_err();
            assert!(matches!(err, TailError::PermissionDenied { .. }), "{err:?}");
            assert!(err.to_string().contains("permission denied"));
        }
    }
}
