//! `triage outcomes`: what became of each applied decision. A retry's result comes later:
//! the next attempt completed, failed again the same way (same failure signature as the
//! attempt decided on), failed differently, or has not run yet. A fail holds, or was reversed
//! (the job ran again afterwards: someone reset it). Decisions come from the backend's audit
//! trail (who, source, authority, catalog entry, attempt, signature, as the engine recorded
//! them when it moved the job); results from the jobs' attempt history and their logs.
//!
//! The tallies, per decision source (each agent by name, the catalog rules, a person's
//! review), per catalog entry and per failure category, are what confidence should be
//! calibrated against, and what `triage suggest` reads.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Engine;
use crate::backend::{AuditEvent, BackendError, LogStream};
use crate::logs::{TailSize, fingerprint};
use crate::model::{Attempt, Job, JobStatus};

/// What became of one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Result {
    /// Retry: the next attempt completed.
    Worked,
    /// Retry: the next attempt failed with the same signature.
    FailedAgain,
    /// Retry: the next attempt failed with another signature.
    FailedDifferently,
    /// Retry: no finished attempt after it yet.
    NotRunYet,
    /// Fail: the job stayed failed.
    Held,
    /// Fail: the job ran again afterwards (someone reset it).
    Reversed,
    /// The job is gone from the backend, or the decision did not record its attempt.
    Unknown,
}

/// One applied decision and its result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DecisionOutcome {
    pub job_id: i64,
    pub name: String,
    /// `retry` or `fail`.
    pub action: String,
    /// The attempt decided on.
    pub attempt_id: Option<u32>,
    #[schemars(with = "String")]
    pub when: jiff::Timestamp,
    /// The program that moved the job (`triage run (claude)`, `triage watch (rules)`, ...).
    pub who: String,
    /// `agent: NAME`, `rules` or `review: NAME`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_entry: Option<String>,
    /// What the catalog said when the decision was made (`transient`, `permanent`,
    /// `unknown`), when the decision recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_verdict: Option<String>,
    /// The failure signature of the attempt decided on.
    pub signature: String,
    pub result: Result,
    /// The failure signature of the attempt after a retry, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_signature: Option<String>,
}

/// Counts of results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    pub retries: usize,
    pub worked: usize,
    pub failed_again: usize,
    pub failed_differently: usize,
    pub not_run_yet: usize,
    pub fails: usize,
    pub held: usize,
    pub reversed: usize,
    pub unknown: usize,
}

impl Tally {
    /// Count one decision with its result.
    pub fn add(&mut self, action: &str, r: Result) {
        match action {
            "retry" => self.retries += 1,
            _ => self.fails += 1,
        }
        match r {
            Result::Worked => self.worked += 1,
            Result::FailedAgain => self.failed_again += 1,
            Result::FailedDifferently => self.failed_differently += 1,
            Result::NotRunYet => self.not_run_yet += 1,
            Result::Held => self.held += 1,
            Result::Reversed => self.reversed += 1,
            Result::Unknown => self.unknown += 1,
        }
    }

    /// Of the retries whose next attempt finished, the share that worked (`None` when none
    /// finished).
    pub fn retry_success(&self) -> Option<f64> {
        let finished = self.worked + self.failed_again + self.failed_differently;
        (finished > 0).then(|| self.worked as f64 / finished as f64)
    }
}

/// Every decision of a workflow with its result, and the tallies.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OutcomeReport {
    pub workflow_id: i64,
    pub backend: String,
    pub decisions: Vec<DecisionOutcome>,
    pub by_source: BTreeMap<String, Tally>,
    pub by_catalog_entry: BTreeMap<String, Tally>,
    pub by_category: BTreeMap<String, Tally>,
    pub total: Tally,
}

/// A field of an audit event's details: where the engine put it, or where a backend nested
/// the engine's details (Torc keeps them under `decision`, a recovered move under `intent`).
fn field<'a>(details: &'a serde_json::Value, path: &[&str]) -> Option<&'a serde_json::Value> {
    let at = |root: &'a serde_json::Value| path.iter().try_fold(root, |v, k| v.get(k)).filter(|v| !v.is_null());
    at(details).or_else(|| details.get("decision").and_then(at)).or_else(|| details.get("intent").and_then(at))
}

fn text<'a>(details: &'a serde_json::Value, path: &[&str]) -> Option<&'a str> {
    field(details, path).and_then(|v| v.as_str())
}

/// The attempt a decision was made on, as the engine (or the store, in `from`) recorded it.
fn decided_attempt(e: &AuditEvent) -> Option<u32> {
    field(&e.details, &["attempt_id"])
        .or_else(|| field(&e.details, &["from", "attempt_id"]))
        .and_then(|v| v.as_u64())
        .and_then(|n| u32::try_from(n).ok())
}

/// A move, not a move undone: a backend's recovery records an interrupted move it rolled
/// back under the move's own verb.
fn is_decision(e: &AuditEvent) -> bool {
    (e.what == "retry" || e.what == "fail") && text(&e.details, &["resolution"]) != Some("rolled_back")
}

/// `agent: NAME`, `rules` or `review: NAME`, from the recorded source and authority.
fn source_of(e: &AuditEvent) -> String {
    let source = text(&e.details, &["source"]).unwrap_or("unknown");
    match text(&e.details, &["authority"]) {
        Some("rules") => "rules".into(),
        Some("review") => format!("review: {source}"),
        _ => format!("agent: {source}"),
    }
}

impl Engine {
    /// What became of every applied decision of the workflow.
    pub async fn outcomes(&self, workflow_id: i64) -> std::result::Result<OutcomeReport, BackendError> {
        let trail = self.backend.audit_trail(workflow_id).await?;
        let jobs: HashMap<i64, Job> =
            self.backend.all_jobs(workflow_id, None).await?.into_iter().map(|j| (j.id, j)).collect();
        let mut decisions = Vec::new();
        for e in trail.iter().filter(|e| is_decision(e)) {
            let Some(job_id) = e.job_id else { continue };
            let attempt = decided_attempt(e);
            let job = jobs.get(&job_id);
            let recorded = text(&e.details, &["signature"]).map(str::to_string);
            let signature = match (recorded, job, attempt) {
                (Some(s), _, _) => s,
                (None, Some(job), Some(a)) => self.signature_of(workflow_id, job, a).await.unwrap_or_default(),
                _ => String::new(),
            };
            let (result, next_signature) = match (job, attempt) {
                (Some(job), Some(a)) if e.what == "retry" => self.retry_result(workflow_id, job, a, &signature).await,
                (Some(job), Some(a)) => (fail_result(job, a), None),
                _ => (Result::Unknown, None),
            };
            decisions.push(DecisionOutcome {
                job_id,
                name: job.map(|j| j.name.clone()).unwrap_or_default(),
                action: e.what.clone(),
                attempt_id: attempt,
                when: e.when,
                who: e.who.clone(),
                source: source_of(e),
                category: text(&e.details, &["catalog", "category"]).map(str::to_string),
                catalog_entry: text(&e.details, &["catalog", "entry"]).map(str::to_string),
                catalog_verdict: text(&e.details, &["catalog", "verdict"]).map(str::to_string),
                signature,
                result,
                next_signature,
            });
        }
        let mut report = OutcomeReport {
            workflow_id,
            backend: self.backend.describe(),
            decisions,
            by_source: BTreeMap::new(),
            by_catalog_entry: BTreeMap::new(),
            by_category: BTreeMap::new(),
            total: Tally::default(),
        };
        for d in &report.decisions {
            report.total.add(&d.action, d.result);
            report.by_source.entry(d.source.clone()).or_default().add(&d.action, d.result);
            let entry = d.catalog_entry.clone().unwrap_or_else(|| "(no catalog entry)".into());
            report.by_catalog_entry.entry(entry).or_default().add(&d.action, d.result);
            let category = d.category.clone().unwrap_or_else(|| "(uncategorized)".into());
            report.by_category.entry(category).or_default().add(&d.action, d.result);
        }
        Ok(report)
    }

    /// The failure signature of one attempt (its stderr tail and exit status).
    async fn signature_of(&self, workflow_id: i64, job: &Job, attempt_id: u32) -> Option<String> {
        let attempt = job.attempts.iter().find(|a| a.attempt_id == attempt_id)?;
        let tail = self
            .tail(workflow_id, job.id, Some(attempt_id), LogStream::Stderr, TailSize::Lines(self.tail_lines))
            .await
            .map(|t| t.text)
            .unwrap_or_default();
        Some(fingerprint(&tail, Some(Attempt::exit_status(attempt))).signature.to_string())
    }

    async fn retry_result(&self, workflow_id: i64, job: &Job, a: u32, before: &str) -> (Result, Option<String>) {
        let later: Vec<&Attempt> = job.attempts.iter().filter(|x| x.attempt_id > a).collect();
        let Some(next) = later.iter().min_by_key(|x| x.attempt_id) else {
            let ran_clean = job.status == JobStatus::Completed && job.attempt_id > a;
            return (if ran_clean { Result::Worked } else { Result::NotRunYet }, None);
        };
        if next.exit_status() == 0 {
            return (Result::Worked, None);
        }
        let after = self.signature_of(workflow_id, job, next.attempt_id).await.unwrap_or_default();
        let result =
            if !before.is_empty() && after == before { Result::FailedAgain } else { Result::FailedDifferently };
        (result, Some(after))
    }
}

fn fail_result(job: &Job, a: u32) -> Result {
    let still_down = matches!(job.status, JobStatus::Failed | JobStatus::Canceled | JobStatus::Terminated);
    if job.attempt_id > a || !still_down { Result::Reversed } else { Result::Held }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_success_counts_only_finished_retries() {
        let mut t = Tally::default();
        t.add("retry", Result::Worked);
        t.add("retry", Result::FailedAgain);
        t.add("retry", Result::NotRunYet);
        t.add("fail", Result::Held);
        assert_eq!((t.retries, t.fails), (3, 1));
        assert_eq!(t.retry_success(), Some(0.5));
        assert_eq!(Tally::default().retry_success(), None);
    }

    #[test]
    fn the_source_names_the_authority_and_the_proposer() {
        let mut e = AuditEvent::now("triage run (claude)", "retry", Some(1), "why");
        e.details = serde_json::json!({"source": "claude", "authority": "agent"});
        assert_eq!(source_of(&e), "agent: claude");
        e.details = serde_json::json!({"source": "alice", "authority": "review"});
        assert_eq!(source_of(&e), "review: alice");
        e.details = serde_json::json!({"source": "rules", "authority": "rules", "from": {"attempt_id": 3}});
        assert_eq!(source_of(&e), "rules");
        assert_eq!(decided_attempt(&e), Some(3));
    }

    #[test]
    fn details_nested_by_a_backend_are_found_and_rolled_back_moves_are_not_decisions() {
        let mut e = AuditEvent::now("triage run (rules)", "retry", Some(1), "why");
        e.details = serde_json::json!({"decision": {"source": "rules", "authority": "rules", "attempt_id": 2,
            "catalog": {"category": "network"}}, "from": {"attempt_id": 2}});
        assert_eq!((source_of(&e), decided_attempt(&e)), ("rules".to_string(), Some(2)));
        assert_eq!(text(&e.details, &["catalog", "category"]), Some("network"));
        assert!(is_decision(&e));
        e.details = serde_json::json!({"resolution": "rolled_back", "intent": {"attempt_id": 2}});
        assert!(!is_decision(&e));
    }
}
