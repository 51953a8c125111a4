//! Asking the person before anything moves: the approval form (MCP form elicitation), the
//! reading of the answer, and the approvals waiting for a client's second round.
//!
//! The form has one boolean per approvable item (moves that differ only in their job ids; see
//! `triage::engine::approval`). Only an explicit `true` approves an item: an unchecked box, a
//! missing field or a decline approves nothing. An answer that does not fit the form (a field
//! the form did not ask, a value that is not a boolean) approves nothing either, and says why.
//!
//! Two ways the question travels, as the client's protocol revision decides:
//! - up to 2025-11-25, an `elicitation/create` request to the client while the tool call waits;
//! - from 2026-07-28 (no server-to-client requests), the tool call answers `input_required`
//!   with the form, and the client calls again with the person's answer and the opaque
//!   `requestState`. The state is a random handle to what this server judged, kept here: the
//!   moves offered cannot be changed by whoever echoes it, it is answered once, and it expires.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{
    BooleanSchema, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, PrimitiveSchemaDefinition,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use triage::engine::approval::ApprovalItem;
use triage::engine::classify::{ClassifyResult, Unmatched};

/// How long a person has to answer a 2026-07-28 approval round before it expires, and how
/// long an `elicitation/create` request waits for them.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(15 * 60);

/// At most this many items on one form; a call with more distinct moves is asked to split.
pub const MAX_ITEMS: usize = 40;

/// The key of the approval request in an `input_required` answer.
pub const INPUT_KEY: &str = "approval";

/// What the person answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Accepted, approving the items with these keys (maybe none).
    Approved(Vec<String>),
    Declined,
    Cancelled,
    /// The answer did not fit the form.
    Malformed(String),
    /// The client could not ask (an error, a timeout).
    Failed(String),
}

impl Answer {
    /// The answer's name in the tool result.
    pub fn as_str(&self) -> &'static str {
        match self {
            Answer::Approved(_) => "accept",
            Answer::Declined => "decline",
            Answer::Cancelled => "cancel",
            Answer::Malformed(_) => "malformed",
            Answer::Failed(_) => "error",
        }
    }
}

/// The approval part of a classify answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApprovalOut {
    /// `elicit`, `never` or `required` (the server's `--confirm`).
    pub policy: String,
    /// Whether the person was asked.
    pub asked: bool,
    /// `elicitation/create` or `input_required`, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// `accept`, `decline`, `cancel`, `malformed`, `error`; or, when nobody was asked,
    /// `not_needed` (nothing to approve), `not_asked` (policy `never`, or `elicit` with a
    /// client that cannot be asked) or `unavailable` (policy `required`, client cannot be asked).
    pub answer: String,
    /// What was offered.
    pub items: Vec<ApprovalItem>,
    /// Keys of the items the person approved.
    pub approved: Vec<String>,
    /// A plan the person can apply themselves (`triage apply --plan FILE`), when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    pub message: String,
}

/// The form that asks the person about `items`.
pub fn form(workflow_id: i64, agent: &str, items: &[ApprovalItem], not_offered: usize) -> ElicitRequestParams {
    let jobs: usize = items.iter().map(|i| i.job_ids.len()).sum();
    let mut message = format!(
        "Approve changes to workflow {workflow_id}? The agent `{agent}` classified these jobs and triage's validation allows {} move{} ({jobs} job{}). Tick each move to apply; anything left unticked stays as it is. Reasons are the agent's words.",
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        if jobs == 1 { "" } else { "s" },
    );
    if not_offered > 0 {
        message.push_str(&format!(
            " {not_offered} other job{} need{} a person's review and {} not offered here.",
            if not_offered == 1 { "" } else { "s" },
            if not_offered == 1 { "s" } else { "" },
            if not_offered == 1 { "is" } else { "are" }
        ));
    }
    let properties: BTreeMap<String, PrimitiveSchemaDefinition> = items
        .iter()
        .map(|item| {
            let field = BooleanSchema::new().title(item.title()).description(item.description()).with_default(false);
            (item.key.clone(), PrimitiveSchemaDefinition::Boolean(field))
        })
        .collect();
    let requested_schema = ElicitationSchema::new(properties);
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }
}

/// Read the person's answer against the items offered.
pub fn read(result: &ElicitResult, items: &[ApprovalItem]) -> Answer {
    match result.action {
        ElicitationAction::Decline => Answer::Declined,
        ElicitationAction::Cancel => Answer::Cancelled,
        ElicitationAction::Accept => {
            let Some(content) = &result.content else { return Answer::Approved(vec![]) };
            let Value::Object(fields) = content else {
                return Answer::Malformed(format!("the answer's content is not an object: {content}"));
            };
            let mut approved = Vec::new();
            for (key, value) in fields {
                if !items.iter().any(|i| &i.key == key) {
                    return Answer::Malformed(format!("the answer has a field the form did not ask: `{key}`"));
                }
                match value {
                    Value::Bool(true) => approved.push(key.clone()),
                    Value::Bool(false) => {}
                    other => {
                        return Answer::Malformed(format!("`{key}` must be true or false, the answer gave {other}"));
                    }
                }
            }
            approved.sort();
            Answer::Approved(approved)
        }
        #[allow(unreachable_patterns)]
        _ => Answer::Malformed("an answer action this server does not know".into()),
    }
}

/// Read the `input_required` round's answer (`inputResponses.approval`).
pub fn read_input_response(responses: Option<&rmcp::model::InputResponses>, items: &[ApprovalItem]) -> Answer {
    let Some(value) = responses.and_then(|r| r.get(INPUT_KEY)) else {
        return Answer::Malformed(format!(
            "the call carries no `inputResponses.{INPUT_KEY}`: the approval was not answered"
        ));
    };
    match serde_json::from_value::<ElicitResult>(value.clone()) {
        Ok(result) => read(&result, items),
        Err(e) => Answer::Malformed(format!("`inputResponses.{INPUT_KEY}` is not an elicitation result: {e}")),
    }
}

/// A judged call waiting for the person's answer (2026-07-28 round trip).
pub struct Pending {
    pub workflow_id: i64,
    /// The call's arguments as this server read them; the second round must repeat them.
    pub arguments: String,
    pub results: Vec<ClassifyResult>,
    pub unmatched: Vec<Unmatched>,
    pub items: Vec<ApprovalItem>,
    pub agent: String,
    pub client: String,
    created: Instant,
}

impl Pending {
    pub fn new(
        workflow_id: i64,
        arguments: String,
        results: Vec<ClassifyResult>,
        unmatched: Vec<Unmatched>,
        items: Vec<ApprovalItem>,
        agent: String,
        client: String,
    ) -> Pending {
        Pending { workflow_id, arguments, results, unmatched, items, agent, client, created: Instant::now() }
    }
}

/// Approvals waiting for their second round, by handle.
#[derive(Default)]
pub struct PendingApprovals {
    waiting: Mutex<HashMap<String, Pending>>,
}

/// At most this many approvals wait at once; the oldest is dropped past it.
const MAX_WAITING: usize = 256;

impl PendingApprovals {
    /// Keep `pending` and return its handle (128 random bits).
    pub fn put(&self, pending: Pending) -> String {
        let handle = uuid::Uuid::new_v4().simple().to_string();
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.retain(|_, p| p.created.elapsed() < ANSWER_WITHIN);
        if waiting.len() >= MAX_WAITING
            && let Some(oldest) = waiting.iter().min_by_key(|(_, p)| p.created).map(|(k, _)| k.clone())
        {
            waiting.remove(&oldest);
        }
        waiting.insert(handle.clone(), pending);
        handle
    }

    /// Take the approval `handle` names, once; `None` if unknown, answered or expired.
    pub fn take(&self, handle: &str) -> Option<Pending> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.remove(handle).filter(|p| p.created.elapsed() < ANSWER_WITHIN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use triage::engine::ValidationStatus;
    use triage::model::Action;

    fn items() -> Vec<ApprovalItem> {
        ["move_01", "move_02"]
            .iter()
            .map(|k| ApprovalItem {
                key: k.to_string(),
                action: Action::Retry,
                job_ids: vec![1],
                signature: "s".into(),
                reason: "r".into(),
                validation: ValidationStatus::Accepted,
                resources: None,
                summary: "x".into(),
            })
            .collect()
    }

    fn accept(content: Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn only_explicit_true_approves() {
        let a = read(&accept(json!({"move_01": true, "move_02": false})), &items());
        assert_eq!(a, Answer::Approved(vec!["move_01".into()]));
        assert_eq!(read(&accept(json!({})), &items()), Answer::Approved(vec![]));
        assert_eq!(read(&ElicitResult::new(ElicitationAction::Decline), &items()), Answer::Declined);
        assert_eq!(read(&ElicitResult::new(ElicitationAction::Cancel), &items()), Answer::Cancelled);
    }

    #[test]
    fn answers_that_do_not_fit_approve_nothing() {
        assert!(
            matches!(read(&accept(json!({"move_01": "yes"})), &items()), Answer::Malformed(m) if m.contains("move_01"))
        );
        assert!(
            matches!(read(&accept(json!({"move_99": true})), &items()), Answer::Malformed(m) if m.contains("move_99"))
        );
        assert!(matches!(read(&accept(json!([true])), &items()), Answer::Malformed(_)));
        assert!(matches!(read_input_response(None, &items()), Answer::Malformed(_)));
    }

    #[test]
    fn the_form_offers_each_item_unticked() {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } =
            form(4, "claude", &items(), 3)
        else {
            panic!("a form")
        };
        assert!(message.contains("workflow 4") && message.contains("3 other jobs need"), "{message}");
        let schema = serde_json::to_value(&requested_schema).unwrap();
        assert_eq!(schema["properties"]["move_02"]["type"], "boolean");
        assert_eq!(schema["properties"]["move_02"]["default"], false);
    }

    #[test]
    fn a_handle_is_answered_once() {
        let store = PendingApprovals::default();
        let h = store.put(Pending::new(1, "{}".into(), vec![], vec![], items(), "a".into(), "c".into()));
        assert!(store.take(&h).is_some());
        assert!(store.take(&h).is_none());
        assert!(store.take("not-a-handle").is_none());
    }
}
