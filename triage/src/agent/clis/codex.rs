//! OpenAI Codex CLI (`codex exec`): flags checked against codex 0.169.

use super::{AgentFiles, TOOLS, strings};
use crate::agent::{AgentFailure, AgentSetup};

/// Codex's limit on one tool answer, in tokens: room for triage-mcp's largest (64 KiB).
pub const CODEX_TOOL_OUTPUT_TOKENS: u32 = 32_000;

/// The arguments (and extra environment) of one non-interactive run.
pub(super) fn args(
    setup: &AgentSetup,
    _files: &AgentFiles,
    _env: &mut Vec<(String, String)>,
) -> Result<Vec<String>, AgentFailure> {
    let toml_str = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mcp_args: Vec<String> = setup.mcp_args.iter().map(|a| toml_str(a)).collect();
    let tools: Vec<String> = TOOLS.iter().map(|t| toml_str(t)).collect();
    let mut a = strings(&[
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "--sandbox",
        "read-only",
        "--disable",
        "unbounded_connection_retries",
    ]);
    // Every built-in tool off: the model sees the triage tools only.
    for feature in [
        "shell_tool",
        "unified_exec",
        "multi_agent",
        "view_image",
        "apps",
        "plugins",
        "image_generation",
        "browser_use",
        "computer_use",
        "sleep_tool",
        "tool_suggest",
        "hooks",
        "skill_mcp_dependency_install",
        "goals",
    ] {
        a.extend(["--disable".into(), feature.into()]);
    }
    for c in [
        "approval_policy=\"never\"".to_string(),
        "analytics.enabled=false".into(),
        "check_for_update_on_startup=false".into(),
        "web_search=\"disabled\"".into(),
        // Codex cuts a tool answer over its limit (about 10k) out of the middle, silently
        // dropping failure groups; triage-mcp's answers stay under 64 KiB.
        format!("tool_output_token_limit={CODEX_TOOL_OUTPUT_TOKENS}"),
        format!("mcp_servers.triage.command={}", toml_str(&setup.mcp_command)),
        format!("mcp_servers.triage.args=[{}]", mcp_args.join(",")),
        format!(
            "mcp_servers.triage.env={{{}}}",
            setup.mcp_env.iter().map(|(k, v)| format!("{k}={}", toml_str(v))).collect::<Vec<_>>().join(",")
        ),
        "mcp_servers.triage.required=true".into(),
        "mcp_servers.triage.default_tools_approval_mode=\"approve\"".into(),
        format!("mcp_servers.triage.enabled_tools=[{}]", tools.join(",")),
    ] {
        a.extend(["-c".into(), c]);
    }
    a.extend(setup.extra_args.iter().cloned());
    a.push("-".into()); // the prompt comes on stdin
    Ok(a)
}

/// An error the CLI reported in its machine-readable output (even with exit status 0).
/// JSONL events: `turn.failed` ends a failed run.
pub(super) fn reported_error(stdout: &str, _stderr: &str) -> Option<String> {
    use super::outcome::{json_objects as objects, str_at};
    objects(stdout).into_iter().find_map(|v| {
        (str_at(&v, &["type"]).as_deref() == Some("turn.failed"))
            .then(|| str_at(&v, &["error", "message"]).unwrap_or_else(|| "turn.failed".into()))
    })
}
