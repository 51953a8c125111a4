//! MCP client configurations that register `triage-mcp`: one renderer per client, each in the
//! exact shape that client reads. `triage mcp-config` prints them; `triage run` writes the
//! common `{"mcpServers": {...}}` form for its agent.

use std::path::{Path, PathBuf};

use serde_json::json;

/// The clients `triage mcp-config` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `.mcp.json` in the project, or `claude mcp add`.
    Claude,
    /// VS Code (GitHub Copilot agent mode): `.vscode/mcp.json`.
    Vscode,
    /// GitHub Copilot CLI: `~/.copilot/mcp-config.json`.
    CopilotCli,
    /// OpenAI Codex CLI: `~/.codex/config.toml`.
    Codex,
    /// Gemini CLI: `.gemini/settings.json` (project) or `~/.gemini/settings.json`.
    Gemini,
}

/// How to start `triage-mcp`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCommand {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
}

impl ServerCommand {
    /// `triage-mcp` (found beside `current_exe` when it is there) with `args`.
    pub fn triage_mcp(current_exe: Option<&Path>, args: Vec<String>) -> ServerCommand {
        let beside: Option<PathBuf> = current_exe.and_then(|exe| exe.parent()).map(|d| d.join("triage-mcp"));
        let command = match beside {
            Some(p) if p.is_file() => p.display().to_string(),
            _ => "triage-mcp".to_string(),
        };
        ServerCommand { name: "triage".into(), command, args }
    }

    /// The common `{"mcpServers": {...}}` form (Claude Code, Gemini, and the agent contract).
    pub fn common_json(&self) -> serde_json::Value {
        json!({"mcpServers": {self.name.clone(): {"command": self.command, "args": self.args}}})
    }

    /// The configuration for `client`: `body` is the file's content exactly (so
    /// `triage mcp-config --client claude > .mcp.json` works), `note` says where it goes.
    pub fn render(&self, client: Client) -> Rendered {
        let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
        let (note, body) = match client {
            Client::Claude => {
                let mut add = format!("claude mcp add --scope project {} -- {}", self.name, shell_quote(&self.command));
                for a in &self.args {
                    add.push(' ');
                    add.push_str(&shell_quote(a));
                }
                (
                    format!("Claude Code: save as .mcp.json in your project, or run:\n  {add}"),
                    pretty(self.common_json()),
                )
            }
            Client::Vscode => (
                "VS Code (Copilot agent mode): save as .vscode/mcp.json".to_string(),
                pretty(
                    json!({"servers": {self.name.clone(): {"type": "stdio", "command": self.command, "args": self.args}}}),
                ),
            ),
            Client::CopilotCli => (
                "GitHub Copilot CLI: merge into ~/.copilot/mcp-config.json (or use /mcp add)".to_string(),
                pretty(
                    json!({"mcpServers": {self.name.clone(): {"type": "local", "command": self.command, "args": self.args, "tools": ["*"]}}}),
                ),
            ),
            Client::Codex => {
                let args: Vec<String> = self.args.iter().map(|a| toml_string(a)).collect();
                (
                    "Codex CLI: add to ~/.codex/config.toml".to_string(),
                    format!(
                        "[mcp_servers.{}]\ncommand = {}\nargs = [{}]\n",
                        self.name,
                        toml_string(&self.command),
                        args.join(", ")
                    ),
                )
            }
            Client::Gemini => (
                "Gemini CLI: merge into .gemini/settings.json (project) or ~/.gemini/settings.json".to_string(),
                pretty(
                    json!({"mcpServers": {self.name.clone(): {"command": self.command, "args": self.args, "trust": false}}}),
                ),
            ),
        };
        Rendered { note, body }
    }
}

/// A client configuration and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// Where to put it (for a person; printed on stderr).
    pub note: String,
    /// The configuration itself (printed on stdout).
    pub body: String,
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> ServerCommand {
        ServerCommand {
            name: "triage".into(),
            command: "/opt/bin/triage-mcp".into(),
            args: vec!["--backend".into(), "dir:/data/my store".into()],
        }
    }

    #[test]
    fn each_client_gets_its_own_shape() {
        let strip = |r: Rendered| r.body;
        let claude: serde_json::Value = serde_json::from_str(&strip(cmd().render(Client::Claude))).unwrap();
        assert_eq!(claude["mcpServers"]["triage"]["args"][1], "dir:/data/my store");
        assert!(
            cmd().render(Client::Claude).note.contains(
                "claude mcp add --scope project triage -- /opt/bin/triage-mcp --backend 'dir:/data/my store'"
            )
        );
        let vscode: serde_json::Value = serde_json::from_str(&strip(cmd().render(Client::Vscode))).unwrap();
        assert_eq!(vscode["servers"]["triage"]["type"], "stdio");
        let copilot: serde_json::Value = serde_json::from_str(&strip(cmd().render(Client::CopilotCli))).unwrap();
        assert_eq!(copilot["mcpServers"]["triage"]["type"], "local");
        let codex: toml::Table = toml::from_str(&cmd().render(Client::Codex).body).unwrap();
        assert_eq!(codex["mcp_servers"]["triage"]["command"].as_str(), Some("/opt/bin/triage-mcp"));
        let gemini: serde_json::Value = serde_json::from_str(&strip(cmd().render(Client::Gemini))).unwrap();
        assert_eq!(gemini["mcpServers"]["triage"]["command"], "/opt/bin/triage-mcp");
    }
}
