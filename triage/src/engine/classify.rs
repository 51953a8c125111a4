//! Classifications from an agent (the MCP tool `classify_and_resolve_failures`): expand
//! signatures to jobs, judge each against fresh evidence, and apply, record or report.
//!
//! The per-job result carries `validation` and `outcome` exactly as in a plan, so the agent,
//! the CLI and the person reviewing all read one vocabulary.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::group::Grouping;
use super::plan::{Outcome, PlanJob};
use super::proposal::Proposal;
use super::{Engine, Mode};
use crate::backend::BackendError;
use crate::model::{Classification, JobStatus};

/// The result for one classification (one per job; a signature yields one per member).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClassifyResult {
    /// The signature the job was reached through, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via_signature: Option<String>,
    #[serde(flatten)]
    pub entry: PlanJob,
}

/// A classification that could not be matched to any job.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Unmatched {
    pub index: usize,
    pub error: String,
}

impl Engine {
    /// Judge (and in [`Mode::Apply`], apply) each classification as `agent`'s: whatever the
    /// caller is called, what comes in here is an agent's proposal ([`Proposal::by_agent`]).
    /// Each job is read once, validated once on that evidence, and moved under the backend's
    /// guard. Unknown jobs and signatures are reported per classification; a job named twice
    /// is judged once (the first wins).
    pub async fn classify(
        &self,
        workflow_id: i64,
        classifications: &[Classification],
        agent: &str,
        mode: Mode,
        who: &str,
    ) -> Result<(Vec<ClassifyResult>, Vec<Unmatched>), BackendError> {
        let info = self.backend.workflow(workflow_id).await?;
        if mode == Mode::Apply {
            for e in self.recover(workflow_id).await {
                tracing::warn!(kind = e.kind, "{}", e.reason);
            }
        }
        let mut unmatched = Vec::new();
        let mut targets: Vec<(i64, Option<String>, &Classification)> = Vec::new();
        let needs_groups = classifications.iter().any(|c| c.job_id.is_none() && c.signature.is_some());
        let grouping = if needs_groups {
            let (_, evidence) = self.pending(workflow_id).await?;
            Some((Grouping::new(&evidence), evidence))
        } else {
            None
        };
        let mut seen = BTreeSet::new();
        for (index, c) in classifications.iter().enumerate() {
            let ids: Vec<(i64, Option<String>)> = match (&c.job_id, &c.signature) {
                (Some(id), _) => vec![(*id, None)],
                (None, Some(sig)) => {
                    let members = grouping.as_ref().and_then(|(g, ev)| g.members_of(ev, sig));
                    match members {
                        Some(ids) => ids.into_iter().map(|id| (id, Some(sig.clone()))).collect(),
                        None => {
                            unmatched.push(Unmatched {
                                index,
                                error: format!("signature `{sig}` matches no pending_failed job of workflow {workflow_id}; take signatures from list_pending_failed_jobs"),
                            });
                            continue;
                        }
                    }
                }
                (None, None) => {
                    unmatched.push(Unmatched { index, error: "give `job_id` or `signature`".into() });
                    continue;
                }
            };
            for (id, sig) in ids {
                if seen.insert(id) {
                    targets.push((id, sig, c));
                } else {
                    unmatched.push(Unmatched {
                        index,
                        error: format!("job {id} was already classified earlier in this call; ignored"),
                    });
                }
            }
        }
        let mut results = Vec::with_capacity(targets.len());
        // Evidence already gathered for the signatures' groups is reused, not read again.
        let gathered: std::collections::HashMap<i64, &super::Evidence> =
            grouping.as_ref().map(|(_, ev)| ev.iter().map(|e| (e.job.id, e)).collect()).unwrap_or_default();
        for (job_id, via, c) in targets {
            let ev = match gathered.get(&job_id) {
                Some(ev) => (*ev).clone(),
                None => match self.backend.job(workflow_id, job_id).await {
                    Ok(job) => self.evidence(&info, job).await?,
                    Err(BackendError::JobNotFound { .. }) => {
                        unmatched.push(Unmatched {
                            index: classifications.iter().position(|x| std::ptr::eq(x, c)).unwrap_or(0),
                            error: format!(
                                "job {job_id} is not in workflow {workflow_id}; take job ids from list_pending_failed_jobs"
                            ),
                        });
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            let mut entry = self.judge(&ev, Some(Proposal::by_agent(agent, c)), false, mode);
            if ev.job.status != JobStatus::PendingFailed && entry.outcome == Outcome::Skipped {
                entry
                    .notes
                    .push(format!("job {job_id} is not pending_failed; only pending_failed jobs can be classified"));
            }
            results.push(ClassifyResult { via_signature: via, entry });
        }
        if mode == Mode::Apply {
            let mut entries: Vec<_> = results.iter().map(|r| r.entry.clone()).collect();
            self.apply_ready(workflow_id, &mut entries, who).await;
            for (r, entry) in results.iter_mut().zip(entries) {
                r.entry = entry;
            }
        }
        Ok((results, unmatched))
    }
}
