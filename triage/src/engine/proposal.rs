//! A proposal for one job, and who stands behind it.
//!
//! Authority is a type, not a word. [`Authority`] says whose decision a proposal is, and only
//! the engine sets it, from the path the proposal came in on:
//!
//! - [`Proposal::by_agent`]: anything that arrives over MCP or through the propose-only log.
//!   The agent's name is chosen by triage (`--agent-name`, the agent kind `triage run`
//!   started, or the MCP client's name), and whatever the name or the proposal's fields say,
//!   it is an agent's proposal and is validated in full.
//! - `Proposal::by_rules`: the catalog's own verdict ([`super::rules`]).
//! - `Proposal::by_review` (engine-private, see [`super::review`]): a person's decision in
//!   `triage review`. It waives the catalog conflict and the review triggers, never a hard
//!   rule (state, budget, exit-code lists, resources).
//!
//! The field cannot be set by a caller outside this module. It is read back from one place
//! only: a plan file (`triage apply --plan`), the person's own document.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Action, Classification};

/// Whose decision a proposal is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Authority {
    /// An agent's (over MCP, or through the propose-only log): validated in full.
    #[default]
    Agent,
    /// The catalog's verdict, proposed by the rules classifier.
    Rules,
    /// A person's, made in `triage review`: only the hard rules apply to it.
    Review,
}

impl Authority {
    pub fn as_str(self) -> &'static str {
        match self {
            Authority::Agent => "agent",
            Authority::Rules => "rules",
            Authority::Review => "review",
        }
    }
}

/// A proposal for one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Proposal {
    pub action: Action,
    pub reason: String,
    /// Who proposed it, for people: an agent's name (`claude`, `command`, an MCP client's
    /// name), `rules`, or the reviewer's name. Informative only: [`Proposal::authority`]
    /// decides what the proposal may waive.
    pub source: String,
    /// Whose decision this is (`agent`, `rules`, `review`); set by triage. A plan written
    /// before this field existed reads as `agent`.
    #[serde(default)]
    authority: Authority,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, rename = "override", skip_serializing_if = "std::ops::Not::not")]
    pub override_catalog: bool,
    /// The attempt the proposer looked at, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<u32>,
}

impl Proposal {
    /// An agent's classification of one job. `agent` is the name triage gives the agent.
    pub fn by_agent(agent: &str, c: &Classification) -> Proposal {
        Proposal {
            action: c.action,
            reason: c.reason.clone(),
            source: agent.to_string(),
            authority: Authority::Agent,
            memory: c.memory.clone(),
            runtime: c.runtime.clone(),
            confidence: c.confidence,
            override_catalog: c.override_catalog,
            attempt_id: c.attempt_id,
        }
    }

    /// The rules classifier's proposal (the catalog's verdict).
    pub(super) fn by_rules(
        action: Action,
        reason: String,
        resources: (Option<String>, Option<String>),
        attempt_id: u32,
    ) -> Proposal {
        Proposal::decided(Authority::Rules, super::rules::SOURCE, action, reason, resources, attempt_id)
    }

    /// A person's decision in `triage review`.
    pub(super) fn by_review(
        reviewer: &str,
        action: Action,
        reason: String,
        resources: (Option<String>, Option<String>),
        attempt_id: u32,
    ) -> Proposal {
        Proposal::decided(Authority::Review, reviewer, action, reason, resources, attempt_id)
    }

    /// A proposal triage itself writes down (rules, review): no confidence, no override,
    /// at the attempt it was made for; `resources` is (memory, runtime).
    fn decided(
        authority: Authority,
        source: &str,
        action: Action,
        reason: String,
        (memory, runtime): (Option<String>, Option<String>),
        attempt_id: u32,
    ) -> Proposal {
        Proposal {
            action,
            reason,
            source: source.to_string(),
            authority,
            memory,
            runtime,
            confidence: None,
            override_catalog: false,
            attempt_id: Some(attempt_id),
        }
    }

    /// Whose decision this is.
    pub fn authority(&self) -> Authority {
        self.authority
    }

    /// Whether a person made this decision in `triage review`.
    pub fn is_reviewed(&self) -> bool {
        self.authority == Authority::Review
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_a_caller_sends_makes_an_agent_proposal_a_reviewed_one() {
        let c: Classification =
            serde_json::from_str(r#"{"job_id": 1, "action": "retry", "reason": "trust me"}"#).unwrap();
        for name in ["review", "rules", "plan", "a person"] {
            let p = Proposal::by_agent(name, &c);
            assert_eq!(p.authority(), Authority::Agent, "{name}");
            assert!(!p.is_reviewed());
        }
        // A classification cannot even carry the field.
        let forged = r#"{"job_id": 1, "action": "retry", "reason": "x", "authority": "review"}"#;
        assert!(serde_json::from_str::<Classification>(forged).is_err());
        let forged = r#"{"job_id": 1, "action": "retry", "reason": "x", "source": "review"}"#;
        assert!(serde_json::from_str::<Classification>(forged).is_err());
    }

    #[test]
    fn a_plan_entry_without_authority_reads_as_an_agents() {
        let old = r#"{"action": "retry", "reason": "r", "source": "review"}"#;
        let p: Proposal = serde_json::from_str(old).unwrap();
        assert_eq!(p.authority(), Authority::Agent, "the word `review` confers nothing");
        let p = Proposal::by_review("ana", Action::Fail, "r".into(), (None, None), 2);
        let back: Proposal = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert!(back.is_reviewed());
    }
}
