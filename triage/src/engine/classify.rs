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
use super::validate::Proposal;
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
    /// Judge (and in [`Mode::Apply`], apply) each classification. Unknown jobs and signatures
    /// are reported per classification; a job named twice is judged once (the first wins).
    pub async fn classify(
        &self,
        workflow_id: i64,
        classifications: &[Classification],
        source: &str,
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
        for (job_id, via, c) in targets {
            let job = match self.backend.job(workflow_id, job_id).await {
                Ok(j) => j,
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
            };
            let proposal = Proposal {
                action: c.action,
                reason: c.reason.clone(),
                source: source.to_string(),
                memory: c.memory.clone(),
                runtime: c.runtime.clone(),
                confidence: c.confidence,
                override_catalog: c.override_catalog,
                attempt_id: c.attempt_id,
            };
            let not_pending = job.status != JobStatus::PendingFailed;
            let ev = self.evidence(&info, job).await?;
            let mut entry = self.judge(&ev, Some(proposal), false, mode);
            if not_pending && entry.outcome == Outcome::Skipped {
                entry
                    .notes
                    .push(format!("job {job_id} is not pending_failed; only pending_failed jobs can be classified"));
            }
            if mode == Mode::Apply && entry.outcome == Outcome::WouldApply {
                entry = self.apply(workflow_id, &entry, who).await;
            }
            results.push(ClassifyResult { via_signature: via, entry });
        }
        Ok((results, unmatched))
    }
}
