//! `triage suggest`: history turned into proposals a person reviews; nothing here changes a
//! job or a catalog.
//!
//! - **Catalog entries** for recurring failures the catalog had no verdict on, which agents
//!   or people decided the same way each time (at least `min_decisions` decisions on one
//!   signature, one action, and for a retry no more retries failing again than working). The
//!   pattern comes from the failure's most telling line with its noise (numbers, quoted text,
//!   paths, hosts) widened, the examples are the real lines, the counter-examples are the
//!   telling lines of the workflow's other failures. The whole file is loaded with the
//!   catalog's own checks before it is offered, and each entry is scanned against the tails
//!   it came from with the merged catalog (`effective` says whether it then decides them).
//! - **Flagged entries**: catalog entries whose retries keep failing (at least two retries ran
//!   again and fewer than half worked).
//! - **Torc `failure_handlers` rules**: exit codes whose retries all worked (at least
//!   `min_decisions` of them), so the next run needs no agent for them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Engine;
use super::outcomes::{DecisionOutcome, Result as Outcome, Tally};
use crate::backend::{BackendError, LogStream};
use crate::catalog::{Catalog, ScanContext};
use crate::logs::{TailSize, fingerprint, normalize_line};
use crate::model::Verdict;

/// A catalog entry proposed from history.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SuggestedEntry {
    pub id: String,
    /// `transient` (decided retry) or `permanent` (decided fail).
    pub class: String,
    pub action: String,
    pub pattern: String,
    pub examples: Vec<String>,
    pub counter_examples: Vec<String>,
    pub signature: String,
    pub job_ids: Vec<i64>,
    /// Who decided, and how many times.
    pub decided_by: BTreeMap<String, usize>,
    /// What became of those decisions.
    pub outcomes: Tally,
    /// Whether, loaded with the catalog, the entry decides the tails it came from.
    pub effective: bool,
}

/// A catalog entry whose retries keep failing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FlaggedEntry {
    pub entry: String,
    pub outcomes: Tally,
    pub why: String,
}

/// A Torc failure-handler rule: retry this exit code without asking anyone.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HandlerRule {
    pub exit_code: i64,
    pub retries_that_worked: usize,
    /// Torc's `max_retries` for the rule: enough for the most retries one job needed before
    /// its retry worked, and no more. Torc's runner retries while the failed attempt's number
    /// is below `max_retries`, so N retries take `max_retries: N + 1`.
    pub max_retries: u32,
}

/// Everything `triage suggest` proposes for a workflow.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Suggestions {
    pub workflow_id: i64,
    pub backend: String,
    pub entries: Vec<SuggestedEntry>,
    /// The entries as a catalog file for `--catalog` (empty when there are none).
    pub catalog_toml: String,
    pub flagged: Vec<FlaggedEntry>,
    /// Torc only: rules for the workflow's `failure_handlers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_handler_rules: Vec<HandlerRule>,
    /// Recurring undecided failures not proposed, and why.
    pub not_proposed: Vec<String>,
}

/// One entry as the catalog file format writes it.
#[derive(Serialize)]
struct TomlEntry<'a> {
    id: &'a str,
    class: &'a str,
    category: &'a str,
    patterns: Vec<&'a str>,
    action: &'a str,
    strategy: &'a str,
    hint: String,
    examples: &'a [String],
    counter_examples: &'a [String],
}

#[derive(Serialize)]
struct TomlFile<'a> {
    version: String,
    entry: Vec<TomlEntry<'a>>,
}

/// A placeholder of [`normalize_line`] (`<n>`, `<str>`, `<path>`, ...).
fn placeholder() -> Regex {
    Regex::new(r"<[a-z]+>").expect("valid")
}

/// A regex for lines like `summary` (a normalized line): its words literal, its placeholders
/// widened to any text.
fn pattern_from_summary(summary: &str) -> String {
    let ph = placeholder();
    let mut out = String::new();
    let mut last = 0;
    for m in ph.find_iter(summary) {
        out.push_str(&regex::escape(&summary[last..m.start()]));
        out.push_str(".+?");
        last = m.end();
    }
    out.push_str(&regex::escape(&summary[last..]));
    // Whitespace runs were collapsed by the normalization.
    out.replace(' ', r"\s+")
}

/// A regex for `line` itself, its digit runs widened.
fn pattern_from_line(line: &str) -> String {
    let digits = Regex::new(r"\d+").expect("valid");
    let mut out = String::new();
    let mut last = 0;
    for m in digits.find_iter(line) {
        out.push_str(&regex::escape(&line[last..m.start()]));
        out.push_str(r"\d+");
        last = m.end();
    }
    out.push_str(&regex::escape(&line[last..]));
    out
}

fn matches_all(pattern: &str, lines: &[String]) -> bool {
    Regex::new(pattern).is_ok_and(|re| lines.iter().all(|l| re.is_match(l)))
}

impl Engine {
    /// Proposals from the workflow's history (see the module documentation).
    pub async fn suggest(&self, workflow_id: i64, min_decisions: usize) -> Result<Suggestions, BackendError> {
        let min = min_decisions.max(1);
        let report = self.outcomes(workflow_id).await?;
        let mut out = Suggestions {
            workflow_id,
            backend: report.backend.clone(),
            entries: Vec::new(),
            catalog_toml: String::new(),
            flagged: Vec::new(),
            failure_handler_rules: Vec::new(),
            not_proposed: Vec::new(),
        };

        // Tails of the attempts decided on, with their telling raw line.
        let mut tails: BTreeMap<(i64, u32), (String, Option<String>, String)> = BTreeMap::new();
        for d in &report.decisions {
            let Some(a) = d.attempt_id else { continue };
            if tails.contains_key(&(d.job_id, a)) {
                continue;
            }
            let tail = self
                .tail(workflow_id, d.job_id, Some(a), LogStream::Stderr, TailSize::Lines(self.tail_lines))
                .await
                .map(|t| t.text)
                .unwrap_or_default();
            let summary = fingerprint(&tail, None).summary;
            let raw = tail.lines().rev().find(|l| normalize_line(l) == summary).map(|l| l.trim().to_string());
            tails.insert((d.job_id, a), (tail, raw, summary));
        }

        // Undecided by the catalog, decided by agents or people: grouped by signature.
        let mut groups: BTreeMap<&str, Vec<&DecisionOutcome>> = BTreeMap::new();
        for d in &report.decisions {
            if d.catalog_verdict.as_deref() == Some("unknown") && d.source != "rules" && !d.signature.is_empty() {
                groups.entry(d.signature.as_str()).or_default().push(d);
            }
        }
        let mut proposed: Vec<SuggestedEntry> = Vec::new();
        for (signature, ds) in &groups {
            let jobs: BTreeSet<i64> = ds.iter().map(|d| d.job_id).collect();
            if ds.len() < min {
                continue;
            }
            let actions: BTreeSet<&str> = ds.iter().map(|d| d.action.as_str()).collect();
            let mut tally = Tally::default();
            let mut decided_by = BTreeMap::new();
            for d in ds {
                tally.add(&d.action, d.result);
                *decided_by.entry(d.source.clone()).or_insert(0) += 1;
            }
            if actions.len() > 1 {
                out.not_proposed.push(format!("{signature} (jobs {jobs:?}): decided both ways ({actions:?})"));
                continue;
            }
            let action = actions.into_iter().next().unwrap_or("retry");
            if action == "retry" && tally.failed_again + tally.failed_differently > tally.worked {
                out.not_proposed.push(format!(
                    "{signature} (jobs {jobs:?}): retried, but {} of {} retries that ran again failed",
                    tally.failed_again + tally.failed_differently,
                    tally.worked + tally.failed_again + tally.failed_differently
                ));
                continue;
            }
            let lines: Vec<String> = ds
                .iter()
                .filter_map(|d| tails.get(&(d.job_id, d.attempt_id?)).and_then(|t| t.1.clone()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .take(5)
                .collect();
            let summary = ds.iter().find_map(|d| tails.get(&(d.job_id, d.attempt_id?)).map(|t| t.2.clone()));
            let (Some(summary), false) = (summary, lines.is_empty()) else {
                out.not_proposed.push(format!("{signature} (jobs {jobs:?}): no stderr line to write a pattern from"));
                continue;
            };
            let pattern = [pattern_from_summary(&summary), pattern_from_line(&lines[0])]
                .into_iter()
                .find(|p| matches_all(p, &lines));
            let Some(pattern) = pattern else {
                out.not_proposed
                    .push(format!("{signature} (jobs {jobs:?}): the lines differ too much for one pattern"));
                continue;
            };
            proposed.push(SuggestedEntry {
                id: format!("suggested-{}", signature.trim_start_matches("sig-")),
                class: if action == "retry" { "transient" } else { "permanent" }.into(),
                action: action.into(),
                pattern,
                examples: lines,
                counter_examples: Vec::new(),
                signature: signature.to_string(),
                job_ids: jobs.into_iter().collect(),
                decided_by,
                outcomes: tally,
                effective: false,
            });
        }

        // Counter-examples: the telling lines of the workflow's other failures.
        let others: Vec<(String, String)> = tails
            .iter()
            .filter_map(|((job, a), t)| {
                let sig = report.decisions.iter().find(|d| d.job_id == *job && d.attempt_id == Some(*a))?;
                Some((sig.signature.clone(), t.1.clone()?))
            })
            .collect();
        for e in &mut proposed {
            let re = Regex::new(&e.pattern).ok();
            e.counter_examples = others
                .iter()
                .filter(|(sig, line)| *sig != e.signature && re.as_ref().is_some_and(|re| !re.is_match(line)))
                .map(|(_, l)| l.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .take(3)
                .collect();
        }

        if !proposed.is_empty() {
            let file = TomlFile {
                version: format!("{}.suggested-{workflow_id}", self.catalog.version()),
                entry: proposed
                    .iter()
                    .map(|e| TomlEntry {
                        id: &e.id,
                        class: &e.class,
                        category: "suggested",
                        patterns: vec![e.pattern.as_str()],
                        action: if e.action == "retry" { "retry" } else { "fail" },
                        strategy: if e.action == "retry" { "retry_with_jitter" } else { "abort" },
                        hint: format!(
                            "Suggested by `triage suggest` from {} decisions on workflow {workflow_id} ({}); of the retries that ran again, {} worked and {} failed again. Review before use.",
                            e.job_ids.len(),
                            e.decided_by.iter().map(|(k, v)| format!("{k} x{v}")).collect::<Vec<_>>().join(", "),
                            e.outcomes.worked,
                            e.outcomes.failed_again + e.outcomes.failed_differently
                        ),
                        examples: &e.examples,
                        counter_examples: &e.counter_examples,
                    })
                    .collect(),
            };
            let body =
                toml::to_string(&file).map_err(|e| BackendError::Unsupported(format!("cannot write TOML: {e}")))?;
            out.catalog_toml = format!(
                "# Catalog entries proposed by `triage suggest --workflow {workflow_id}` ({}).\n# A person reviews them; load with `--catalog FILE`.\n\n{body}",
                report.backend
            );
            // The catalog's own checks (syntax, regexes, examples, counter-examples), then
            // does each entry decide the tails it came from?
            let merged = Catalog::from_sources(&[(PathBuf::from("suggested.toml"), out.catalog_toml.clone())])
                .map_err(|e| {
                    BackendError::Unsupported(format!("the suggested entries fail the catalog's checks: {e}"))
                })?;
            for e in &mut proposed {
                let want = if e.class == "transient" { Verdict::Transient } else { Verdict::Permanent };
                e.effective = e.job_ids.iter().all(|job| {
                    tails
                        .iter()
                        .filter(|((j, _), _)| j == job)
                        .all(|(_, t)| merged.scan(&t.0, &ScanContext::default()).verdict == want)
                });
            }
        }
        out.entries = proposed;

        for (entry, t) in &report.by_catalog_entry {
            let ran = t.worked + t.failed_again + t.failed_differently;
            if !entry.starts_with('(') && ran >= 2 && t.worked * 2 < ran {
                out.flagged.push(FlaggedEntry {
                    entry: entry.clone(),
                    outcomes: t.clone(),
                    why: format!("{} of {ran} retries that ran again failed", ran - t.worked),
                });
            }
        }

        if report.backend.starts_with("torc:") {
            out.failure_handler_rules = self.handler_rules(workflow_id, &report.decisions, min).await?;
        }
        Ok(out)
    }

    /// Exit codes whose retries all worked, at least `min` of them.
    async fn handler_rules(
        &self,
        workflow_id: i64,
        decisions: &[DecisionOutcome],
        min: usize,
    ) -> Result<Vec<HandlerRule>, BackendError> {
        let jobs = self.backend.all_jobs(workflow_id, None).await?;
        // Per exit code: retries that ran, retries that worked, and the most retries any job
        // needed before it worked (a retry decided on attempt k was the job's k-th).
        let mut by_code: BTreeMap<i64, (usize, usize, u32)> = BTreeMap::new();
        for d in decisions.iter().filter(|d| d.action == "retry") {
            let code = jobs
                .iter()
                .find(|j| j.id == d.job_id)
                .and_then(|j| j.attempts.iter().find(|a| Some(a.attempt_id) == d.attempt_id))
                .map(|a| a.exit_status());
            let (Some(code), true) =
                (code, matches!(d.result, Outcome::Worked | Outcome::FailedAgain | Outcome::FailedDifferently))
            else {
                continue;
            };
            let e = by_code.entry(code).or_default();
            e.0 += 1;
            if d.result == Outcome::Worked {
                e.1 += 1;
                e.2 = e.2.max(d.attempt_id.unwrap_or(1));
            }
        }
        Ok(by_code
            .into_iter()
            .filter(|(code, (ran, worked, _))| *code != 0 && *ran >= min && ran == worked)
            .map(|(exit_code, (_, worked, needed))| HandlerRule {
                exit_code,
                retries_that_worked: worked,
                max_retries: needed.max(1) + 1,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_from_a_normalized_line_matches_the_raw_lines() {
        let raws = [
            "frobnicator wobbled: quux level 7 on node031".to_string(),
            "frobnicator wobbled: quux level 12 on node007".to_string(),
        ];
        let summary = normalize_line(&raws[0]);
        let p = pattern_from_summary(&summary);
        assert!(matches_all(&p, &raws), "{p} vs {raws:?}");
        assert!(!Regex::new(&p).is_ok_and(|re| re.is_match("SyntaxError: invalid syntax")));
        let p = pattern_from_line("error 42 in (stage 3)");
        assert!(matches_all(&p, &["error 7 in (stage 19)".to_string()]), "{p}");
    }
}
