//! The command line of each agent, and how to read its outcome.
//!
//! Every agent gets the same three things: an MCP configuration naming only `triage-mcp` (in
//! propose-only mode), the rendered prompt, and the workflow id (DESIGN.md, agent contract).
//! Each CLI gets them through its own flags, limited to the four triage tools, with
//! machine-readable output and a turn limit. A run is judged by its output, not only its exit
//! status (Claude Code not logged in exits 0 and says `"is_error": true`).

use std::collections::BTreeMap;
use std::path::Path;

use super::process::{self, Exit, Finished};
use super::{AgentFailure, AgentKind, AgentSetup, find_on_path, proposals};
use crate::engine::Proposal;

/// The four tools, as agents must be allowed to call them.
pub const TOOLS: [&str; 4] =
    ["list_pending_failed_jobs", "tail_job_stderr", "get_pattern_hints", "classify_and_resolve_failures"];

/// A program to start: argv, extra environment, and a file for stdin.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Option<std::path::PathBuf>,
}

/// Run agent `kind` once (attempt `n`) and return what it proposed.
pub async fn run_once(kind: AgentKind, setup: &AgentSetup, n: u32, proposals_file: &Path) -> Result<BTreeMap<i64, Proposal>, AgentFailure> {
    let files = write_files(setup).map_err(|e| AgentFailure::Crashed(format!("cannot write the agent's files: {e}")))?;
    let inv = invocation(kind, setup, &files)?;
    let name = format!("{}-{n}", kind.as_str());
    let finished = process::run(&inv.program, &inv.args, &inv.env, inv.stdin.as_deref(), &setup.work_dir, &name, setup.timeout)
        .await
        .map_err(|e| AgentFailure::NotInstalled(format!("cannot start `{}`: {e}", inv.program)))?;
    judge(kind, &finished, setup.timeout.as_secs())?;
    let (found, bad) = proposals::read(proposals_file);
    if found.is_empty() {
        return Err(if bad > 0 { AgentFailure::Reported(format!("{bad} unreadable proposal records")) } else { AgentFailure::NoProposals });
    }
    Ok(found)
}

/// The files every agent reads: the MCP configuration and the prompt.
pub struct AgentFiles {
    pub mcp_config: std::path::PathBuf,
    pub prompt: std::path::PathBuf,
}

fn write_files(setup: &AgentSetup) -> std::io::Result<AgentFiles> {
    std::fs::create_dir_all(&setup.work_dir)?;
    let mcp_config = setup.work_dir.join("mcp-config.json");
    let config = serde_json::json!({"mcpServers": {"triage": {"command": setup.mcp_command, "args": setup.mcp_args}}});
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
        return Ok(Invocation { program: "sh".into(), args: vec!["-c".into(), cmd], env, stdin: None });
    }
    let bin = kind.binary().ok_or_else(|| AgentFailure::InvalidRequest(format!("`{}` is not an agent CLI", kind.as_str())))?;
    let program = find_on_path(bin)
        .ok_or_else(|| AgentFailure::NotInstalled(format!("`{bin}` is not on PATH; install it or choose another --agent")))?
        .display()
        .to_string();
    let mut inv = cli_invocation(kind, setup, files)?;
    inv.program = program;
    inv.env.extend(env);
    Ok(inv)
}

/// The argv of each agent CLI (see each arm for the flags and why).
fn cli_invocation(kind: AgentKind, setup: &AgentSetup, files: &AgentFiles) -> Result<Invocation, AgentFailure> {
    let _ = (setup, files);
    Err(AgentFailure::NotInstalled(format!("agent `{}` is not supported by this build", kind.as_str())))
}

/// Decide from the exit and the output whether the run failed, and why.
pub fn judge(kind: AgentKind, f: &Finished, timeout_secs: u64) -> Result<(), AgentFailure> {
    if f.exit == Exit::TimedOut {
        return Err(AgentFailure::Timeout(timeout_secs));
    }
    let stdout = f.stdout_text(64 * 1024);
    let stderr = f.stderr_text(64 * 1024);
    if let Some(reported) = reported_error(kind, &stdout) {
        return Err(classify_text(&reported).unwrap_or(AgentFailure::Reported(reported)));
    }
    match f.exit {
        Exit::Exited(Some(0)) => Ok(()),
        Exit::Exited(code) => {
            let text = format!("{stderr}\n{stdout}");
            let status = code.map(|c| c.to_string()).unwrap_or_else(|| "killed by a signal".into());
            Err(classify_text(&text).unwrap_or_else(|| AgentFailure::Crashed(format!("{status}: {}", last_line(&text)))))
        }
        Exit::TimedOut => Err(AgentFailure::Timeout(timeout_secs)),
    }
}

/// An error the agent reported in its machine-readable output (even with exit status 0).
fn reported_error(kind: AgentKind, stdout: &str) -> Option<String> {
    if kind != AgentKind::Claude {
        return None;
    }
    // `--output-format json`: one JSON object; `is_error: true` marks a failed run.
    let v: serde_json::Value = stdout.lines().rev().find_map(|l| serde_json::from_str(l.trim()).ok())?;
    if v.get("is_error").and_then(|b| b.as_bool()) == Some(true) {
        let msg = v.get("result").and_then(|r| r.as_str()).unwrap_or("is_error: true").to_string();
        return Some(msg);
    }
    None
}

/// Sort an error text into auth / invalid request / network, or `None` if it says nothing
/// recognisable.
fn classify_text(text: &str) -> Option<AgentFailure> {
    let t = text.to_ascii_lowercase();
    let line = last_line(text);
    let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
    if any(&["invalid api key", "api key", "unauthorized", "401", "not logged in", "please run /login", "authentication", "credentials", "forbidden", "403"]) {
        return Some(AgentFailure::Auth(line));
    }
    if any(&["unknown option", "unknown argument", "unexpected argument", "invalid value", "prompt is too long", "context length", "context window", "invalid_request"]) {
        return Some(AgentFailure::InvalidRequest(line));
    }
    if any(&["econnrefused", "connection refused", "enotfound", "getaddrinfo", "network", "timed out", "etimedout", "fetch failed", "socket hang up", "503", "502", "529", "overloaded", "rate limit", "429"]) {
        return Some(AgentFailure::Network(line));
    }
    None
}

fn last_line(text: &str) -> String {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().chars().take(300).collect()
}
