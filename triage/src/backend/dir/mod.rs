//! The directory store backend (`dir:PATH`): workflows as JSON files, no server needed.
//!
//! Layout and format v1 are a contract (DESIGN.md). Reads take no lock (writes replace files
//! atomically, so a reader always sees a whole file); every change takes the folder's
//! exclusive lock, re-reads, checks the guard, writes, and appends to `events.jsonl`, so two
//! processes never lose each other's changes and a job is never moved twice.

mod moves;
mod store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;

use super::{
    AuditEvent, BackendError, Guard, JobBackend, JobPage, LogFile, LogStream, MoveOutcome, PageRequest, ResourceChange,
    WorkflowInfo,
};
use crate::model::{Job, JobStatus, Workflow};
use store::Folder;

/// A directory store rooted at a path.
#[derive(Debug, Clone)]
pub struct DirBackend {
    root: PathBuf,
    cache: Arc<Mutex<HashMap<i64, Cached>>>,
}

/// A parsed workflow with the file identity it was parsed from.
#[derive(Debug, Clone)]
struct Cached {
    stamp: (u64, Option<SystemTime>, u64),
    workflow: Arc<Workflow>,
}

impl DirBackend {
    /// Open the store at `root`; it must exist and contain a `workflows` folder.
    pub fn open(root: impl AsRef<Path>) -> Result<DirBackend, BackendError> {
        let root = root.as_ref().to_path_buf();
        let workflows = root.join("workflows");
        if !root.is_dir() {
            return Err(BackendError::StoreMissing { path: root, why: "the folder does not exist".into() });
        }
        if !workflows.is_dir() {
            return Err(BackendError::StoreMissing {
                path: root,
                why: "it has no `workflows` folder (format v1: STORE/workflows/<id>/workflow.json)".into(),
            });
        }
        Ok(DirBackend { root, cache: Arc::default() })
    }

    /// The store's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Ids of the workflows in the store, sorted.
    pub fn workflow_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = std::fs::read_dir(self.root.join("workflows"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        ids.sort_unstable();
        ids
    }

    fn folder(&self, workflow_id: i64) -> Result<Folder, BackendError> {
        let dir = self.root.join("workflows").join(workflow_id.to_string());
        if dir.join("workflow.json").is_file() {
            return Ok(Folder { dir });
        }
        let ids = self.workflow_ids();
        Err(BackendError::WorkflowNotFound {
            backend: self.describe(),
            workflow_id,
            hint: if ids.is_empty() {
                "there are none".into()
            } else {
                format!("found: {}", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
            },
        })
    }

    /// The workflow, parsed once per version of the file.
    fn load(&self, workflow_id: i64) -> Result<Arc<Workflow>, BackendError> {
        let folder = self.folder(workflow_id)?;
        let path = folder.workflow_file();
        let meta = std::fs::metadata(&path).map_err(|e| BackendError::io(&path, e))?;
        let stamp = (meta.len(), meta.modified().ok(), inode(&meta));
        if let Ok(cache) = self.cache.lock()
            && let Some(c) = cache.get(&workflow_id)
            && c.stamp == stamp
        {
            return Ok(c.workflow.clone());
        }
        let workflow = Arc::new(folder.load(workflow_id)?);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(workflow_id, Cached { stamp, workflow: workflow.clone() });
        }
        Ok(workflow)
    }

    fn guarded_move(
        &self,
        workflow_id: i64,
        job_id: i64,
        audit: &AuditEvent,
        apply: impl FnOnce(&mut Workflow) -> Result<MoveOutcome, BackendError>,
    ) -> Result<MoveOutcome, BackendError> {
        let folder = self.folder(workflow_id)?;
        folder.update(workflow_id, |wf| {
            let before = wf.job(job_id).map(|j| (j.status, j.attempt_id, j.resources.clone()));
            let outcome = apply(wf)?;
            let mut events = Vec::new();
            if let (MoveOutcome::Moved { status, attempt_id, canceled }, Some((from, from_attempt, res))) =
                (&outcome, before)
            {
                let mut ev = audit.clone();
                ev.job_id = Some(job_id);
                let after = wf.job(job_id).map(|j| j.resources.clone());
                // The caller's details (who proposed, validation) plus what changed.
                let mut details = match std::mem::take(&mut ev.details) {
                    serde_json::Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                details.insert(
                    "from".into(),
                    serde_json::json!({"status": from, "attempt_id": from_attempt, "resources": res}),
                );
                details.insert(
                    "to".into(),
                    serde_json::json!({"status": status, "attempt_id": attempt_id, "resources": after}),
                );
                details.insert("canceled".into(), serde_json::json!(canceled));
                ev.details = serde_json::Value::Object(details);
                events.push(ev);
                for c in canceled {
                    events.push(AuditEvent::now(
                        audit.who.clone(),
                        "cancel",
                        Some(*c),
                        format!("upstream job {job_id} failed"),
                    ));
                }
            }
            Ok((outcome, events))
        })
    }
}

fn known_attempts(job: &Job) -> String {
    if job.attempts.is_empty() {
        return "none".into();
    }
    job.attempts.iter().map(|a| a.attempt_id.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// Run blocking file work off the async runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(BackendError::Internal(format!("store task failed: {e}"))))
}

#[async_trait]
impl JobBackend for DirBackend {
    fn describe(&self) -> String {
        format!("dir:{}", self.root.display())
    }

    // Reads are short (a cached parse, one tail of one file) and run in place: handing each to
    // the blocking pool costs more than the read. Moves, which may wait for the folder lock,
    // go to the blocking pool.

    async fn workflow(&self, workflow_id: i64) -> Result<WorkflowInfo, BackendError> {
        let wf = self.load(workflow_id)?;
        Ok(WorkflowInfo {
            id: wf.id,
            name: wf.name.clone(),
            use_pending_failed: wf.use_pending_failed,
            run_id: wf.run_id,
        })
    }

    async fn list_jobs(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        page: PageRequest,
    ) -> Result<JobPage, BackendError> {
        let this = self.clone();
        let wf = blocking(move || this.load(workflow_id)).await?;
        let mut matching: Vec<&Job> = wf.jobs.iter().filter(|j| status.is_none_or(|s| j.status == s)).collect();
        matching.sort_by_key(|j| j.id);
        let total = matching.len() as u64;
        let start = page.offset.min(total) as usize;
        let end = page.offset.saturating_add(page.limit.max(1)).min(total) as usize;
        Ok(JobPage {
            jobs: matching[start..end].iter().map(|j| (*j).clone()).collect(),
            total,
            next_offset: ((end as u64) < total).then_some(end as u64),
        })
    }

    async fn job(&self, workflow_id: i64, job_id: i64) -> Result<Job, BackendError> {
        let wf = self.load(workflow_id)?;
        wf.job(job_id).cloned().ok_or(BackendError::JobNotFound { workflow_id, job_id })
    }

    async fn log_file(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
    ) -> Result<LogFile, BackendError> {
        let wf = self.load(workflow_id)?;
        let job = wf.job(job_id).ok_or(BackendError::JobNotFound { workflow_id, job_id })?;
        let record = match attempt {
            Some(n) => job.attempt(n),
            None => job.last_attempt(),
        }
        .ok_or_else(|| BackendError::AttemptNotFound {
            job_id,
            attempt: attempt.unwrap_or(job.attempt_id),
            known: known_attempts(job),
        })?;
        let rel = match stream {
            LogStream::Stderr => record.stderr.as_deref(),
            LogStream::Stdout => record.stdout.as_deref(),
        }
        .ok_or_else(|| BackendError::LogMissing {
            job_id,
            attempt: record.attempt_id,
            stream: stream.as_str(),
            why: format!("the attempt record has no `{}` path", stream.as_str()),
        })?;
        let path = self.folder(workflow_id)?.resolve_log(job_id, rel)?;
        Ok(LogFile { job_id, attempt_id: record.attempt_id, stream, path, shown: rel.to_string(), hint: None })
    }

    async fn retry_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let (this, guard, change, audit) = (self.clone(), *guard, *change, audit.clone());
        blocking(move || this.guarded_move(workflow_id, job_id, &audit, |wf| moves::retry(wf, job_id, &guard, &change)))
            .await
    }

    async fn fail_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        let (this, guard, audit) = (self.clone(), *guard, audit.clone());
        blocking(move || this.guarded_move(workflow_id, job_id, &audit, |wf| moves::fail(wf, job_id, &guard))).await
    }

    async fn audit_trail(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        let this = self.clone();
        blocking(move || {
            let path = this.folder(workflow_id)?.events_file();
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(BackendError::io(path, e)),
            };
            let mut out = Vec::new();
            for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match serde_json::from_str::<AuditEvent>(line) {
                    Ok(e) => out.push(e),
                    // A line someone else wrote is not triage's record; it is skipped, not fatal.
                    Err(e) => tracing::warn!("{}:{}: not an audit event, skipped: {e}", path.display(), n + 1),
                }
            }
            Ok(out)
        })
        .await
    }

    async fn append_event(&self, workflow_id: i64, event: &AuditEvent) -> Result<(), BackendError> {
        let (this, event) = (self.clone(), event.clone());
        blocking(move || {
            let folder = this.folder(workflow_id)?;
            let _lock = folder.lock()?;
            folder.append_events(std::slice::from_ref(&event))
        })
        .await
    }
}
