//! GitHub Copilot CLI (`copilot`, BYOK or GitHub auth): flags checked against copilot 1.0.

use super::{AgentFiles, TOOLS};
use crate::agent::{AgentFailure, AgentSetup};

/// The largest tool answer `triage-mcp` gives Copilot CLI (passed by this module's `args`).
pub const COPILOT_MAX_ANSWER_BYTES: u32 = 16 * 1024;

/// The arguments (and extra environment) of one non-interactive run.
pub(super) fn args(
    setup: &AgentSetup,
    _files: &AgentFiles,
    _env: &mut Vec<(String, String)>,
) -> Result<Vec<String>, AgentFailure> {
    let config = setup.work_dir.join("copilot-mcp-config.json");
    // Copilot CLI hides a tool answer over about 20 KiB (text and structured content
    // together) from the model: it saves it to a file and shows a 500-character
    // preview, and the model has no tool to read the file. Keep answers under that.
    let mut mcp_args = setup.mcp_args.clone();
    mcp_args.extend(["--max-answer-bytes".to_string(), COPILOT_MAX_ANSWER_BYTES.to_string()]);
    let body = serde_json::json!({"mcpServers": {"triage": {
        "type": "local", "command": setup.mcp_command, "args": mcp_args, "env": super::env_object(setup), "tools": ["*"]}}});
    std::fs::write(&config, body.to_string())
        .map_err(|e| AgentFailure::Crashed(format!("cannot write {}: {e}", config.display())))?;
    let available: Vec<String> = TOOLS.iter().map(|t| format!("triage-{t}")).collect();
    let allow: Vec<String> = TOOLS.iter().map(|t| format!("triage({t})")).collect();
    Ok(vec![
        "--output-format".into(),
        "json".into(),
        "--additional-mcp-config".into(),
        format!("@{}", config.display()),
        "--disable-builtin-mcps".into(),
        format!("--available-tools={}", available.join(",")),
        format!("--allow-tool={}", allow.join(",")),
        "--no-ask-user".into(),
        "--no-auto-update".into(),
        "--disable-client-telemetry".into(),
        "--no-custom-instructions".into(),
    ])
}

/// An error the CLI reported in its machine-readable output (even with exit status 0).
/// JSONL events: `session.error` carries the message; `result.exitCode` the status.
pub(super) fn reported_error(stdout: &str, _stderr: &str) -> Option<String> {
    use super::outcome::{json_objects as objects, str_at};
    objects(stdout).into_iter().find_map(|v| {
        (str_at(&v, &["type"]).as_deref() == Some("session.error"))
            .then(|| str_at(&v, &["data", "message"]).unwrap_or_else(|| "session.error".into()))
    })
}
