//! The command line of each agent, and how to read its outcome: one file per agent CLI
//! (`claude`, `copilot`, `codex`, `gemini`: its flags and the error shape of its output),
//! `outcome` for judging a finished run; this file writes the files every agent reads and
//! starts the agent.
//!
//! Every agent gets the same three things: an MCP configuration naming only `triage-mcp` (in
//! propose-only mode), the rendered prompt, and the workflow id (DESIGN.md, agent contract).
//! Each CLI gets them through its own flags, limited to the four triage tools, with
//! machine-readable output and a turn limit. A run is judged by its output, not only its exit
//! status (Claude Code not logged in exits 0 and says `"is_error": true`).

use std::path::Path;

mod claude;
mod codex;
mod copilot;
mod gemini;
mod outcome;

use super::process;
use super::{AgentFailure, AgentKind, AgentSetup, find_on_path};
use crate::engine::propose_log;

/// The four tools, as agents must be allowed to call them.
pub const TOOLS: [&str; 4] =
    ["list_pending_failed_jobs", "tail_job_stderr", "get_pattern_hints", "classify_and_resolve_failures"];

pub use codex::CODEX_TOOL_OUTPUT_TOKENS;
pub use copilot::COPILOT_MAX_ANSWER_BYTES;
pub use outcome::judge;

/// A program to start: argv, extra environment, and a file for stdin.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Option<std::path::PathBuf>,
    pub cwd: Option<std::path::PathBuf>,
}

/// Run agent `kind` once (attempt `n`) and return what it proposed (read back through the
/// propose-only contract: every proposal is this agent's).
pub async fn run_once(
    kind: AgentKind,
    setup: &AgentSetup,
    n: u32,
    proposals_file: &Path,
) -> Result<propose_log::ReadBack, AgentFailure> {
    let files =
        write_files(setup).map_err(|e| AgentFailure::Crashed(format!("cannot write the agent's files: {e}")))?;
    let inv = invocation(kind, setup, &files)?;
    let name = format!("{}-{n}", kind.as_str());
    let finished = process::run(&inv, &setup.work_dir, &name, setup.timeout)
        .await
        .map_err(|e| AgentFailure::NotInstalled(format!("cannot start `{}`: {e}", inv.program)))?;
    judge(kind, &finished, setup.timeout.as_secs())?;
    let back = propose_log::read(proposals_file, kind.as_str(), setup.workflow_id);
    if back.proposals.is_empty() {
        return Err(if back.unreadable > 0 {
            AgentFailure::Reported(format!("{} unreadable proposal records", back.unreadable))
        } else {
            AgentFailure::NoProposals
        });
    }
    Ok(back)
}

/// The files every agent reads: the MCP configuration and the prompt.
pub struct AgentFiles {
    pub mcp_config: std::path::PathBuf,
    pub prompt: std::path::PathBuf,
}

fn write_files(setup: &AgentSetup) -> std::io::Result<AgentFiles> {
    std::fs::create_dir_all(&setup.work_dir)?;
    let mcp_config = setup.work_dir.join("mcp-config.json");
    let config = serde_json::json!({"mcpServers": {"triage": {
        "command": setup.mcp_command, "args": setup.mcp_args, "env": env_object(setup)}}});
    std::fs::write(&mcp_config, serde_json::to_vec_pretty(&config)?)?;
    let prompt = setup.work_dir.join("prompt.md");
    std::fs::write(&prompt, &setup.prompt)?;
    Ok(AgentFiles { mcp_config, prompt })
}

/// The environment of the agent contract, given to every agent.
fn contract_env(setup: &AgentSetup, files: &AgentFiles) -> Vec<(String, String)> {
    vec![
        ("TRIAGE_MCP_CONFIG".into(), files.mcp_config.display().to_string()),
        ("TRIAGE_PROMPT_FILE".into(), files.prompt.display().to_string()),
        ("TRIAGE_WORKFLOW_ID".into(), setup.workflow_id.to_string()),
    ]
}

/// How to start agent `kind`.
pub fn invocation(kind: AgentKind, setup: &AgentSetup, files: &AgentFiles) -> Result<Invocation, AgentFailure> {
    let env = contract_env(setup, files);
    if kind == AgentKind::Command {
        let cmd = setup
            .agent_cmd
            .clone()
            .ok_or_else(|| AgentFailure::InvalidRequest("--agent command needs --agent-cmd CMD".into()))?;
        return Ok(Invocation { program: "sh".into(), args: vec!["-c".into(), cmd], env, stdin: None, cwd: None });
    }
    let bin = kind
        .binary()
        .ok_or_else(|| AgentFailure::InvalidRequest(format!("`{}` is not an agent CLI", kind.as_str())))?;
    let program = find_on_path(bin)
        .ok_or_else(|| {
            AgentFailure::NotInstalled(format!("`{bin}` is not on PATH; install it or choose another --agent"))
        })?
        .display()
        .to_string();
    let mut inv = cli_invocation(kind, setup, files)?;
    inv.program = program;
    inv.env.extend(env);
    Ok(inv)
}

/// The argv of each agent CLI. The flags were read from each CLI's `--help` and checked
/// against the real binaries (claude-code 2.1, copilot 1.0, codex 0.169, gemini-cli 0.61): see
/// the README's "Agents" section. The prompt always goes on stdin (no 128 KiB argv limit).
fn cli_invocation(kind: AgentKind, setup: &AgentSetup, files: &AgentFiles) -> Result<Invocation, AgentFailure> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut args = match kind {
        AgentKind::Claude => claude::args(setup, files, &mut env)?,
        AgentKind::Copilot => copilot::args(setup, files, &mut env)?,
        AgentKind::Codex => codex::args(setup, files, &mut env)?,
        AgentKind::Gemini => gemini::args(setup, files, &mut env)?,
        other => return Err(AgentFailure::InvalidRequest(format!("`{}` is not an agent CLI", other.as_str()))),
    };
    if kind != AgentKind::Codex {
        // Codex places them itself, before its `-` (prompt on stdin).
        args.extend(setup.extra_args.iter().cloned());
    }
    Ok(Invocation {
        program: String::new(),
        args,
        env,
        stdin: Some(files.prompt.clone()),
        cwd: Some(setup.work_dir.clone()),
    })
}

/// The server's environment as a JSON object (the shape every client's configuration takes).
fn env_object(setup: &AgentSetup) -> serde_json::Value {
    serde_json::Value::Object(setup.mcp_env.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect())
}

/// `&["a", "b"]` as owned strings.
fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
