//! The review plan `triage watch` keeps for each workflow: every job a batch left for a
//! person, in the plan format `triage review` and `triage apply` read, with its Markdown
//! report beside it. It grows as batches come; a newer attempt of a job replaces the older
//! entry. It is also how a restarted watcher knows which jobs already wait for a person (it
//! does not triage them again): the file, not the watcher's memory, is the record.
//!
//! Writes are atomic (temp file, rename) under the folder's lock, so two watchers and a
//! crash leave either the old file or the new one, never half of one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::engine::{Outcome, Plan, report};
use crate::fsutil::{FolderLock, write_atomic};

use super::WatchError;

/// The review plan of one workflow.
#[derive(Debug, Clone)]
pub struct ReviewFile {
    path: PathBuf,
}

impl ReviewFile {
    /// `dir/workflow-<ID>-review.json`.
    pub fn for_workflow(dir: &Path, workflow_id: i64) -> ReviewFile {
        ReviewFile { path: dir.join(format!("workflow-{workflow_id}-review.json")) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn folder(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The plan in the file, `None` when there is none yet.
    pub fn load(&self) -> Result<Option<Plan>, WatchError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(WatchError::Io { what: "read the review plan", path: self.path.clone(), source: e }),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| WatchError::BadReviewFile { path: self.path.clone(), reason: e.to_string() })
    }

    /// The jobs (id, attempt) the file holds for a person: triage does not take them up again
    /// at that attempt.
    pub fn waiting(&self) -> Result<BTreeSet<(i64, u32)>, WatchError> {
        Ok(self
            .load()?
            .map(|p| {
                p.jobs.iter().filter(|j| j.outcome == Outcome::NeedsReview).map(|j| (j.job_id, j.attempt_id)).collect()
            })
            .unwrap_or_default())
    }

    /// Add the jobs of `batch` that need a person (an older entry of the same job is
    /// replaced); returns their ids, empty when there were none (the file is then untouched).
    pub fn add(&self, batch: &Plan) -> Result<Vec<i64>, WatchError> {
        let new: Vec<_> = batch.jobs.iter().filter(|j| j.outcome == Outcome::NeedsReview).cloned().collect();
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let folder = self.folder();
        let io = |what, source| WatchError::Io { what, path: folder.to_path_buf(), source };
        std::fs::create_dir_all(folder).map_err(|e| io("create the review folder", e))?;
        let _lock = FolderLock::acquire(folder).map_err(|e| io("lock the review folder", e))?;
        let mut plan = match self.load()? {
            Some(p) => p,
            None => Plan { jobs: Vec::new(), events: Vec::new(), agent_output: Vec::new(), ..batch.clone() },
        };
        let ids: Vec<i64> = new.iter().map(|j| j.job_id).collect();
        plan.jobs.retain(|j| !ids.contains(&j.job_id));
        plan.jobs.extend(new);
        plan.jobs.sort_by_key(|j| j.job_id);
        plan.agent = "triage watch".into();
        plan.created_at = batch.created_at;
        plan.summarize();
        let mut json = serde_json::to_vec_pretty(&plan).map_err(|e| WatchError::BadReviewFile {
            path: self.path.clone(),
            reason: format!("cannot serialize: {e}"),
        })?;
        json.push(b'\n');
        write_atomic(&self.path, &json).map_err(|e| WatchError::Io {
            what: "write the review plan",
            path: self.path.clone(),
            source: e,
        })?;
        let md = self.path.with_extension("md");
        write_atomic(&md, report::markdown(&plan).as_bytes()).map_err(|e| WatchError::Io {
            what: "write the review report",
            path: md.clone(),
            source: e,
        })?;
        Ok(ids)
    }
}
