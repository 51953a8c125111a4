//! A person's approval of moves an agent proposed, asked for in the person's own client.
//!
//! `triage-mcp` can ask the person behind an MCP client to approve what an agent classified
//! before anything moves (MCP elicitation). This module is the engine's side of it, free of the
//! protocol:
//!
//! - [`approval_items`] turns judged entries into the short list a person is shown: only the
//!   entries validation found applicable (`would_apply`) are offered; a job that needs review
//!   is never approvable here. Entries with the same signature, action, reason, validation
//!   status and resource change become one item, so a group of 10,000 jobs is one line.
//! - [`Engine::apply_approved`] applies the approved entries after re-checking each one
//!   against the workflow as it is at that moment (a job that moved on while the person read
//!   the form is skipped; validation runs again under the current policy).
//!
//! An [`Approval`] is a record, never a permission: it is written into the audit trail apart
//! from the proposer, and the move is still validated as the agent's proposal. The person's
//! word decides only whether a move that validation allows happens.

use std::collections::BTreeMap;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::plan::{Outcome, PlanJob, RunEvent};
use super::validate::ValidationStatus;
use super::{Engine, Mode};
use crate::model::Action;

/// Who approved a move, and how they were asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// Always `person`: the answer came from the person's client, not from the agent.
    pub by: String,
    /// The MCP client the person answered in, as it names itself.
    pub client: String,
    /// How the question travelled: `elicitation/create` (protocol 2025-11-25 and earlier) or
    /// `input_required` (the 2026-07-28 multi round-trip request).
    pub channel: String,
    #[schemars(with = "String")]
    pub at: Timestamp,
}

impl Approval {
    /// An approval given now by the person using `client`, asked over `channel`.
    pub fn by_person(client: &str, channel: &str) -> Approval {
        Approval { by: "person".into(), client: client.into(), channel: channel.into(), at: Timestamp::now() }
    }

    /// "a person via CLIENT", for audit `who` fields and messages.
    pub fn describe(&self) -> String {
        format!("a {} via {}", self.by, self.client)
    }
}

/// One line of the approval form: moves that only differ in their job ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalItem {
    /// The answer's field name for this item (`move_01`, `move_02`, ...).
    pub key: String,
    pub action: Action,
    pub job_ids: Vec<i64>,
    pub signature: String,
    /// The proposer's reason (the agent's words).
    pub reason: String,
    pub validation: ValidationStatus,
    /// The resource change a retry makes, in words (`memory 4g -> 8g`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<String>,
    /// The failure in a few words (the catalog's summary of the first job).
    pub summary: String,
}

impl ApprovalItem {
    /// A one-line title: action, how many jobs, which.
    pub fn title(&self) -> String {
        let jobs = match self.job_ids.as_slice() {
            [one] => format!("job {one}"),
            many if many.len() <= 5 => {
                format!("jobs {}", many.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
            }
            many => format!("{} jobs ({} .. {})", many.len(), many[0], many[many.len() - 1]),
        };
        let what = match self.action {
            Action::Retry => "Retry",
            Action::Fail => "Fail",
        };
        match &self.resources {
            Some(r) => format!("{what} {jobs} with {r}"),
            None => format!("{what} {jobs}"),
        }
    }

    /// The longer text under the title: the failure, the validation status, the reason.
    pub fn description(&self) -> String {
        let consequence = match self.action {
            Action::Retry => "runs again",
            Action::Fail => "marked failed; jobs that depend on it are canceled",
        };
        format!(
            "{} | validation: {} | {} | agent's reason: {}",
            self.summary,
            crate::model::serde_name(&self.validation),
            consequence,
            self.reason
        )
    }
}

/// The items a person can approve among `entries`: the `would_apply` ones, grouped.
pub fn approval_items(entries: &[PlanJob]) -> Vec<ApprovalItem> {
    let mut groups: BTreeMap<(String, &'static str, String, String, String), ApprovalItem> = BTreeMap::new();
    let mut order = Vec::new();
    for e in entries.iter().filter(|e| e.outcome == Outcome::WouldApply) {
        let Some(p) = &e.proposed else { continue };
        let resources = describe_resources(e);
        let status = crate::model::serde_name(&e.validation.status);
        let k =
            (e.signature.clone(), p.action.as_str(), p.reason.clone(), status, resources.clone().unwrap_or_default());
        match groups.get_mut(&k) {
            Some(item) => item.job_ids.push(e.job_id),
            None => {
                order.push(k.clone());
                groups.insert(
                    k,
                    ApprovalItem {
                        key: String::new(),
                        action: p.action,
                        job_ids: vec![e.job_id],
                        signature: e.signature.clone(),
                        reason: p.reason.clone(),
                        validation: e.validation.status,
                        resources,
                        summary: e.summary.clone(),
                    },
                );
            }
        }
    }
    order
        .into_iter()
        .enumerate()
        .filter_map(|(i, k)| {
            let mut item = groups.remove(&k)?;
            item.key = format!("move_{:02}", i + 1);
            Some(item)
        })
        .collect()
}

fn describe_resources(e: &PlanJob) -> Option<String> {
    let r = &e.validation.resources;
    let mut parts = Vec::new();
    if let Some(m) = &r.memory {
        parts.push(format!("memory {} -> {}", m.before.map_or("unset".into(), |b| b.to_string()), m.after));
    }
    if let Some(t) = &r.runtime {
        parts.push(format!("runtime {} -> {}", t.before.map_or("unset".into(), |b| b.to_string()), t.after));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

impl Engine {
    /// Apply `approved` (entries judged `would_apply` that a person approved): interrupted
    /// moves of an earlier process are resolved first, then each entry is re-checked against
    /// one fresh read of the workflow and validated again under the current policy, and the
    /// ones still applicable are moved under the backend's guard, with `approval` in their
    /// audit records. Returns the entries with their outcomes, and the events on the way.
    pub async fn apply_approved(
        &self,
        workflow_id: i64,
        approved: Vec<PlanJob>,
        approval: &Approval,
        who: &str,
    ) -> (Vec<PlanJob>, Vec<RunEvent>) {
        let mut events = self.recover(workflow_id).await;
        let entries: Vec<PlanJob> = approved
            .into_iter()
            .map(|mut e| {
                e.approved_by = Some(approval.clone());
                e
            })
            .collect();
        let mut emit = |e: RunEvent| {
            if e.kind != "progress" {
                events.push(e);
            }
        };
        let out = self.recheck_and_move(workflow_id, entries, Mode::Apply, who, false, &mut emit).await;
        (out, events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_name_the_jobs_briefly() {
        let mut item = ApprovalItem {
            key: "move_01".into(),
            action: Action::Retry,
            job_ids: vec![7],
            signature: "s".into(),
            reason: "node failure".into(),
            validation: ValidationStatus::Accepted,
            resources: Some("memory 4g -> 8g".into()),
            summary: "NODE_FAIL".into(),
        };
        assert_eq!(item.title(), "Retry job 7 with memory 4g -> 8g");
        item.job_ids = (1..=12).collect();
        item.resources = None;
        item.action = Action::Fail;
        assert_eq!(item.title(), "Fail 12 jobs (1 .. 12)");
        assert!(item.description().contains("validation: accepted"), "{}", item.description());
        assert!(item.description().contains("agent's reason: node failure"));
    }
}
