//! `triage apply`: apply a plan a person reviewed, re-checking every job against its current
//! state first. A job that moved on is skipped; running the same plan twice changes nothing
//! the second time.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use triage::engine::{Mode, PLAN_FORMAT_VERSION, Plan, RunEvent};

use super::common::GlobalArgs;
use super::output;
use super::progress::Progress;

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The plan to apply (from `triage run --plan-out`, maybe reviewed).
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// Re-check everything but change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the updated plan (JSON) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the updated plan (and its report) to FILE.
    #[arg(long, value_name = "FILE")]
    pub plan_out: Option<PathBuf>,
}

pub fn load_plan(path: &std::path::Path) -> anyhow::Result<Plan> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read the plan {}", path.display()))?;
    let plan: Plan = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}:{}:{}: not a triage plan: {e}; make one with `triage run --plan-out FILE` (its schema: `triage schema plan`)",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    anyhow::ensure!(
        plan.format == PLAN_FORMAT_VERSION,
        "{}: plan format {} is not {PLAN_FORMAT_VERSION}; make a new plan with this triage version",
        path.display(),
        plan.format
    );
    Ok(plan)
}

pub async fn run(global: &GlobalArgs, args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let mut plan = load_plan(&args.plan)?;
    let engine = global.settings_for(Some(&plan.backend))?.engine()?;
    let mode = if args.dry_run { Mode::DryRun } else { Mode::Apply };
    let who = format!("triage apply ({})", args.plan.display());
    let progress = Progress::new();
    let on_event = |e: &RunEvent| match e.kind.as_str() {
        "progress" => progress.message(&e.reason),
        _ => progress.event(e),
    };
    engine.apply_plan(&mut plan, mode, &who, &on_event).await;
    progress.finish();
    output::emit(&plan, args.json, args.plan_out.as_deref())?;
    Ok(ExitCode::from(plan.exit_code()))
}
