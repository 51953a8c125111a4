//! `triage apply`: apply a plan a person reviewed, re-checking every job against its current
//! state first. A job that moved on is skipped; running the same plan twice changes nothing
//! the second time.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use triage::engine::{Mode, Outcome, PLAN_FORMAT_VERSION, Plan, RunEvent};

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
    /// Policy file (TOML).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
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
    let engine = global.engine_for(Some(&plan.backend), args.policy.as_deref())?;
    let progress = Progress::new();
    let mode = if args.dry_run { Mode::DryRun } else { Mode::Apply };
    let who = format!("triage apply ({})", args.plan.display());
    let mut events = Vec::new();
    if !args.dry_run {
        for e in engine.recover(plan.workflow_id).await {
            progress.event(&e);
            events.push(e);
        }
    }
    for i in 0..plan.jobs.len() {
        let entry = &plan.jobs[i];
        let wanted = entry.proposed.is_some() && matches!(entry.outcome, Outcome::WouldApply | Outcome::NeedsReview);
        if !wanted {
            continue;
        }
        if entry.outcome == Outcome::NeedsReview
            && entry.proposed.as_ref().is_some_and(|p| p.source != triage::engine::REVIEWED)
        {
            continue; // still waiting for a person: `triage review` first
        }
        progress.message(&format!("job {}", entry.job_id));
        let updated = engine.recheck(plan.workflow_id, entry, &who, mode).await;
        if updated.outcome == Outcome::Error {
            let e = RunEvent::now(
                "error",
                &engine.backend.describe(),
                format!("job {}: {}", updated.job_id, updated.notes.join("; ")),
            );
            progress.event(&e);
            events.push(e);
        }
        plan.jobs[i] = updated;
    }
    progress.finish();
    plan.dry_run = args.dry_run;
    plan.events.extend(events);
    plan.summarize();
    output::emit(&plan, args.json, args.plan_out.as_deref())?;
    Ok(ExitCode::from(plan.exit_code()))
}
