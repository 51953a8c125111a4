//! From Torc's records to triage's model: a job with its attempts (one per result row), its
//! upstream ids (from the workflow's dependency edges) and its resources (from its resource
//! requirements row); and the per-attempt stdio paths Torc's job runner writes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};

use super::wire::{TorcEdge, TorcJob, TorcResources, TorcResult};
use crate::backend::{BackendError, LogStream};
use crate::model::{Attempt, Job, JobStatus, Memory, Resources, Runtime};

/// `OUTPUT_DIR/job_stdio/job_wf{W}_j{J}_r{R}_a{A}.e` (`.o` for stdout), as Torc's runner
/// names them (`src/client/log_paths.rs`).
pub(super) fn stdio_path(output_dir: &Path, wf: i64, job: i64, run: i64, attempt: i64, stream: LogStream) -> PathBuf {
    let ext = match stream {
        LogStream::Stderr => "e",
        LogStream::Stdout => "o",
    };
    output_dir.join("job_stdio").join(format!("job_wf{wf}_j{job}_r{run}_a{attempt}.{ext}"))
}

/// A number from Torc that must fit triage's `u32` (attempts, runs).
pub(super) fn small(n: i64, what: &str, url: &str) -> Result<u32, BackendError> {
    u32::try_from(n).map_err(|_| BackendError::Remote {
        url: url.to_string(),
        what: format!("reading {what}"),
        why: format!("{what} = {n} is out of range (expected 0..{})", u32::MAX),
        transient: false,
    })
}

/// One result row as an attempt record.
pub(super) fn attempt_of(r: &TorcResult, output_dir: &Path, url: &str) -> Result<Attempt, BackendError> {
    let finished_at: Option<Timestamp> = r.completion_time.parse().ok();
    let started_at = finished_at.and_then(|f| {
        let secs = r.exec_time_minutes * 60.0;
        (secs.is_finite() && secs >= 0.0).then(|| f.checked_sub(SignedDuration::from_secs_f64(secs)).ok()).flatten()
    });
    Ok(Attempt {
        attempt_id: small(r.attempt(), "attempt_id", url)?,
        run_id: small(r.run_id, "run_id", url)?,
        return_code: r.return_code,
        signal: (r.return_code < 0).then(|| i32::try_from(-r.return_code).ok()).flatten(),
        scheduler_state: None,
        started_at,
        finished_at,
        host: None,
        peak_memory_bytes: r.peak_memory_bytes.and_then(|b| u64::try_from(b).ok()).filter(|b| *b > 0),
        stdout: Some(path_text(&stdio_path(
            output_dir,
            r.workflow_id,
            r.job_id,
            r.run_id,
            r.attempt(),
            LogStream::Stdout,
        ))),
        stderr: Some(path_text(&stdio_path(
            output_dir,
            r.workflow_id,
            r.job_id,
            r.run_id,
            r.attempt(),
            LogStream::Stderr,
        ))),
    })
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}

/// Torc's memory text (`<int>[k|m|g|t]`, base 1024, no unit = bytes) as triage's.
pub(super) fn parse_memory(text: &str) -> Option<Memory> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<u64>().ok().filter(|b| *b > 0).map(Memory::from_bytes);
    }
    t.parse().ok()
}

/// Memory as Torc parses it: a whole number with the largest exact unit, else bytes
/// (Torc refuses fractions like `1.5g`).
pub(super) fn torc_memory(m: Memory) -> String {
    let b = m.bytes();
    for (unit, shift) in [("t", 40u32), ("g", 30), ("m", 20), ("k", 10)] {
        let size = 1u64 << shift;
        if b >= size && b.is_multiple_of(size) {
            return format!("{}{unit}", b / size);
        }
    }
    b.to_string()
}

pub(super) fn resources_of(rr: Option<&TorcResources>) -> Resources {
    let Some(rr) = rr else { return Resources::default() };
    Resources {
        memory: rr.memory.as_deref().and_then(parse_memory),
        runtime: rr.runtime.as_deref().and_then(|r| r.parse::<Runtime>().ok()),
        num_cpus: u32::try_from(rr.num_cpus).ok(),
        num_gpus: u32::try_from(rr.num_gpus).ok(),
    }
}

/// Everything the workflow-wide requests returned, indexed for building jobs.
#[derive(Debug, Default)]
pub(super) struct Tables {
    pub results: HashMap<i64, Vec<TorcResult>>,
    pub upstream: HashMap<i64, Vec<i64>>,
    pub resources: HashMap<i64, TorcResources>,
}

impl Tables {
    pub fn new(results: Vec<TorcResult>, edges: Vec<TorcEdge>, resources: Vec<TorcResources>) -> Tables {
        let mut t = Tables::default();
        for r in results {
            t.results.entry(r.job_id).or_default().push(r);
        }
        for list in t.results.values_mut() {
            list.sort_by_key(|r| (r.run_id, r.attempt(), r.id));
        }
        for e in edges {
            t.upstream.entry(e.job_id).or_default().push(e.depends_on_job_id);
        }
        for ids in t.upstream.values_mut() {
            ids.sort_unstable();
            ids.dedup();
        }
        for rr in resources {
            if let Some(id) = rr.id {
                t.resources.insert(id, rr);
            }
        }
        t
    }

    /// The model job for a Torc job.
    pub fn job(&self, j: &TorcJob, output_dir: &Path, url: &str) -> Result<Job, BackendError> {
        let id = j.id.unwrap_or_default();
        let mut attempts = Vec::new();
        for r in self.results.get(&id).map(Vec::as_slice).unwrap_or_default() {
            let a = attempt_of(r, output_dir, url)?;
            // Two rows for one (run, attempt) cannot exist (UNIQUE); keep the last if they do.
            attempts.retain(|x: &Attempt| (x.run_id, x.attempt_id) != (a.run_id, a.attempt_id));
            attempts.push(a);
        }
        let depends_on = match &j.depends_on_job_ids {
            Some(ids) => ids.clone(),
            None => self.upstream.get(&id).cloned().unwrap_or_default(),
        };
        Ok(Job {
            id,
            name: j.name.clone(),
            command: j.command.clone(),
            status: j.status.unwrap_or(JobStatus::Uninitialized),
            attempt_id: small(j.attempt(), "attempt_id", url)?,
            max_retries: None,
            depends_on,
            resources: resources_of(j.resource_requirements_id.and_then(|rr| self.resources.get(&rr))),
            attempts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_round_trips_in_torc_form() {
        for (text, out) in [("1m", "1m"), ("8g", "8g"), ("1536m", "1536m"), ("1048577", "1048577"), ("2G", "2g")] {
            let m = parse_memory(text).unwrap();
            assert_eq!(torc_memory(m), out, "{text}");
        }
        assert_eq!(torc_memory(parse_memory("1m").unwrap().scaled(1.5)), "2m");
        assert!(parse_memory("").is_none() && parse_memory("0").is_none());
    }

    #[test]
    fn stdio_paths_follow_torc() {
        let p = stdio_path(Path::new("out"), 3, 17, 1, 2, LogStream::Stderr);
        assert_eq!(p, Path::new("out/job_stdio/job_wf3_j17_r1_a2.e"));
    }
}
