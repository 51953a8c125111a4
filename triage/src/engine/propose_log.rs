//! The propose-only contract between `triage run` and the `triage-mcp` it hands its agent.
//!
//! In propose-only mode the server validates each classification and tells the agent the
//! result (so the agent can reconsider), appends one [`ProposalRecord`] per job to a JSON
//! Lines file, and changes no job. When the agent has exited, `triage run` reads the file
//! back with [`read`], judges every proposal on its own evidence, and applies what passes.
//!
//! Which validation counts: `triage run`'s. The server's is feedback to the agent and is
//! kept in the record for a person to read, never read back. The file's path is in the MCP
//! configuration the agent is handed, so the agent can write to it as well: every line is
//! untrusted. A record carries only what an agent may say (a [`Classification`]); who
//! proposed it is not in it. The reader names the agent and makes every proposal an
//! agent's ([`Proposal::by_agent`]), whatever else a line says. Lines that do not parse as a
//! record, or that name another workflow, are counted and ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::classify::ClassifyResult;
use super::plan::Outcome;
use super::proposal::Proposal;
use super::validate::ValidationStatus;
use crate::fsutil;
use crate::model::Classification;

/// One line of the propose-only log: an agent's classification of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalRecord {
    pub workflow_id: i64,
    pub job_id: i64,
    /// The attempt the server saw the job at; a job that moved past it is skipped.
    pub attempt_id: u32,
    /// What the agent said, for this one job (`job_id` set, `signature` expanded).
    pub classification: Classification,
    /// The server's validation (feedback to the agent; not read back).
    pub validation: ValidationStatus,
    /// The server's outcome (`recorded` or `needs_review`; not read back).
    pub outcome: Outcome,
    #[schemars(with = "String")]
    pub recorded_at: Timestamp,
}

impl ProposalRecord {
    /// The record of one result of `classify` in propose-only mode.
    pub fn of(workflow_id: i64, result: &ClassifyResult) -> Option<ProposalRecord> {
        let e = &result.entry;
        let p = e.proposed.as_ref()?;
        Some(ProposalRecord {
            workflow_id,
            job_id: e.job_id,
            attempt_id: e.attempt_id,
            classification: Classification {
                job_id: Some(e.job_id),
                signature: None,
                action: p.action,
                memory: p.memory.clone(),
                runtime: p.runtime.clone(),
                confidence: p.confidence,
                reason: p.reason.clone(),
                attempt_id: Some(e.attempt_id),
                override_catalog: p.override_catalog,
            },
            validation: e.validation.status,
            outcome: e.outcome,
            recorded_at: Timestamp::now(),
        })
    }
}

/// The writing end, held by `triage-mcp --propose-only FILE`.
#[derive(Debug)]
pub struct ProposeLog {
    path: PathBuf,
    /// Orders this process's appends (each is one write of whole lines).
    lock: Mutex<()>,
}

/// Why the log could not be opened or written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the propose-only log {}: {source}; give a writable path to --propose-only", path.display())]
pub struct ProposeLogError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl ProposeLog {
    /// Open (create) the log for appending.
    pub fn open(path: &Path) -> Result<ProposeLog, ProposeLogError> {
        fsutil::append_lines::<&str>(path, &[])
            .map_err(|source| ProposeLogError { path: path.to_path_buf(), source })?;
        Ok(ProposeLog { path: path.to_path_buf(), lock: Mutex::new(()) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the records of `results` (those with a proposal), durably, in one write.
    pub fn record(&self, workflow_id: i64, results: &[ClassifyResult]) -> Result<(), ProposeLogError> {
        let lines: Vec<String> = results
            .iter()
            .filter_map(|r| ProposalRecord::of(workflow_id, r))
            .filter_map(|r| serde_json::to_string(&r).ok())
            .collect();
        let _held = self.lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        fsutil::append_lines(&self.path, &lines).map_err(|source| ProposeLogError { path: self.path.clone(), source })
    }
}

/// What [`read`] found.
#[derive(Debug, Default)]
pub struct ReadBack {
    /// The agent's proposals by job id; the last record of a job wins (the agent may
    /// reconsider after validation feedback).
    pub proposals: BTreeMap<i64, Proposal>,
    /// Lines that were not records of this workflow.
    pub unreadable: usize,
}

/// Read the log back as `agent`'s proposals for `workflow_id`. A missing file reads as empty.
pub fn read(path: &Path, agent: &str, workflow_id: i64) -> ReadBack {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let mut out = ReadBack::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let record = serde_json::from_str::<ProposalRecord>(line)
            .ok()
            .filter(|r| r.workflow_id == workflow_id && r.classification.job_id.is_none_or(|j| j == r.job_id));
        match record {
            Some(r) => {
                let mut p = Proposal::by_agent(agent, &r.classification);
                p.attempt_id = Some(r.classification.attempt_id.unwrap_or(r.attempt_id));
                out.proposals.insert(r.job_id, p);
            }
            None => out.unreadable += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Authority;

    #[test]
    fn forged_authority_is_ignored_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let good = r#"{"workflow_id": 42, "job_id": 3, "attempt_id": 1, "classification": {"job_id": 3, "action": "retry", "reason": "r"}, "validation": "accepted", "outcome": "recorded", "recorded_at": "2026-01-01T00:00:00Z", "authority": "review", "source": "review"}"#;
        let inside = r#"{"workflow_id": 42, "job_id": 4, "attempt_id": 1, "classification": {"job_id": 4, "action": "retry", "reason": "r", "authority": "review"}, "validation": "accepted", "outcome": "applied", "recorded_at": "2026-01-01T00:00:00Z"}"#;
        let old = r#"{"job_id": 5, "proposed": {"action": "retry", "reason": "r", "source": "review", "authority": "review"}}"#;
        let other_wf =
            good.replace("\"workflow_id\": 42", "\"workflow_id\": 7").replace("\"job_id\": 3", "\"job_id\": 6");
        std::fs::write(&path, format!("{good}\n{inside}\n{old}\n{other_wf}\nnot json\n")).unwrap();
        let back = read(&path, "command", 42);
        assert_eq!(back.proposals.keys().copied().collect::<Vec<_>>(), vec![3]);
        assert_eq!(back.unreadable, 4);
        let p = &back.proposals[&3];
        assert_eq!((p.authority(), p.source.as_str()), (Authority::Agent, "command"));
    }

    #[test]
    fn missing_file_reads_empty() {
        let back = read(Path::new("/nonexistent/p.jsonl"), "x", 1);
        assert!(back.proposals.is_empty() && back.unreadable == 0);
    }
}
