//! `triage run`: the main job. Spawn the agent, validate its proposals, apply or report.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use triage::resilience::CircuitBook;
use triage::run::RunError;

use super::agent_args::AgentArgs;
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
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Print the plan document (JSON) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the plan (JSON) to FILE and a Markdown report beside it, for `triage review`
    /// and `triage apply`.
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
}

pub async fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<ExitCode> {
    let settings = global.settings()?;
    let mut engine = settings.engine()?;
    args.agent.check(&mut engine)?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let work_dir = match &args.plan_out {
        Some(p) => p.with_extension("agent"),
        None => CircuitBook::default_dir().join("runs").join(format!("wf{}-{stamp}", args.workflow)),
    };
    let opts = args.agent.run_options(&settings, args.workflow, args.dry_run, work_dir)?;
    let seed = opts.seed;
    let progress = Progress::new();
    progress.message(&format!("triaging workflow {} with {} (seed {seed})", args.workflow, args.agent.agent.as_str()));
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
