//! Agents: the processes that propose classifications. Triage spawns one non-interactively
//! against a `triage-mcp` in propose-only mode, waits (with a timeout that kills its process
//! group), and reads back what it proposed. Everything the agent says is untrusted data: its
//! proposals are validated by the engine like anyone's, its output is saved for a person.
//!
//! - [`process`]: spawning, process groups, timeouts, captured output;
//! - [`clis`]: the command line of each agent CLI (Claude Code, Copilot, Codex, Gemini, or any
//!   command) and how to tell from its output whether it failed, and why;
//!
//! What the agent proposed is read back through the engine's propose-only contract
//! ([`crate::engine::propose_log`]), which makes every proposal the agent's.

pub mod clis;
pub mod process;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which agent proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// The first of claude, copilot, codex, gemini on PATH, else rules (degraded mode).
    Auto,
    Claude,
    Copilot,
    Codex,
    Gemini,
    /// Any command (`--agent-cmd`), with the contract in DESIGN.md.
    Command,
    /// No process: the catalog's verdicts.
    Rules,
}

impl AgentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Auto => "auto",
            AgentKind::Claude => "claude",
            AgentKind::Copilot => "copilot",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Command => "command",
            AgentKind::Rules => "rules",
        }
    }

    /// The executable an agent CLI is installed as.
    pub fn binary(self) -> Option<&'static str> {
        match self {
            AgentKind::Claude => Some("claude"),
            AgentKind::Copilot => Some("copilot"),
            AgentKind::Codex => Some("codex"),
            AgentKind::Gemini => Some("gemini"),
            _ => None,
        }
    }

    /// `auto` resolved: the first agent CLI found on PATH, else rules.
    pub fn resolve_auto() -> AgentKind {
        [AgentKind::Claude, AgentKind::Copilot, AgentKind::Codex, AgentKind::Gemini]
            .into_iter()
            .find(|k| k.binary().and_then(find_on_path).is_some())
            .unwrap_or(AgentKind::Rules)
    }
}

/// The full path of `program` on PATH, if it is there.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| is_executable(p))
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Why an agent run did not produce usable proposals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum AgentFailure {
    #[error("not installed: {0}")]
    NotInstalled(String),
    #[error("timed out after {0} s; its process group was killed")]
    Timeout(u64),
    #[error("exited with status {0}")]
    Crashed(String),
    #[error("authentication failed: {0}")]
    Auth(String),
    #[error("network or service unavailable: {0}")]
    Network(String),
    #[error("invalid request (flags, model or context): {0}")]
    InvalidRequest(String),
    #[error("it reported an error: {0}")]
    Reported(String),
    #[error("it proposed nothing")]
    NoProposals,
    #[error("circuit open: {0}")]
    CircuitOpen(String),
    /// Triage got a signal while the agent ran: the agent's whole process group was killed.
    /// Not retried, no fallback: the run stops (exit status 128 + the signal's number).
    #[error("{name} received: stopped the agent (its whole process group)")]
    Interrupted { name: String, number: i32 },
}

impl AgentFailure {
    /// Worth retrying after a backoff (seed 004: not for auth, invalid requests, or an
    /// agent that is not there).
    pub fn is_transient(&self) -> bool {
        matches!(self, AgentFailure::Timeout(_) | AgentFailure::Network(_) | AgentFailure::Crashed(_))
    }
}

/// What an agent run needs to know.
#[derive(Debug, Clone)]
pub struct AgentSetup {
    pub workflow_id: i64,
    /// `triage-mcp` and the arguments that point it at the same backend, catalog and policy.
    pub mcp_command: String,
    pub mcp_args: Vec<String>,
    /// Environment variables the server needs (the client's own is filtered).
    pub mcp_env: Vec<(String, String)>,
    /// The rendered prompt.
    pub prompt: String,
    /// The folder for this run's files: MCP config, prompt, proposals, captured output.
    pub work_dir: PathBuf,
    pub timeout: Duration,
    pub max_turns: u32,
    /// For `--agent command`.
    pub agent_cmd: Option<String>,
    /// Extra arguments appended to an agent CLI's command line (`--agent-arg`).
    pub extra_args: Vec<String>,
}
