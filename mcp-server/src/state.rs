//! What every tool call shares: the engine, the mode the server runs in, and the
//! propose-only log.

use std::sync::Arc;

use triage::engine::Engine;
use triage::engine::propose_log::ProposeLog;
use triage::settings::Settings;

use crate::args::Args;

/// How far the server may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMode {
    /// Classifications may be applied (with `dry_run: false`).
    Normal,
    /// Nothing changes a job.
    ReadOnly,
    /// Classifications are validated and recorded; no job changes.
    ProposeOnly,
}

impl ServerMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerMode::Normal => "normal",
            ServerMode::ReadOnly => "read_only",
            ServerMode::ProposeOnly => "propose_only",
        }
    }
}

pub struct State {
    pub engine: Engine,
    pub workflow: Option<i64>,
    pub mode: ServerMode,
    pub agent_name: Option<String>,
    /// `--max-answer-bytes`: the largest answer a tool may give.
    pub max_answer_bytes: Option<u32>,
    /// The propose-only log, in propose-only mode.
    pub proposals: Option<ProposeLog>,
    /// Served at `/metrics` over `--http`: jobs judged by the classify tool, backend errors.
    pub metrics: triage::metrics::Metrics,
    /// Approvals waiting for the client's second round (protocol 2026-07-28).
    pub approvals: crate::approval::PendingApprovals,
}

impl State {
    pub fn from_args(args: &Args) -> anyhow::Result<Arc<State>> {
        let mut settings = Settings::resolve(&args.settings)?;
        if args.allow_overrides {
            settings.policy.allow_overrides = true;
        }
        if let Some(confirm) = args.confirm {
            settings.policy.confirm = confirm;
        }
        let engine = settings.engine()?;
        let proposals = args.propose_only.as_deref().map(ProposeLog::open).transpose()?;
        let mode = if proposals.is_some() {
            ServerMode::ProposeOnly
        } else if args.read_only {
            ServerMode::ReadOnly
        } else {
            ServerMode::Normal
        };
        tracing::info!(
            backend = engine.backend.describe(),
            mode = mode.as_str(),
            catalog = engine.catalog.version(),
            confirm = engine.policy.confirm.as_str(),
            "triage-mcp ready"
        );
        Ok(Arc::new(State {
            engine,
            workflow: args.workflow,
            mode,
            agent_name: args.agent_name.clone(),
            max_answer_bytes: args.max_answer_bytes,
            proposals,
            metrics: triage::metrics::Metrics::new(),
            approvals: Default::default(),
        }))
    }

    /// Where plans for a person are written (`--confirm required` with a client that cannot
    /// ask): `$TRIAGE_STATE_DIR/mcp/plans`.
    pub fn plans_dir(&self) -> std::path::PathBuf {
        triage::resilience::CircuitBook::default_dir().join("mcp").join("plans")
    }

    /// Refuse workflows other than the one the server is restricted to.
    pub fn check_workflow(&self, workflow_id: i64) -> Result<(), String> {
        match self.workflow {
            Some(w) if w != workflow_id => Err(format!(
                "this server serves only workflow {w} (started with --workflow {w}); workflow {workflow_id} is not available here"
            )),
            _ => Ok(()),
        }
    }

    /// The name a caller's proposals go under: `--agent-name` when the server was started
    /// with one (as `triage run` does), else the client's own name, else `agent`. A name is
    /// only a label: whatever it says, the proposal is an agent's.
    pub fn agent_name(&self, client: Option<String>) -> String {
        self.agent_name.clone().or(client).filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "agent".into())
    }
}
