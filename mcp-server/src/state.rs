//! What every tool call shares: the engine, the mode the server runs in, and the
//! propose-only log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use triage::config::{BackendFlags, load_catalog, load_policy};
use triage::engine::Engine;

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
    proposals: Option<(PathBuf, Mutex<File>)>,
}

impl State {
    pub fn from_args(args: &Args) -> anyhow::Result<Arc<State>> {
        let flags = BackendFlags {
            backend: args.backend.clone(),
            api_url: args.api_url.clone(),
            torc_output_dir: args.torc_output_dir.clone(),
        };
        let mut policy = load_policy(args.policy.as_deref())?;
        let backend = flags.open_with(&policy.resilience)?;
        let catalog = Arc::new(load_catalog(&args.catalogs)?);
        if args.allow_overrides {
            policy.allow_overrides = true;
        }
        let proposals = match &args.propose_only {
            Some(path) => {
                let file = OpenOptions::new().create(true).append(true).open(path).with_context(|| {
                    format!(
                        "cannot open the propose-only log {}; give a writable path to --propose-only",
                        path.display()
                    )
                })?;
                Some((path.clone(), Mutex::new(file)))
            }
            None => None,
        };
        let mode = if proposals.is_some() {
            ServerMode::ProposeOnly
        } else if args.read_only {
            ServerMode::ReadOnly
        } else {
            ServerMode::Normal
        };
        tracing::info!(
            backend = backend.describe(),
            mode = mode.as_str(),
            catalog = catalog.version(),
            "triage-mcp ready"
        );
        Ok(Arc::new(State {
            engine: Engine::new(backend, catalog, policy),
            workflow: args.workflow,
            mode,
            agent_name: args.agent_name.clone(),
            max_answer_bytes: args.max_answer_bytes,
            proposals,
        }))
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

    /// Append records to the propose-only log, one JSON object per line, flushed.
    pub fn record(&self, records: &[serde_json::Value]) -> Result<(), String> {
        let Some((path, file)) = &self.proposals else { return Ok(()) };
        let mut buf = String::new();
        for r in records {
            buf.push_str(&r.to_string());
            buf.push('\n');
        }
        let mut f =
            file.lock().map_err(|_| "the propose-only log is unavailable after an earlier failure".to_string())?;
        f.write_all(buf.as_bytes())
            .and_then(|_| f.sync_data())
            .map_err(|e| format!("cannot write the propose-only log {}: {e}", path.display()))
    }
}
