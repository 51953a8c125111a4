//! `classify_and_resolve_failures`: validate classifications and apply, record or report them;
//! with `dry_run: false`, ask the person first when the policy says so (`--confirm`).
//!
//! The approval flow, for a call that would apply (`confirm` is `elicit` with a client that
//! declares form elicitation, or `required`):
//! 1. judge every classification without moving anything (a dry run);
//! 2. offer the person the moves validation allows (`would_apply`), grouped; jobs that need
//!    review are never offered;
//! 3. apply only what they approved, re-checked against the workflow at that moment, with the
//!    person recorded as approver beside the agent that proposed.
//!
//! Decline, cancel, a malformed answer or a failed question change nothing and say so. With
//! `required` and a client that cannot be asked, nothing is applied: the dry run is written as
//! a plan the person can apply with `triage apply --plan FILE`.

use std::path::PathBuf;

use rmcp::model::{CallToolResponse, ElicitRequest, InputRequest, InputRequests, InputRequiredResult};
use rmcp::{Peer, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use triage::engine::approval::{Approval, approval_items};
use triage::engine::classify::{ClassifyResult, Unmatched};
use triage::engine::{Confirm, Mode, Outcome, PLAN_FORMAT_VERSION, Plan, Summary};
use triage::model::Classification;

use crate::approval::{self, Answer, ApprovalOut, Pending};
use crate::render;
use crate::state::{ServerMode, State};

const MAX_CLASSIFICATIONS: usize = 10_000;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassifyArgs {
    /// Workflow id.
    #[serde(deserialize_with = "crate::lenient::int")]
    pub workflow_id: i64,
    /// One per job (`job_id`) or per failure group (`signature`).
    pub classifications: Vec<Classification>,
    /// Only report what would happen (default true). Set false to apply.
    #[serde(default, deserialize_with = "crate::lenient::opt_bool")]
    pub dry_run: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassifyOut {
    pub workflow_id: i64,
    /// Whether nothing was (or could have been) applied by this call.
    pub dry_run: bool,
    /// `normal`, `read_only` or `propose_only` (validated and recorded, nothing applied).
    pub mode: String,
    pub results: Vec<ClassifyResult>,
    /// Classifications that matched no job, with why.
    pub unmatched: Vec<Unmatched>,
    pub summary: Summary,
    /// The person's approval, for a call with `dry_run` false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalOut>,
    pub next_steps: String,
}

/// Who is calling and how they can be asked, from the request's context.
pub struct Caller {
    /// The client's name for itself.
    pub client: Option<String>,
    /// The client declared form elicitation.
    pub can_elicit: bool,
    /// Protocol 2026-07-28 or newer: ask with `input_required`, not `elicitation/create`.
    pub round_trip: bool,
    pub peer: Peer<RoleServer>,
    /// The second round of an `input_required` approval: its handle and the answers.
    pub request_state: Option<String>,
    pub input_responses: Option<rmcp::model::InputResponses>,
}

pub async fn run(state: &State, args: ClassifyArgs, caller: Caller) -> Result<CallToolResponse, String> {
    state.check_workflow(args.workflow_id)?;
    if let Some(handle) = caller.request_state.clone() {
        return second_round(state, &args, &caller, &handle).await.map(Into::into);
    }
    if args.classifications.is_empty() {
        return Err("`classifications` is empty; give at least one {job_id or signature, action, reason}".into());
    }
    if args.classifications.len() > MAX_CLASSIFICATIONS {
        return Err(format!(
            "{} classifications in one call; send at most {MAX_CLASSIFICATIONS} (use `signature` to cover a whole group)",
            args.classifications.len()
        ));
    }
    let dry_run = args.dry_run.unwrap_or(true);
    let mode = match (state.mode, dry_run) {
        (ServerMode::ProposeOnly, _) => Mode::ProposeOnly,
        (ServerMode::ReadOnly, false) => {
            return Err("this server is read-only (--read-only): nothing can change a job; call with dry_run true, or ask the person to apply".into());
        }
        (_, true) => Mode::DryRun,
        (ServerMode::Normal, false) => Mode::Apply,
    };
    let agent = state.agent_name(caller.client.clone());
    let confirm = state.engine.policy.confirm;
    let ask =
        mode == Mode::Apply && (confirm == Confirm::Required || (confirm == Confirm::Elicit && caller.can_elicit));
    if !ask {
        let who = format!("triage-mcp ({agent})");
        let (results, unmatched) = judge(state, &args, &agent, mode, &who).await?;
        if let (Mode::ProposeOnly, Some(log)) = (mode, &state.proposals) {
            log.record(args.workflow_id, &results).map_err(|e| e.to_string())?;
        }
        let approval = (mode == Mode::Apply).then(|| ApprovalOut {
            policy: confirm.as_str().into(),
            asked: false,
            channel: None,
            answer: "not_asked".into(),
            items: vec![],
            approved: vec![],
            plan: None,
            message: match confirm {
                Confirm::Never => "the server does not ask (--confirm never): validation alone decided".into(),
                _ => "the client cannot be asked (it declares no form elicitation): validation alone decided; start the server with --confirm required to apply nothing unapproved".into(),
            },
        });
        return answer(state, args.workflow_id, mode, results, unmatched, approval).map(Into::into);
    }

    // Judge without moving anything, then ask the person about what validation allows.
    let (results, unmatched) = judge(state, &args, &agent, Mode::DryRun, "triage-mcp").await?;
    let items = approval_items(&entries(&results));
    let mut out = ApprovalOut {
        policy: confirm.as_str().into(),
        asked: false,
        channel: None,
        answer: "not_needed".into(),
        items: items.clone(),
        approved: vec![],
        plan: None,
        message: "nothing to approve: no classification passed validation; nothing changed".into(),
    };
    if items.is_empty() {
        return answer(state, args.workflow_id, Mode::DryRun, results, unmatched, Some(out)).map(Into::into);
    }
    if items.len() > approval::MAX_ITEMS {
        return Err(format!(
            "{} distinct moves to approve; one approval form holds at most {}. Nothing changed: classify fewer groups per call (one call per few signatures)",
            items.len(),
            approval::MAX_ITEMS
        ));
    }
    let not_offered = results.iter().filter(|r| r.entry.outcome == Outcome::NeedsReview).count();
    let client = caller.client.clone().unwrap_or_else(|| "an unnamed MCP client".into());
    if !caller.can_elicit {
        let plan = write_plan(state, args.workflow_id, &agent, &results)?;
        out.answer = "unavailable".into();
        out.message = format!(
            "this server requires a person's approval (--confirm required) and the client cannot ask them (no form elicitation): nothing changed. The person can review and apply these moves with `triage apply --plan {}` (each is re-checked first), or use a client that supports elicitation",
            plan.display()
        );
        out.plan = Some(plan.display().to_string());
        return answer(state, args.workflow_id, Mode::DryRun, results, unmatched, Some(out)).map(Into::into);
    }
    let form = approval::form(args.workflow_id, &agent, &items, not_offered);
    if caller.round_trip {
        let arguments = serde_json::to_string(&args).map_err(|e| format!("internal error: {e}"))?;
        let pending = Pending::new(args.workflow_id, arguments, results, unmatched, items, agent, client);
        let handle = state.approvals.put(pending);
        let mut requests = InputRequests::new();
        requests.insert(approval::INPUT_KEY.into(), InputRequest::Elicitation(ElicitRequest::new(form)));
        return Ok(InputRequiredResult::new(Some(requests), Some(handle)).into());
    }
    let reply = match caller.peer.create_elicitation_with_timeout(form, Some(approval::ANSWER_WITHIN)).await {
        Ok(result) => approval::read(&result, &items),
        Err(e) => Answer::Failed(format!("asking the person failed: {e}")),
    };
    let pending = Pending::new(args.workflow_id, String::new(), results, unmatched, items, agent, client);
    finish(state, pending, reply, "elicitation/create", confirm).await.map(Into::into)
}

/// The call again, with the person's answer (protocol 2026-07-28's `input_required` round).
async fn second_round(
    state: &State,
    args: &ClassifyArgs,
    caller: &Caller,
    handle: &str,
) -> Result<rmcp::model::CallToolResult, String> {
    let pending = state.approvals.take(handle).ok_or_else(|| {
        "this approval is unknown, already answered or expired (a person has 15 minutes): nothing changed; call classify_and_resolve_failures again without requestState".to_string()
    })?;
    let arguments = serde_json::to_string(args).map_err(|e| format!("internal error: {e}"))?;
    if arguments != pending.arguments || args.workflow_id != pending.workflow_id {
        return Err("the arguments differ from the call the person was asked about: nothing changed; call again without requestState to be asked about the new classifications".into());
    }
    let reply = approval::read_input_response(caller.input_responses.as_ref(), &pending.items);
    finish(state, pending, reply, "input_required", state.engine.policy.confirm).await
}

/// Apply what the person approved (nothing, unless they accepted) and answer the agent.
async fn finish(
    state: &State,
    pending: Pending,
    reply: Answer,
    channel: &str,
    confirm: Confirm,
) -> Result<rmcp::model::CallToolResult, String> {
    let Pending { workflow_id, mut results, unmatched, items, agent, client, .. } = pending;
    let mut out = ApprovalOut {
        policy: confirm.as_str().into(),
        asked: true,
        channel: Some(channel.into()),
        answer: reply.as_str().into(),
        items,
        approved: vec![],
        plan: None,
        message: String::new(),
    };
    let approved_keys = match &reply {
        Answer::Approved(keys) => keys.clone(),
        Answer::Declined => {
            out.message = "the person declined: nothing changed".into();
            vec![]
        }
        Answer::Cancelled => {
            out.message = "the person cancelled (dismissed the question): nothing changed".into();
            vec![]
        }
        Answer::Malformed(why) | Answer::Failed(why) => {
            out.message = format!("{why}: nothing changed");
            vec![]
        }
    };
    let approved_jobs: Vec<i64> =
        out.items.iter().filter(|i| approved_keys.contains(&i.key)).flat_map(|i| i.job_ids.iter().copied()).collect();
    out.approved = approved_keys;
    let mut mode = Mode::DryRun;
    if matches!(reply, Answer::Approved(_)) {
        let chosen: Vec<_> =
            results.iter().filter(|r| approved_jobs.contains(&r.entry.job_id)).map(|r| r.entry.clone()).collect();
        let approval = Approval::by_person(&client, channel);
        out.message = format!(
            "the person approved {} of {} moves ({} jobs); each was re-checked before it was applied; anything not approved is unchanged",
            out.approved.len(),
            out.items.len(),
            chosen.len()
        );
        if !chosen.is_empty() {
            mode = Mode::Apply;
            let who = format!("triage-mcp ({agent}), approved by {}", approval.describe());
            let (applied, events) = state.engine.apply_approved(workflow_id, chosen, &approval, &who).await;
            for e in events.iter().filter(|e| e.kind == "error") {
                tracing::warn!("{}", e.reason);
            }
            for updated in applied {
                if let Some(r) = results.iter_mut().find(|r| r.entry.job_id == updated.job_id) {
                    r.entry = updated;
                }
            }
        }
    }
    for r in results.iter_mut().filter(|r| r.entry.outcome == Outcome::WouldApply) {
        r.entry.notes.push("not approved by the person: nothing changed".into());
    }
    answer(state, workflow_id, mode, results, unmatched, Some(out))
}

/// Judge (and in `Mode::Apply`, apply) the classifications as `agent`'s.
async fn judge(
    state: &State,
    args: &ClassifyArgs,
    agent: &str,
    mode: Mode,
    who: &str,
) -> Result<(Vec<ClassifyResult>, Vec<Unmatched>), String> {
    state.engine.classify(args.workflow_id, &args.classifications, agent, mode, who).await.map_err(|e| {
        state.metrics.record_backend_error(&state.engine.backend.describe());
        e.to_string()
    })
}

fn entries(results: &[ClassifyResult]) -> Vec<triage::engine::PlanJob> {
    results.iter().map(|r| r.entry.clone()).collect()
}

/// The answer the agent reads.
fn answer(
    state: &State,
    workflow_id: i64,
    mode: Mode,
    results: Vec<ClassifyResult>,
    unmatched: Vec<Unmatched>,
    approval: Option<ApprovalOut>,
) -> Result<rmcp::model::CallToolResult, String> {
    state.metrics.record_jobs(results.iter().map(|r| &r.entry));
    let summary = Summary::of(results.iter().map(|r| &r.entry));
    let next_steps = match (&approval, mode) {
        (Some(a), _) if a.asked || a.answer == "unavailable" || a.answer == "not_needed" => {
            format!("{}. Tell the person what happened; do not retry the call to get a different answer.", a.message)
        }
        (_, Mode::DryRun) => "Dry run: nothing changed. Show these results to the person; jobs marked would_apply can be applied by calling again with dry_run false. Reconsider conflicts and rejections, or leave them for review.".into(),
        (_, Mode::ProposeOnly) => "Recorded: nothing changed. triage applies what passes validation after you finish. Reconsider conflicts and rejections if you have better evidence.".into(),
        (_, Mode::Apply) => "Applied where the outcome says applied; jobs marked needs_review or skipped were left as they are.".into(),
    };
    let out = ClassifyOut {
        workflow_id,
        dry_run: mode != Mode::Apply,
        mode: state.mode.as_str().into(),
        results,
        unmatched,
        summary,
        approval,
        next_steps,
    };
    let text = render::classify(&out);
    crate::tools::respond(&out, text)
}

/// Write the judged call as a plan the person can apply themselves, under the state folder.
fn write_plan(state: &State, workflow_id: i64, agent: &str, results: &[ClassifyResult]) -> Result<PathBuf, String> {
    let now = jiff::Timestamp::now();
    let mut plan = Plan {
        format: PLAN_FORMAT_VERSION,
        workflow_id,
        backend: state.engine.backend.describe(),
        dry_run: true,
        agent: agent.into(),
        catalog_version: state.engine.catalog.version().to_string(),
        created_at: now,
        jobs: entries(results),
        events: vec![],
        summary: Summary::default(),
        agent_output: vec![],
    };
    plan.summarize();
    let dir = state.plans_dir();
    let stamp = now.strftime("%Y%m%dT%H%M%S%.fZ").to_string().replace('.', "");
    let path = dir.join(format!("workflow-{workflow_id}-{stamp}.json"));
    let mut json = serde_json::to_vec_pretty(&plan).map_err(|e| format!("internal error: {e}"))?;
    json.push(b'\n');
    std::fs::create_dir_all(&dir)
        .and_then(|()| triage::fsutil::write_atomic(&path, &json))
        .map_err(|e| format!("cannot write the plan for the person to {}: {e}; nothing changed", path.display()))?;
    Ok(path)
}
