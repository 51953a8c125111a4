//! Reading an agent CLI's outcome: its exit, and the error it reports in its output (each
//! CLI has its own shape; see each CLI's `reported_error`), sorted into the failures the agent
//! chain treats differently (auth, invalid request, network, crash, timeout, interrupted).

use super::{claude, codex, copilot, gemini};
use crate::agent::process::{Exit, Finished};
use crate::agent::{AgentFailure, AgentKind};

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
    match kind {
        AgentKind::Claude => claude::reported_error(stdout, stderr),
        AgentKind::Copilot => copilot::reported_error(stdout, stderr),
        AgentKind::Codex => codex::reported_error(stdout, stderr),
        AgentKind::Gemini => gemini::reported_error(stdout, stderr),
        _ => None,
    }
}

/// The string at `path` in `v`, if there is one.
pub(super) fn str_at(v: &serde_json::Value, path: &[&str]) -> Option<String> {
    path.iter().try_fold(v, |v, k| v.get(*k)).and_then(|x| x.as_str()).map(str::to_string)
}

/// The JSON objects in an agent's output, in order: one per line (JSONL), or pretty-printed
/// over several lines (Gemini CLI prints its error object that way, after noise lines).
pub(super) fn json_objects(text: &str) -> Vec<serde_json::Value> {
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
/// "Unable to connect to API (ConnectionRefused)" (since 2.1.330 "Connection refused ...
/// (ECONNREFUSED)"), Copilot's "Could not connect to local model provider", Codex's
/// "Connection failed: error sending request", Gemini's "fetch failed".
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
    use std::path::Path;
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

    // The outputs below are the real CLIs' (claude-code 2.1.197 and 2.1.330, copilot 1.0.102,
    // codex 0.169.0, gemini-cli 0.61.0) when their endpoint is a closed loopback port or they have
    // no credentials.
    #[test]
    fn a_refused_connection_is_a_network_failure_for_every_cli() {
        let claude = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"duration_ms":1401,"result":"API Error: Unable to connect to API (ConnectionRefused)"}"#;
        let claude_2_1_330 = r#"{"type":"result","subtype":"success","is_error":true,"num_turns":1,"api_error_status":null,"api_error":"connection_failed","terminal_reason":"api_error","result":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)","duration_ms":114}"#;
        let copilot = "{\"type\":\"session.error\",\"data\":{\"errorType\":\"query\",\"message\":\"Could not connect to local model provider at http://127.0.0.1:9.\\n  Check that the service is running and the port is correct.\"}}\n{\"type\":\"result\",\"exitCode\":1}\n";
        let codex = "{\"type\":\"turn.started\"}\n{\"type\":\"error\",\"message\":\"Connection failed: error sending request\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"Connection failed: error sending request\"}}\n";
        let gemini = "Error when talking to Gemini API Full report available at: /tmp/gemini-client-error.json\n    at async Turn.run (file:///x/chunk.js:333001:24)\n{\n  \"session_id\": \"a0ba\",\n  \"error\": {\n    \"type\": \"Error\",\n    \"message\": \"exception TypeError: fetch failed sending request\",\n    \"code\": 1\n  }\n}\n";
        let cases = [
            (AgentKind::Claude, claude, "", "Unable to connect to API"),
            (AgentKind::Claude, claude_2_1_330, "", "Connection refused"),
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
