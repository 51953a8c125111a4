//! Claude Code (`claude -p`): flags checked against claude-code 2.1.

use super::{AgentFiles, TOOLS, strings};
use crate::agent::{AgentFailure, AgentSetup};

/// The arguments (and extra environment) of one non-interactive run.
pub(super) fn args(
    setup: &AgentSetup,
    files: &AgentFiles,
    env: &mut Vec<(String, String)>,
) -> Result<Vec<String>, AgentFailure> {
    env.extend([
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        ("DISABLE_TELEMETRY".into(), "1".into()),
    ]);
    let allowed: Vec<String> = TOOLS.iter().map(|t| format!("mcp__triage__{t}")).collect();
    let mut a = strings(&["-p", "--output-format", "json", "--max-turns"]);
    a.push(setup.max_turns.to_string());
    a.extend(["--mcp-config".into(), files.mcp_config.display().to_string(), "--strict-mcp-config".into()]);
    // No built-in tools (shell, files, web); only ours, allowed without asking.
    a.extend(strings(&["--tools", "", "--permission-mode", "dontAsk", "--no-session-persistence"]));
    a.extend(["--allowedTools".into(), allowed.join(",")]);
    Ok(a)
}

/// An error the CLI reported in its machine-readable output (even with exit status 0).
/// `--output-format json`: one result object; `is_error: true` marks a failed run
/// (its `subtype` says "success" even then).
pub(super) fn reported_error(stdout: &str, _stderr: &str) -> Option<String> {
    use super::outcome::{json_objects as objects, str_at};
    objects(stdout).into_iter().rev().find_map(|v| {
        (v.get("is_error").and_then(|b| b.as_bool()) == Some(true)).then(|| {
            str_at(&v, &["result"]).or_else(|| str_at(&v, &["subtype"])).unwrap_or_else(|| "is_error: true".into())
        })
    })
}
