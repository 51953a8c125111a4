//! The agent flags `triage run` and `triage watch` share, and the [`RunOptions`] they make.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use triage::agent::AgentKind;
use triage::clients::ServerCommand;
use triage::engine::Engine;
use triage::run::RunOptions;
use triage::settings::Settings;

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Who proposes: auto (first agent CLI on PATH, else rules), claude, copilot, codex,
    /// gemini, command (with --agent-cmd), rules (the catalog alone).
    #[arg(long, value_enum, default_value = "auto")]
    pub agent: AgentKind,
    /// Agents to try, in order, when the agent fails, comma-separated: auto, claude, copilot,
    /// codex, gemini, command, rules (the catalog), or none (no fallback: every job the agent
    /// could not handle needs a person).
    #[arg(long, value_delimiter = ',', default_value = "rules", value_parser = fallback)]
    pub fallback: Vec<Option<AgentKind>>,
    /// The command for `--agent command`, run through the shell with TRIAGE_MCP_CONFIG,
    /// TRIAGE_PROMPT_FILE and TRIAGE_WORKFLOW_ID set.
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Extra argument for the agent CLI (repeatable), e.g. `--agent-arg=--model=claude-sonnet-4-5`.
    #[arg(long = "agent-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub agent_args: Vec<String>,
    /// Seconds before the agent's process group is killed (default 600; policy [resilience]).
    #[arg(long, value_name = "SECS")]
    pub agent_timeout: Option<u64>,
    /// Turn limit passed to agent CLIs that have one.
    #[arg(long, default_value_t = 40)]
    pub max_turns: u32,
    /// A prompt template instead of the built-in one ({{workflow_id}}, {{apply_note}}).
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,
    /// Seed for the retry jitter, so a run can be replayed (default: random, shown in events).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// One entry of `--fallback`: an agent (`None` for `none`: no fallback at all).
fn fallback(text: &str) -> Result<Option<AgentKind>, String> {
    use clap::ValueEnum;
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    AgentKind::from_str(text, true).map(Some).map_err(|_| {
        let names: Vec<&str> = AgentKind::value_variants().iter().map(|k| k.as_str()).collect();
        format!("`{text}` is not an agent; give one of {}, or none", names.join(", "))
    })
}

impl AgentArgs {
    /// Check the flags together and apply `--agent-timeout` to the engine's policy.
    pub fn check(&self, engine: &mut Engine) -> anyhow::Result<()> {
        if let Some(t) = self.agent_timeout {
            anyhow::ensure!(t > 0, "--agent-timeout must be at least 1 second");
            engine.policy.resilience.agent_timeout_secs = t;
        }
        if self.agent == AgentKind::Command && self.agent_cmd.is_none() {
            anyhow::bail!("--agent command needs --agent-cmd CMD (the command to run, see `triage run --help`)");
        }
        if self.fallback.contains(&None) && self.fallback.len() > 1 {
            anyhow::bail!(
                "--fallback none means no fallback at all; give it alone, or list the agents to fall back to"
            );
        }
        Ok(())
    }

    /// The options of one run over `workflow`, its agent files in `work_dir`.
    pub fn run_options(
        &self,
        settings: &Settings,
        workflow: i64,
        dry_run: bool,
        work_dir: PathBuf,
    ) -> anyhow::Result<RunOptions> {
        let prompt_template = match &self.prompt {
            Some(p) => std::fs::read_to_string(p)
                .with_context(|| format!("cannot read the prompt template {}", p.display()))?,
            None => triage::prompts::TRIAGE_WORKFLOW.to_string(),
        };
        let mut chain = vec![self.agent];
        chain.extend(self.fallback.iter().flatten().copied().filter(|k| *k != self.agent));
        Ok(RunOptions {
            workflow_id: workflow,
            dry_run,
            chain,
            agent_cmd: self.agent_cmd.clone(),
            agent_args: self.agent_args.clone(),
            prompt_template,
            work_dir,
            mcp_command: ServerCommand::triage_mcp(std::env::current_exe().ok().as_deref(), vec![]).command,
            mcp_args: settings.server_args(),
            mcp_env: settings.server_env(),
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            max_turns: self.max_turns,
            state_dir: triage::resilience::CircuitBook::default_dir(),
            resilience_off: triage::resilience::disabled(),
            only_jobs: None,
            actor: "triage run".into(),
        })
    }
}
