//! Reading and writing one workflow folder of a directory store (format v1, DESIGN.md).
//!
//! `STORE/workflows/<id>/workflow.json` holds the workflow; `events.jsonl` beside it is the
//! append-only audit log; log files are named by the attempts, relative to the folder.

use std::path::{Component, Path, PathBuf};

use crate::backend::{AuditEvent, BackendError};
use crate::model::Workflow;

use crate::fsutil::{FolderLock, append_line, write_atomic};

/// The paths of one workflow folder.
#[derive(Debug, Clone)]
pub(super) struct Folder {
    pub dir: PathBuf,
}

impl Folder {
    pub fn workflow_file(&self) -> PathBuf {
        self.dir.join("workflow.json")
    }

    pub fn events_file(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// Parse and check `workflow.json`; errors name the file, line and column, and the fix.
    pub fn load(&self, expected_id: i64) -> Result<Workflow, BackendError> {
        let path = self.workflow_file();
        let text = std::fs::read(&path).map_err(|e| BackendError::io(&path, e))?;
        parse_workflow(&path, &text, expected_id)
    }

    /// Lock the folder, load, let `change` modify the workflow, then write it atomically and
    /// append `events` (only when `change` says something changed).
    pub fn update<T>(
        &self,
        expected_id: i64,
        change: impl FnOnce(&mut Workflow) -> Result<(T, Vec<AuditEvent>), BackendError>,
    ) -> Result<T, BackendError> {
        let _lock = self.lock()?;
        let mut wf = self.load(expected_id)?;
        let (out, events) = change(&mut wf)?;
        if !events.is_empty() {
            let mut json = serde_json::to_vec_pretty(&wf).map_err(|e| BackendError::Internal(e.to_string()))?;
            json.push(b'\n');
            let file = self.workflow_file();
            write_atomic(&file, &json).map_err(|e| BackendError::io(&file, e))?;
            self.append_events(&events)?;
        }
        Ok(out)
    }

    /// Append events to the audit log. Callers hold the folder lock when it matters.
    pub fn append_events(&self, events: &[AuditEvent]) -> Result<(), BackendError> {
        let path = self.events_file();
        for ev in events {
            let line = serde_json::to_string(ev).map_err(|e| BackendError::Internal(e.to_string()))?;
            append_line(&path, &line).map_err(|e| BackendError::io(&path, e))?;
        }
        Ok(())
    }

    pub fn lock(&self) -> Result<FolderLock, BackendError> {
        FolderLock::acquire(&self.dir).map_err(|e| BackendError::io(self.dir.join(".lock"), e))
    }

    /// Resolve a log path recorded in an attempt, refusing any that leaves the folder (by
    /// `..`, an absolute path, or a symlink pointing outside).
    pub fn resolve_log(&self, job_id: i64, log: &str) -> Result<PathBuf, BackendError> {
        let escapes = || BackendError::PathEscapes { job_id, log: log.to_string(), folder: self.dir.clone() };
        let rel = Path::new(log);
        let mut depth = 0usize;
        for c in rel.components() {
            match c {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir if depth > 0 => depth -= 1,
                _ => return Err(escapes()),
            }
        }
        let full = self.dir.join(rel);
        if let (Ok(real), Ok(root)) = (full.canonicalize(), self.dir.canonicalize())
            && !real.starts_with(&root)
        {
            return Err(escapes());
        }
        Ok(full)
    }
}

/// Parse `workflow.json` bytes; `expected_id` is the folder's name.
pub(super) fn parse_workflow(path: &Path, text: &[u8], expected_id: i64) -> Result<Workflow, BackendError> {
    let wf: Workflow = serde_json::from_slice(text).map_err(|e| BackendError::Malformed {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line ").next().unwrap_or_default().to_string(),
    })?;
    let mut problems = wf.check();
    if wf.id != expected_id {
        problems.insert(
            0,
            format!("`id` is {}, but the file is in the folder of workflow {expected_id}; the two must agree", wf.id),
        );
    }
    if problems.is_empty() { Ok(wf) } else { Err(BackendError::Invalid { path: path.to_path_buf(), problems }) }
}
