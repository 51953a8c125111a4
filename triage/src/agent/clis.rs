//! The command line of each agent, and how to read its outcome.
//!
//! Every agent gets the same three things: an MCP configuration naming only `triage-mcp` (in
//! propose-only mode), the rendered prompt, and the workflow id (DESIGN.md, agent contract).
//! Each CLI gets them through its own flags, limited to the four triage tools, with
//! machine-readable output and a turn limit. A run is judged by its output, not only its exit
//! status (Claude Code not logged in exits 0 and says `"is_error": true`).

use std::path::Path;

use super::process::{self, Exit, Finished};
use super::{AgentFailure, AgentKind, AgentSetup, find_on_path};
use crate::engine::propose_log;

/// The four tools, as agents must be allowed to call them.
pub const TOOLS: [&str; 4] =
    ["list_pending_failed_jobs", "tail_job_stderr", "get_pattern_hints", "classify_and_resolve_failures"];

/// The largest tool answer `triage-mcp` gives Copilot CLI (see the Copilot invocation).
pub const COPILOT_MAX_ANSWER_BYTES: u32 = 16 * 1024;

/// Codex's limit on one tool answer, in tokens: room for triage-mcp's largest (64 KiB).
pub const CODEX_TOOL_OUTPUT_TOKENS: u32 = 32_000;

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
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut args = match kind {
        AgentKind::Claude => {
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
            a
        }
        AgentKind::Copilot => {
            let config = setup.work_dir.join("copilot-mcp-config.json");
            // Copilot CLI hides a tool answer over about 20 KiB (text and structured content
            // together) from the model: it saves it to a file and shows a 500-character
            // preview, and the model has no tool to read the file. Keep answers under that.
            let mut mcp_args = setup.mcp_args.clone();
            mcp_args.extend(["--max-answer-bytes".to_string(), COPILOT_MAX_ANSWER_BYTES.to_string()]);
            let body = serde_json::json!({"mcpServers": {"triage": {
                "type": "local", "command": setup.mcp_command, "args": mcp_args, "tools": ["*"]}}});
            std::fs::write(&config, body.to_string())
                .map_err(|e| AgentFailure::Crashed(format!("cannot write {}: {e}", config.display())))?;
            let available: Vec<String> = TOOLS.iter().map(|t| format!("triage-{t}")).collect();
            let allow: Vec<String> = TOOLS.iter().map(|t| format!("triage({t})")).collect();
            vec![
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
            ]
        }
        AgentKind::Codex => {
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
                "mcp_servers.triage.required=true".into(),
                "mcp_servers.triage.default_tools_approval_mode=\"approve\"".into(),
                format!("mcp_servers.triage.enabled_tools=[{}]", tools.join(",")),
            ] {
                a.extend(["-c".into(), c]);
            }
            a
        }
        AgentKind::Gemini => {
            let settings = setup.work_dir.join("gemini-settings.json");
            insecure_ancestor(&setup.work_dir).map_or(Ok(()), |d| {
                Err(AgentFailure::InvalidRequest(format!(
                    "Gemini CLI ignores settings under a group- or world-writable folder ({}); without them it would not be limited to the triage tools. Use a --plan-out path or TRIAGE_STATE_DIR outside it",
                    d.display()
                )))
            })?;
            let core: Vec<String> = TOOLS.iter().map(|t| format!("mcp_triage_{t}")).collect();
            let mut body = serde_json::json!({
                "mcpServers": {"triage": {"command": setup.mcp_command, "args": setup.mcp_args, "trust": true, "includeTools": TOOLS}},
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
            strings(&["--output-format", "json", "--skip-trust", "--allowed-mcp-server-names", "triage"])
        }
        other => return Err(AgentFailure::InvalidRequest(format!("`{}` is not an agent CLI", other.as_str()))),
    };
    if kind == AgentKind::Codex {
        args.extend(setup.extra_args.iter().cloned());
        args.push("-".into()); // the prompt comes on stdin
    } else {
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

/// The first folder at or above `dir` that is group- or world-writable (Gemini CLI refuses
/// settings files below one).
fn insecure_ancestor(dir: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let abs = std::path::absolute(dir).ok()?;
    abs.ancestors()
        .find(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o022 != 0))
        .map(Path::to_path_buf)
}

/// Decide from the exit and the output whether the run failed, and why.
pub fn judge(kind: AgentKind, f: &Finished, timeout_secs: u64) -> Result<(), AgentFailure> {
    let code = match f.exit {
        Exit::TimedOut => return Err(AgentFailure::Timeout(timeout_secs)),
        Exit::Interrupted(sig) => {
            return Err(AgentFailure::Interrupted { name: sig.to_string(), number: sig as i32 });
        }
        Exit::Exited(code) => code,
    };
    let stdout = f.stdout_text(64 * 1024);
    let stderr = f.stderr_text(64 * 1024);
    if let Some(reported) = reported_error(kind, &stdout, &stderr) {
        // One line: the message may span several (Copilot's does).
        let reported: String = reported.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(500).collect();
        return Err(classify_text(&reported).unwrap_or(AgentFailure::Reported(reported)));
    }
    if code == Some(0) {
        return Ok(());
    }
    let text = format!("{stderr}\n{stdout}");
    let status = code.map(|c| c.to_string()).unwrap_or_else(|| "killed by a signal".into());
    Err(classify_text(&text).unwrap_or_else(|| AgentFailure::Crashed(format!("{status}: {}", last_line(&text)))))
}

/// An error the agent reported in its machine-readable output, even with exit status 0.
fn reported_error(kind: AgentKind, stdout: &str, stderr: &str) -> Option<String> {
    let objects = json_objects;
    let str_at = |v: &serde_json::Value, path: &[&str]| -> Option<String> {
        path.iter().try_fold(v, |v, k| v.get(*k)).and_then(|x| x.as_str()).map(str::to_string)
    };
    match kind {
        // `--output-format json`: one result object; `is_error: true` marks a failed run
        // (its `subtype` says "success" even then).
        AgentKind::Claude => objects(stdout).into_iter().rev().find_map(|v| {
            (v.get("is_error").and_then(|b| b.as_bool()) == Some(true)).then(|| {
                str_at(&v, &["result"]).or_else(|| str_at(&v, &["subtype"])).unwrap_or_else(|| "is_error: true".into())
            })
        }),
        // JSONL events: `session.error` carries the message; `result.exitCode` the status.
        AgentKind::Copilot => objects(stdout).into_iter().find_map(|v| {
            (str_at(&v, &["type"]).as_deref() == Some("session.error"))
                .then(|| str_at(&v, &["data", "message"]).unwrap_or_else(|| "session.error".into()))
        }),
        // JSONL events: `turn.failed` ends a failed run.
        AgentKind::Codex => objects(stdout).into_iter().find_map(|v| {
            (str_at(&v, &["type"]).as_deref() == Some("turn.failed"))
                .then(|| str_at(&v, &["error", "message"]).unwrap_or_else(|| "turn.failed".into()))
        }),
        // A JSON object with `error` on stderr.
        AgentKind::Gemini => objects(stderr)
            .into_iter()
            .chain(objects(stdout))
            .find_map(|v| v.get("error").map(|e| str_at(e, &["message"]).unwrap_or_else(|| e.to_string()))),
        _ => None,
    }
}

/// The JSON objects in an agent's output, in order: one per line (JSONL), or pretty-printed
/// over several lines (Gemini CLI prints its error object that way, after noise lines).
fn json_objects(text: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut skip_to = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if start < skip_to || !line.trim_start().starts_with('{') {
            continue;
        }
        let from = start + (line.len() - line.trim_start().len());
        let mut stream = serde_json::Deserializer::from_str(&text[from..]).into_iter::<serde_json::Value>();
        if let Some(Ok(v)) = stream.next()
            && v.is_object()
        {
            skip_to = from + stream.byte_offset();
            out.push(v);
        }
    }
    out
}

/// Sort an error text into auth / invalid request / network, or `None` if it says nothing
/// recognisable. The wording is each CLI's own (see the tests): e.g. Claude Code's
/// "Unable to connect to API (ConnectionRefused)", Copilot's "Could not connect to local model
/// provider", Codex's "Connection failed: error sending request", Gemini's "fetch failed".
fn classify_text(text: &str) -> Option<AgentFailure> {
    static STATUS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\b(?:status|code|http|error)[\s:=\x22]*(\d{3})\b|\b(\d{3}) (?:unauthorized|forbidden|too many requests|bad gateway|service unavailable|overloaded)").expect("valid regex")
    });
    let t = text.to_ascii_lowercase();
    let line = last_line(text);
    let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
    let status: Vec<u16> = STATUS
        .captures_iter(&t)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)).and_then(|m| m.as_str().parse().ok()))
        .collect();
    if status.iter().any(|s| [401, 403].contains(s))
        || any(&[
            "invalid api key",
            "invalid x-api-key",
            "api key not valid",
            "unauthorized",
            "not logged in",
            "please run /login",
            "authentication",
            "auth method",
            "credentials",
            "forbidden",
            "permission_denied",
        ])
    {
        return Some(AgentFailure::Auth(line));
    }
    if any(&[
        "unknown option",
        "unknown argument",
        "unexpected argument",
        "invalid command format",
        "invalid value",
        "prompt is too long",
        "context length",
        "context window",
        "invalid_request",
    ]) {
        return Some(AgentFailure::InvalidRequest(line));
    }
    if status.iter().any(|s| [408, 429, 500, 502, 503, 504, 529].contains(s))
        || any(&[
            "econnrefused",
            "connection refused",
            "connectionrefused",
            "unable to connect",
            "could not connect",
            "connection failed",
            "error sending request",
            "econnreset",
            "connection reset",
            "enotfound",
            "getaddrinfo",
            "network",
            "timed out",
            "etimedout",
            "fetch failed",
            "socket hang up",
            "overloaded",
            "rate limit",
        ])
    {
        return Some(AgentFailure::Network(line));
    }
    None
}

fn last_line(text: &str) -> String {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn finished(dir: &Path, code: i32, stdout: &str, stderr: &str) -> Finished {
        let (o, e) = (dir.join("a.stdout"), dir.join("a.stderr"));
        std::fs::write(&o, stdout).unwrap();
        std::fs::write(&e, stderr).unwrap();
        Finished { exit: Exit::Exited(Some(code)), elapsed: Duration::ZERO, stdout: o, stderr: e }
    }

    fn verdict(kind: AgentKind, code: i32, stdout: &str, stderr: &str) -> Result<(), AgentFailure> {
        let tmp = tempfile::tempdir().unwrap();
        judge(kind, &finished(tmp.path(), code, stdout, stderr), 60)
    }

    // The outputs below are the real CLIs' (claude-code 2.1.197, copilot 1.0.102, codex 0.169.0,
    // gemini-cli 0.61.0) when their endpoint is a closed loopback port or they have no credentials.
    #[test]
    fn a_refused_connection_is_a_network_failure_for_every_cli() {
        let claude = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"duration_ms":1401,"result":"API Error: Unable to connect to API (ConnectionRefused)"}"#;
        let copilot = "{\"type\":\"session.error\",\"data\":{\"errorType\":\"query\",\"message\":\"Could not connect to local model provider at http://127.0.0.1:9.\\n  Check that the service is running and the port is correct.\"}}\n{\"type\":\"result\",\"exitCode\":1}\n";
        let codex = "{\"type\":\"turn.started\"}\n{\"type\":\"error\",\"message\":\"Connection failed: error sending request\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"Connection failed: error sending request\"}}\n";
        let gemini = "Error when talking to Gemini API Full report available at: /tmp/gemini-client-error.json\n    at async Turn.run (file:///x/chunk.js:333001:24)\n{\n  \"session_id\": \"a0ba\",\n  \"error\": {\n    \"type\": \"Error\",\n    \"message\": \"exception TypeError: fetch failed sending request\",\n    \"code\": 1\n  }\n}\n";
        let cases = [
            (AgentKind::Claude, claude, "", "Unable to connect to API"),
            (AgentKind::Copilot, copilot, "", "Could not connect to local model provider"),
            (AgentKind::Codex, codex, "", "Connection failed: error sending request"),
            (AgentKind::Gemini, "", gemini, "fetch failed sending request"),
        ];
        for (kind, stdout, stderr, text) in cases {
            match verdict(kind, 1, stdout, stderr) {
                Err(AgentFailure::Network(m)) => assert!(m.contains(text), "{kind:?}: {m}"),
                other => panic!("{kind:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn missing_credentials_are_auth_failures_even_with_exit_status_0() {
        let claude = r#"{"type":"result","subtype":"success","is_error":true,"duration_ms":132,"result":"Not logged in · Please run /login"}"#;
        assert!(matches!(verdict(AgentKind::Claude, 0, claude, ""), Err(AgentFailure::Auth(_))));
        let copilot = "Error: No authentication information found.\n\nCopilot can be authenticated with GitHub using an OAuth Token.\n";
        assert!(matches!(verdict(AgentKind::Copilot, 1, "", copilot), Err(AgentFailure::Auth(_))));
        let gemini = r#"{"session_id":"x","error":{"type":"Error","message":"Please set an Auth method in your /h/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA","code":41}}"#;
        assert!(matches!(verdict(AgentKind::Gemini, 41, "", gemini), Err(AgentFailure::Auth(_))));
    }

    #[test]
    fn unknown_flags_are_invalid_requests() {
        for (kind, stderr) in [
            (AgentKind::Claude, "error: unknown option '--x'\n"),
            (AgentKind::Codex, "error: unexpected argument '--x' found\n"),
            (AgentKind::Copilot, "error: Invalid command format.\n"),
            (AgentKind::Gemini, "Unknown arguments: x\n"),
        ] {
            assert!(matches!(verdict(kind, 1, "", stderr), Err(AgentFailure::InvalidRequest(_))), "{kind:?}");
        }
    }

    #[test]
    fn numbers_that_merely_contain_a_status_code_decide_nothing() {
        // duration_ms 1401 and a port 5030 are not HTTP 401 / 503.
        let out = "job 14013 done in 4031 ms on port 5030\nsegfault\n";
        assert!(matches!(verdict(AgentKind::Command, 139, out, ""), Err(AgentFailure::Crashed(_))));
        assert!(matches!(
            verdict(AgentKind::Command, 1, "", "API Error: 401 unauthorized"),
            Err(AgentFailure::Auth(_))
        ));
        assert!(matches!(verdict(AgentKind::Command, 1, "", "HTTP status 503"), Err(AgentFailure::Network(_))));
        assert!(verdict(AgentKind::Claude, 0, r#"{"type":"result","is_error":false,"result":"done"}"#, "").is_ok());
    }
}
