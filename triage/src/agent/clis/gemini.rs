//! Gemini CLI (`gemini`): settings in a system settings file, flags checked against gemini-cli 0.61.

use std::path::Path;

use super::{AgentFiles, TOOLS, strings};
use crate::agent::{AgentFailure, AgentSetup};

/// The arguments (and extra environment) of one non-interactive run.
pub(super) fn args(
    setup: &AgentSetup,
    _files: &AgentFiles,
    env: &mut Vec<(String, String)>,
) -> Result<Vec<String>, AgentFailure> {
    let settings = setup.work_dir.join("gemini-settings.json");
    insecure_ancestor(&setup.work_dir).map_or(Ok(()), |d| {
        Err(AgentFailure::InvalidRequest(format!(
            "Gemini CLI ignores settings under a group- or world-writable folder ({}); without them it would not be limited to the triage tools. Use a --plan-out path or TRIAGE_STATE_DIR outside it",
            d.display()
        )))
    })?;
    let core: Vec<String> = TOOLS.iter().map(|t| format!("mcp_triage_{t}")).collect();
    let mut body = serde_json::json!({
        "mcpServers": {"triage": {"command": setup.mcp_command, "args": setup.mcp_args, "env": super::env_object(setup), "trust": true, "includeTools": TOOLS}},
        "mcp": {"allowed": ["triage"]},
        "tools": {"core": core},
        "model": {"maxSessionTurns": setup.max_turns},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    });
    if std::env::var_os("GEMINI_API_KEY").is_some() {
        body["security"] = serde_json::json!({"auth": {"selectedType": "gemini-api-key"}});
    }
    std::fs::write(&settings, serde_json::to_vec_pretty(&body).unwrap_or_default())
        .map_err(|e| AgentFailure::Crashed(format!("cannot write {}: {e}", settings.display())))?;
    env.push(("GEMINI_CLI_SYSTEM_SETTINGS_PATH".into(), settings.display().to_string()));
    Ok(strings(&["--output-format", "json", "--skip-trust", "--allowed-mcp-server-names", "triage"]))
}

/// An error the CLI reported in its machine-readable output (even with exit status 0).
/// A JSON object with `error` on stderr.
pub(super) fn reported_error(stdout: &str, stderr: &str) -> Option<String> {
    use super::outcome::{json_objects as objects, str_at};
    objects(stderr)
        .into_iter()
        .chain(objects(stdout))
        .find_map(|v| v.get("error").map(|e| str_at(e, &["message"]).unwrap_or_else(|| e.to_string())))
}

/// The first folder at or above `dir` that is group- or world-writable (Gemini CLI refuses
/// settings files below one).
fn insecure_ancestor(dir: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let abs = std::path::absolute(dir).ok()?;
    abs.ancestors()
        .find(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o022 != 0))
        .map(Path::to_path_buf)
}
