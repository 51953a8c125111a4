//! Shared helpers for integration tests: fresh copies of the demo store, the real binary.
#![allow(dead_code)]

pub mod json_lines;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crate is in the workspace").to_path_buf()
}

/// A fresh copy of `fixtures/demo` in a temporary folder (removed on drop).
pub fn demo_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dst = tmp.path().join("store");
    copy_dir(&repo_root().join("fixtures/demo"), &dst);
    (tmp, dst)
}

pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("create dir");
    for entry in std::fs::read_dir(src).expect("read dir") {
        let entry = entry.expect("entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).expect("copy");
        }
    }
}

/// Every file under `dir` with its bytes, for byte-for-byte comparisons.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.push((p.strip_prefix(dir).expect("prefix").to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// Run the real `triage` binary with `args`, no inherited TRIAGE_* environment.
pub fn triage(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TRIAGE_BACKEND")
        .env_remove("TORC_API_URL")
        .env_remove("TRIAGE_CATALOG")
        .output()
        .expect("run triage")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
