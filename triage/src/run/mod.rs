//! `triage run`: gather the evidence, let an agent (or the rules) propose, validate every
//! proposal, and apply what passes, or only report it. The orchestration lives here so the
//! CLI stays a thin shell around it.
//!
//! The agent chain (seed 004): the chosen agent, then each `--fallback` in turn, each behind
//! its circuit breaker and retried with backoff on transient failures; `rules` in the chain
//! means the catalog's verdicts (degraded mode, announced); past the end of the chain every
//! job needs a person. Every retry, fallback, degradation and circuit change is a [`RunEvent`].

mod chain;

use std::collections::BTreeSet;
use std::path::PathBuf;

pub use chain::{AgentChoice, Interrupted};

use crate::agent::AgentKind;
use crate::backend::BackendError;

/// Why a run stopped without a plan.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}
use crate::engine::{Engine, Mode, PLAN_FORMAT_VERSION, Plan, RunEvent};

/// Everything `triage run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub workflow_id: i64,
    pub dry_run: bool,
    /// The agent, then the fallbacks, in order.
    pub chain: Vec<AgentKind>,
    pub agent_cmd: Option<String>,
    /// Extra arguments for the agent CLI (`--agent-arg`).
    pub agent_args: Vec<String>,
    /// The prompt template (placeholders filled per run).
    pub prompt_template: String,
    /// Where this run's agent files go (MCP config, prompt, proposals, captured output).
    pub work_dir: PathBuf,
    /// `triage-mcp` and the arguments that select the same backend, catalog and policy.
    pub mcp_command: String,
    pub mcp_args: Vec<String>,
    /// The environment that server needs (`Settings::server_env`).
    pub mcp_env: Vec<(String, String)>,
    pub seed: u64,
    pub max_turns: u32,
    pub state_dir: PathBuf,
    pub resilience_off: bool,
    /// Triage only these jobs of the workflow (`triage watch`'s batch); `None`: every
    /// pending_failed job. The others are left as they are, and a proposal for one is ignored.
    pub only_jobs: Option<BTreeSet<i64>>,
    /// Who the audit trail names for the moves (`triage run`, `triage watch`), with the
    /// proposer in brackets.
    pub actor: String,
}

/// Run the whole job; `on_event` sees each event as it happens (for progress display).
pub async fn run(engine: &Engine, opts: &RunOptions, on_event: &(dyn Fn(&RunEvent) + Sync)) -> Result<Plan, RunError> {
    let mut events = Vec::new();
    let mut emit = |e: RunEvent| {
        on_event(&e);
        events.push(e);
    };
    let info = engine.backend.workflow(opts.workflow_id).await?;
    if !info.use_pending_failed {
        emit(RunEvent::now(
            "warning",
            &engine.backend.describe(),
            format!(
                "workflow {} has use_pending_failed = false: failed jobs go straight to failed and nothing new will reach pending_failed",
                info.id
            ),
        ));
    }
    if !opts.dry_run {
        for e in engine.recover(opts.workflow_id).await {
            emit(e);
        }
    }
    let (_, mut evidence) = engine.pending(opts.workflow_id).await?;
    let all = evidence.len();
    if let Some(only) = &opts.only_jobs {
        evidence.retain(|ev| only.contains(&ev.job.id));
    }
    emit(RunEvent::now(
        "progress",
        "triage",
        match &opts.only_jobs {
            None => format!("{all} pending_failed jobs in workflow {}", info.id),
            Some(_) => {
                format!("{} of the {all} pending_failed jobs in workflow {} in this batch", evidence.len(), info.id)
            }
        },
    ));

    let choice = if evidence.is_empty() {
        AgentChoice::nobody()
    } else {
        chain::choose(engine, opts, &evidence, &mut emit).await?
    };
    for id in choice.proposals.keys() {
        if !evidence.iter().any(|e| e.job.id == *id) {
            emit(RunEvent::now(
                "warning",
                &choice.agent,
                match &opts.only_jobs {
                    None => format!("proposed job {id}, which is not pending_failed in this workflow; ignored"),
                    Some(_) => format!("proposed job {id}, which is not pending_failed in this batch; ignored"),
                },
            ));
        }
    }

    // The authoritative validation: each proposal judged once, on the evidence gathered
    // above (what the agent was shown), then moved under the backend's guard, which skips a
    // job that moved on while the agent ran. The agent's server validated too, but only to
    // tell the agent; nothing it recorded decides here.
    let mode = if opts.dry_run { Mode::DryRun } else { Mode::Apply };
    let who = format!("{} ({})", opts.actor, choice.agent);
    let mut jobs: Vec<_> = evidence
        .iter()
        .map(|ev| engine.judge(ev, choice.proposals.get(&ev.job.id).cloned(), choice.rules_fallback, mode))
        .collect();
    if mode == Mode::Apply {
        engine.apply_ready(opts.workflow_id, &mut jobs, &who).await;
    }
    let mut plan = Plan {
        format: PLAN_FORMAT_VERSION,
        workflow_id: opts.workflow_id,
        backend: engine.backend.describe(),
        dry_run: opts.dry_run,
        agent: choice.agent,
        catalog_version: engine.catalog.version().to_string(),
        created_at: jiff::Timestamp::now(),
        jobs,
        events: Vec::new(),
        summary: Default::default(),
        agent_output: choice.outputs,
    };
    plan.summarize();
    plan.events = events;
    Ok(plan)
}
