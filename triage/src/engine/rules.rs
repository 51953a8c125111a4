//! The rules classifier: the catalog's verdict as a proposal, used when no agent is available
//! (degraded mode) and as the fallback for jobs an agent left alone.
//!
//! transient → retry (with the policy's growth when the catalog suggests more memory or time),
//! permanent → fail, unknown → no proposal (a person decides). One exception, from seed 000: a
//! missing file in a job that has upstream producers may be an upstream output, so the rules
//! leave it to a person (or an agent that can look) instead of failing it.

use super::evidence::Evidence;
use super::policy::Policy;
use super::proposal::Proposal;
use crate::model::{SuggestedAction, Verdict};

/// The `source` of the rules' proposals.
pub const SOURCE: &str = "rules";

/// The proposal the catalog's verdict makes for this job, or why it makes none.
pub fn propose(ev: &Evidence, policy: &Policy) -> Result<Proposal, String> {
    let hints = &ev.hints;
    let action = match hints.verdict {
        Verdict::Transient => crate::model::Action::Retry,
        Verdict::Permanent if ev.missing_input_with_upstream() => {
            let ups: Vec<String> = ev.upstream.iter().map(|u| format!("job {} is {}", u.job_id, u.status)).collect();
            return Err(format!(
                "a missing file in a job with upstream producers ({}) may be an upstream output, a wrong path, or shared-filesystem lag: the catalog alone cannot tell",
                ups.join(", ")
            ));
        }
        Verdict::Permanent => crate::model::Action::Fail,
        Verdict::Unknown => {
            return Err(format!(
                "the catalog has no verdict ({})",
                hints.category.as_deref().unwrap_or("no pattern matched")
            ));
        }
    };
    let evidence = hints
        .evidence
        .as_ref()
        .map(|m| if m.line > 0 { format!(": line {}: {}", m.line, m.text) } else { format!(": {}", m.text) })
        .unwrap_or_default();
    let mut reason =
        format!("catalog: {} {}{evidence}", hints.verdict.as_str(), hints.category.as_deref().unwrap_or("failure"),);
    let (mut memory, mut runtime) = (None, None);
    match hints.action {
        Some(SuggestedAction::RetryMoreMemory) => match ev.job.resources.memory {
            Some(m) => memory = Some(m.scaled(policy.memory_growth).min(policy.memory_cap).to_string()),
            None => reason.push_str(" (more memory suggested, but the job states none to grow)"),
        },
        Some(SuggestedAction::RetryMoreTime) => match ev.job.resources.runtime {
            Some(r) => runtime = Some(r.scaled(policy.runtime_growth).min(policy.runtime_cap).to_string()),
            None => reason.push_str(" (more time suggested, but the job states none to grow)"),
        },
        _ => {}
    }
    Ok(Proposal::by_rules(action, reason, (memory, runtime), ev.job.attempt_id))
}
