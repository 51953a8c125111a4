//! `triage run`: the main job. Spawn the agent, validate its proposals, apply or report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use triage::agent::AgentKind;
use triage::clients::ServerCommand;
use triage::resilience::CircuitBook;
use triage::run::{RunError, RunOptions};

use super::common::GlobalArgs;
use super::output;
use super::progress::Progress;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workflow whose pending_failed jobs to triage.
    #[arg(long)]
    pub workflow: i64,
    /// Change nothing anywhere: not the jobs, not the events log.
    #[arg(long)]
    pub dry_run: bool,
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
    /// Print the plan document (JSON) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the plan (JSON) to FILE and a Markdown report beside it, for `triage review`
    /// and `triage apply`.
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
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

pub async fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    let settings = global.settings()?;
    let mut engine = settings.engine()?;
    if let Some(t) = args.agent_timeout {
        anyhow::ensure!(t > 0, "--agent-timeout must be at least 1 second");
        engine.policy.resilience.agent_timeout_secs = t;
    }
    if args.agent == AgentKind::Command && args.agent_cmd.is_none() {
        anyhow::bail!("--agent command needs --agent-cmd CMD (the command to run, see `triage run --help`)");
    }
    let prompt_template = match &args.prompt {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("cannot read the prompt template {}", p.display()))?
        }
        None => triage::prompts::TRIAGE_WORKFLOW.to_string(),
    };
    let seed = args.seed.unwrap_or_else(|| fastrand::u64(..));
    let state_dir = CircuitBook::default_dir();
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let work_dir = match &args.plan_out {
        Some(p) => p.with_extension("agent"),
        None => state_dir.join("runs").join(format!("wf{}-{stamp}", args.workflow)),
    };
    if args.fallback.contains(&None) && args.fallback.len() > 1 {
        anyhow::bail!("--fallback none means no fallback at all; give it alone, or list the agents to fall back to");
    }
    let mut chain = vec![args.agent];
    chain.extend(args.fallback.iter().flatten().copied().filter(|k| *k != args.agent));
    let opts = RunOptions {
        workflow_id: args.workflow,
        dry_run: args.dry_run,
        chain,
        agent_cmd: args.agent_cmd.clone(),
        agent_args: args.agent_args.clone(),
        prompt_template,
        work_dir,
        mcp_command: ServerCommand::triage_mcp(std::env::current_exe().ok().as_deref(), vec![]).command,
        mcp_args: settings.server_args(),
        mcp_env: settings.server_env(),
        seed,
        max_turns: args.max_turns,
        state_dir,
        resilience_off: triage::resilience::disabled(),
    };
    let progress = Progress::new();
    progress.message(&format!("triaging workflow {} with {} (seed {seed})", args.workflow, args.agent.as_str()));
    let on_event = |e: &triage::engine::RunEvent| progress.event(e);
    let plan = triage::run::run(&engine, &opts, &on_event).await;
    progress.finish();
    let plan = match plan {
        Ok(plan) => plan,
        Err(RunError::Interrupted(i)) => {
            eprintln!("triage: {i}");
            return Ok(ExitCode::from(u8::try_from(128 + i.number).unwrap_or(1)));
        }
        Err(RunError::Backend(e)) => return Err(e.into()),
    };
    output::emit(&plan, args.json, args.plan_out.as_deref())?;
    Ok(ExitCode::from(plan.exit_code()))
}
