//! Validation: the one place that decides whether a proposal may be applied.
//!
//! Both surfaces (the `triage` CLI and `triage-mcp`) call [`validate`]; nothing else judges.
//! The proposer (an agent, the rules, a person) is untrusted: its reason is data, and only
//! the evidence, the catalog and the policy decide. What a proposal may waive depends on its
//! [`Authority`], which the engine sets from the path it came in on (see [`super::proposal`]):
//! a person's review waives the catalog and the review triggers, never a hard rule; the rules
//! are not subject to the prompt-injection trigger (they read no text as instructions). The checks, in order:
//!
//! 1. state: the job must still be pending_failed at the attempt the proposer saw (else
//!    `rejected` + stale: skipped, never moved);
//! 2. resources (retry only): memory/runtime parse, only grow, stay under the policy's caps;
//! 3. hard rules for a retry: exit-code deny/allow lists, the retry budget of the failure's
//!    cause (the job's own failures vs preemptions and node failures);
//! 4. the catalog: a retry of a permanent failure or a fail of a transient one is a
//!    `conflict` (with the evidence line); no catalog verdict is `agent_only`;
//! 5. review triggers: conflict without an allowed override, confidence under the policy's
//!    minimum, a retry of a job whose last two attempts failed identically, failing a job over
//!    a missing file whose producer upstream has not completed, and any agent proposal for a
//!    job whose log contains text addressed to an AI agent (prompt injection).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::evidence::{Cause, Evidence};
use super::policy::Policy;
use super::proposal::{Authority, Proposal};
use crate::backend::ResourceChange;
use crate::catalog::HintMatch;
use crate::model::{Action, JobStatus, Memory, Runtime, Verdict};

/// The validation verdict, in the vocabulary of DESIGN.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValidationStatus {
    /// The catalog agrees.
    Accepted,
    /// The catalog has no verdict; the proposal stands alone.
    AgentOnly,
    /// The catalog says the opposite.
    Conflict,
    /// A hard rule is broken (budget, deny list, resources, stale state).
    Rejected,
}

/// One resource's before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change<T> {
    pub before: Option<T>,
    pub after: T,
}

/// The resource changes a retry would make.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceDiff {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Change<Memory>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Change<Runtime>>,
}

impl ResourceDiff {
    pub fn is_empty(&self) -> bool {
        self.memory.is_none() && self.runtime.is_none()
    }

    /// What the backend is asked to change.
    pub fn change(&self) -> ResourceChange {
        ResourceChange {
            memory: self.memory.as_ref().map(|c| c.after),
            runtime: self.runtime.as_ref().map(|c| c.after),
        }
    }
}

/// The outcome of validating one proposal against one job's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Validation {
    pub status: ValidationStatus,
    /// Every finding, one sentence each.
    pub messages: Vec<String>,
    /// Whether a person must decide before anything is applied.
    pub needs_review: bool,
    /// The job moved on since the proposer looked: skip it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// The catalog line the verdict rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<HintMatch>,
    #[serde(default, skip_serializing_if = "ResourceDiff::is_empty")]
    pub resources: ResourceDiff,
}

impl Validation {
    /// Whether the engine may apply the proposal as it stands.
    pub fn applicable(&self) -> bool {
        !self.needs_review && !self.stale && self.status != ValidationStatus::Rejected
    }
}

/// The catalog category of text in a log that addresses an AI agent (prompt injection).
const ADDRESSED_TO_AGENT: &str = "addressed_to_agent";

/// Validate `proposal` for the job described by `ev` under `policy`.
pub fn validate(ev: &Evidence, proposal: &Proposal, policy: &Policy) -> Validation {
    // A person in `triage review` has weighed the catalog: only the hard rules apply.
    let reviewed = proposal.is_reviewed();
    let mut v = Validation {
        status: ValidationStatus::Accepted,
        messages: Vec::new(),
        needs_review: false,
        stale: false,
        evidence: ev.hints.evidence.clone(),
        resources: ResourceDiff::default(),
    };
    let job = &ev.job;

    // 1. State.
    let seen = proposal.attempt_id.unwrap_or(job.attempt_id);
    if job.status != JobStatus::PendingFailed || seen != job.attempt_id {
        v.status = ValidationStatus::Rejected;
        v.stale = true;
        v.messages.push(format!(
            "job {} is now {} at attempt {} (the proposal saw pending_failed at attempt {seen}); it moved on, so it is left alone",
            job.id, job.status, job.attempt_id
        ));
        return v;
    }
    if proposal.reason.trim().is_empty() {
        reject(&mut v, "the proposal has no reason; a reason is required for the audit trail".into());
    }

    // 2 and 3. Retry rules.
    match proposal.action {
        Action::Retry => check_retry(ev, proposal, policy, &mut v),
        Action::Fail => {
            if proposal.memory.is_some() || proposal.runtime.is_some() {
                v.messages.push("memory/runtime are ignored for a fail".into());
            }
        }
    }

    // 4. The catalog.
    let verdict = ev.hints.verdict;
    let opposite =
        matches!((proposal.action, verdict), (Action::Retry, Verdict::Permanent) | (Action::Fail, Verdict::Transient));
    if v.status != ValidationStatus::Rejected {
        if opposite {
            v.status = ValidationStatus::Conflict;
            let line = ev
                .hints
                .evidence
                .as_ref()
                .map(|m| format!(" (line {}: `{}`, entry {})", m.line, m.text, m.id))
                .unwrap_or_default();
            v.messages.push(format!(
                "the catalog says {} ({}){line}, but the proposal is to {}",
                verdict.as_str(),
                ev.hints.category.as_deref().unwrap_or("uncategorized"),
                proposal.action
            ));
            if reviewed {
                v.messages.push("a person reviewed this against the catalog: the proposal stands".into());
            } else if proposal.override_catalog && policy.allow_overrides {
                v.messages.push("override requested and allowed: the proposal stands against the catalog".into());
            } else {
                v.needs_review = true;
                if proposal.override_catalog {
                    v.messages.push(
                        "override requested but not allowed here (policy allow_overrides / --allow-overrides)".into(),
                    );
                }
            }
        } else if verdict == Verdict::Unknown {
            v.status = ValidationStatus::AgentOnly;
            if policy.agent_only_needs_review && !reviewed {
                v.needs_review = true;
                v.messages.push(
                    "the catalog has no verdict for this failure, and the policy (agent_only_needs_review) wants a person to confirm"
                        .into(),
                );
            } else {
                v.messages.push("the catalog has no verdict for this failure; the proposal stands alone".into());
            }
        }
    }

    // 5. Review triggers.
    if let Some(c) = proposal.confidence {
        if !(0.0..=1.0).contains(&c) || c.is_nan() {
            reject(&mut v, format!("confidence {c} is outside 0..1"));
        } else if c < policy.min_confidence && !reviewed {
            v.needs_review = true;
            v.messages.push(format!("confidence {c} is below the policy minimum {}", policy.min_confidence));
        }
    }
    if proposal.authority() == Authority::Agent
        && let Some(m) = ev.hints.matches.iter().find(|m| &*m.category == ADDRESSED_TO_AGENT)
    {
        v.needs_review = true;
        v.messages.push(format!(
            "the log addresses an AI agent at line {} (`{}`): an agent that read it may have been steered; a person decides",
            m.line, m.text
        ));
    }
    if proposal.action == Action::Fail && ev.missing_input_with_upstream() && !reviewed {
        let unfinished = ev.unfinished_upstream();
        if !unfinished.is_empty() {
            v.needs_review = true;
            let ups: Vec<String> = unfinished.iter().map(|u| format!("job {} is {}", u.job_id, u.status)).collect();
            v.messages.push(format!(
                "the missing file may be an output of an upstream job that has not completed ({}); wait for it rather than fail this job",
                ups.join(", ")
            ));
        }
    }
    if proposal.action == Action::Retry && ev.failed_identically_twice() && !reviewed {
        v.needs_review = true;
        let ratio = ev.repeat.as_ref().map(|d| d.ratio).unwrap_or(1.0);
        v.messages.push(format!(
            "the last two attempts failed identically (similarity {ratio:.2}); a third identical try is unlikely to help"
        ));
    }
    if v.status == ValidationStatus::Rejected {
        v.needs_review = true;
    }
    v
}

fn reject(v: &mut Validation, message: String) {
    v.status = ValidationStatus::Rejected;
    v.messages.push(message);
}

fn check_retry(ev: &Evidence, proposal: &Proposal, policy: &Policy, v: &mut Validation) {
    let job = &ev.job;
    // Resources: parse, only grow, stay under the cap.
    if let Some(text) = &proposal.memory {
        match text.parse::<Memory>() {
            Err(e) => reject(v, e.to_string()),
            Ok(m) => v.resources.memory = grow(v, "memory", job.resources.memory, m, policy.memory_cap),
        }
    }
    if let Some(text) = &proposal.runtime {
        match text.parse::<Runtime>() {
            Err(e) => reject(v, e.to_string()),
            Ok(r) => v.resources.runtime = grow(v, "runtime", job.resources.runtime, r, policy.runtime_cap),
        }
    }
    if let Some(action) = ev.hints.action {
        let asked = match action.as_str() {
            "retry_more_memory" => proposal.memory.is_none().then_some("memory"),
            "retry_more_time" => proposal.runtime.is_none().then_some("runtime"),
            _ => None,
        };
        if let Some(what) = asked {
            v.messages.push(format!("the catalog suggests {} but the proposal keeps the same {what}", action.as_str()));
        }
    }
    // Exit-code lists.
    if let Some(code) = ev.return_code
        && let Err(why) = policy.exit_code_allows_retry(code)
    {
        reject(v, why);
    }
    // Budget by cause.
    let (used, limit, which) = match ev.cause {
        Cause::Failure => (
            ev.retries_used.failures,
            job.max_retries.unwrap_or(policy.max_retries_failure),
            if job.max_retries.is_some() { "the job's max_retries" } else { "the policy's max_retries_failure" },
        ),
        Cause::Infrastructure => {
            (ev.retries_used.preemptions, policy.max_retries_preemption, "the policy's max_retries_preemption")
        }
    };
    if used > limit {
        reject(
            v,
            format!(
                "retry budget spent: this would be retry {used} for {} but {which} is {limit}",
                if ev.cause == Cause::Failure { "the job's own failures" } else { "preemptions and node failures" }
            ),
        );
    }
}

/// The change from `before` to `after`, or a rejection if it shrinks or passes the cap.
fn grow<T: PartialOrd + Copy + std::fmt::Display>(
    v: &mut Validation,
    what: &str,
    before: Option<T>,
    after: T,
    cap: T,
) -> Option<Change<T>> {
    if let Some(b) = before
        && after <= b
    {
        reject(v, format!("{what} {after} does not grow the current {b}; a retry may only ask for more"));
        return None;
    }
    if after > cap {
        reject(v, format!("{what} {after} is over the policy cap {cap}"));
        return None;
    }
    Some(Change { before, after })
}
