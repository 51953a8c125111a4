//! A cache of evidence by (workflow, job, attempt, run, tail length): the stderr of a finished
//! attempt does not change, so reading, scanning and fingerprinting it once per engine is
//! enough. It makes paging through `list_pending_failed_jobs` and the re-checks of `apply`
//! cheap. Only evidence whose tail was read is kept (a missing file may appear later), the
//! job's own fields and its upstream statuses are always taken fresh, and the cache is
//! cleared when it reaches its size limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::evidence::{Evidence, Upstream};
use crate::model::Job;

/// At most this many entries (about 10 KB each with a 50-line tail).
const MAX_ENTRIES: usize = 100_000;

type Key = (i64, i64, u32, u32, usize);

#[derive(Debug, Clone, Default)]
pub struct EvidenceCache {
    map: Arc<Mutex<HashMap<Key, Arc<Evidence>>>>,
}

impl EvidenceCache {
    fn key(workflow_id: i64, job: &Job, run_id: u32, tail_lines: usize) -> Key {
        (workflow_id, job.id, job.attempt_id, run_id, tail_lines)
    }

    /// The cached evidence for this job at this attempt, refreshed with `job` and `upstream`.
    pub fn get(
        &self,
        workflow_id: i64,
        job: &Job,
        run_id: u32,
        tail_lines: usize,
        upstream: &[Upstream],
    ) -> Option<Evidence> {
        let key = Self::key(workflow_id, job, run_id, tail_lines);
        let hit = self.map.lock().ok()?.get(&key).cloned()?;
        // Same attempt, same record of it: the expensive parts still hold.
        if hit.job.attempts != job.attempts {
            return None;
        }
        let mut ev = (*hit).clone();
        ev.job = job.clone();
        ev.upstream = upstream.to_vec();
        Some(ev)
    }

    pub fn put(&self, workflow_id: i64, ev: &Evidence, tail_lines: usize) {
        if ev.tail_error.is_some() {
            return;
        }
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert(Self::key(workflow_id, &ev.job, ev.run_id, tail_lines), Arc::new(ev.clone()));
        }
    }
}
