//! The two guarded moves applied to a workflow in memory: retry and fail (with its cascade).
//!
//! Pure functions over `Workflow`; the store wraps them in lock + read + write + audit.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::backend::{BackendError, Guard, MoveOutcome, ResourceChange};
use crate::model::{JobStatus, Workflow};

/// Check the guard; `Some(Stale)` if the job moved on.
fn stale(wf: &Workflow, job_id: i64, guard: &Guard) -> Result<Option<MoveOutcome>, BackendError> {
    let job = wf.job(job_id).ok_or(BackendError::JobNotFound { workflow_id: wf.id, job_id })?;
    let moved = !guard.holds(job.status, job.attempt_id, wf.run_id);
    Ok(moved.then_some(MoveOutcome::Stale { status: job.status, attempt_id: job.attempt_id, run_id: wf.run_id }))
}

/// Retry: `pending_failed` → `ready`, attempt_id + 1, new resources.
pub(super) fn retry(
    wf: &mut Workflow,
    job_id: i64,
    guard: &Guard,
    change: &ResourceChange,
) -> Result<MoveOutcome, BackendError> {
    if let Some(s) = stale(wf, job_id, guard)? {
        return Ok(s);
    }
    let job =
        wf.jobs.iter_mut().find(|j| j.id == job_id).ok_or(BackendError::JobNotFound { workflow_id: wf.id, job_id })?;
    job.status = JobStatus::Ready;
    job.attempt_id += 1;
    if let Some(m) = change.memory {
        job.resources.memory = Some(m);
    }
    if let Some(r) = change.runtime {
        job.resources.runtime = Some(r);
    }
    Ok(MoveOutcome::Moved { status: JobStatus::Ready, attempt_id: job.attempt_id, canceled: vec![] })
}

/// Fail: `pending_failed` → `failed`, and cancel every not-yet-run job downstream of it.
pub(super) fn fail(wf: &mut Workflow, job_id: i64, guard: &Guard) -> Result<MoveOutcome, BackendError> {
    if let Some(s) = stale(wf, job_id, guard)? {
        return Ok(s);
    }
    let mut dependents: HashMap<i64, Vec<i64>> = HashMap::new();
    for j in &wf.jobs {
        for d in &j.depends_on {
            dependents.entry(*d).or_default().push(j.id);
        }
    }
    let index: HashMap<i64, usize> = wf.jobs.iter().enumerate().map(|(i, j)| (j.id, i)).collect();
    let mut canceled = Vec::new();
    let mut seen = HashSet::from([job_id]);
    let mut queue = VecDeque::from([job_id]);
    while let Some(id) = queue.pop_front() {
        for &child in dependents.get(&id).map(Vec::as_slice).unwrap_or_default() {
            if !seen.insert(child) {
                continue;
            }
            let Some(&i) = index.get(&child) else { continue };
            if wf.jobs[i].status.is_not_yet_run() {
                wf.jobs[i].status = JobStatus::Canceled;
                canceled.push(child);
                queue.push_back(child);
            }
        }
    }
    canceled.sort_unstable();
    let i = index[&job_id];
    wf.jobs[i].status = JobStatus::Failed;
    Ok(MoveOutcome::Moved { status: JobStatus::Failed, attempt_id: wf.jobs[i].attempt_id, canceled })
}
