//! `triage outcomes`: what became of each applied decision, tallied per source, catalog entry
//! and category (`triage::engine::outcomes` does the work; this file prints).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::process::ExitCode;

use clap::Args;
use triage::engine::outcomes::{OutcomeReport, Tally};
use triage::model::serde_name;

use super::common::GlobalArgs;

#[derive(Debug, Args)]
pub struct OutcomesArgs {
    /// The workflow whose decisions to follow up.
    #[arg(long)]
    pub workflow: i64,
    /// Print the report (JSON) on stdout: every decision with its result, and the tallies.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: OutcomesArgs) -> anyhow::Result<ExitCode> {
    let engine = global.engine()?;
    let report = engine.outcomes(args.workflow).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn table(title: &str, rows: &BTreeMap<String, Tally>, out: &mut String) {
    let _ = writeln!(
        out,
        "\n{title:<32} {:>7} {:>6} {:>7} {:>9} {:>7} {:>5} {:>4} {:>8}",
        "retries", "worked", "again", "differ", "not-run", "fails", "held", "reversed"
    );
    for (k, t) in rows {
        let name: String = k.chars().take(32).collect();
        let _ = writeln!(
            out,
            "{name:<32} {:>7} {:>6} {:>7} {:>9} {:>7} {:>5} {:>4} {:>8}",
            t.retries, t.worked, t.failed_again, t.failed_differently, t.not_run_yet, t.fails, t.held, t.reversed
        );
    }
}

fn render(r: &OutcomeReport) -> String {
    let mut out = format!("workflow {} ({}): {} decisions\n", r.workflow_id, r.backend, r.decisions.len());
    table("by source", &r.by_source, &mut out);
    table("by catalog entry", &r.by_catalog_entry, &mut out);
    table("by category", &r.by_category, &mut out);
    let _ = writeln!(out, "\n{:>6}  {:<20} {:<6} {:>7}  {:<20} source", "job", "name", "action", "attempt", "result");
    for d in &r.decisions {
        let name: String = d.name.chars().take(20).collect();
        let attempt = d.attempt_id.map_or("?".into(), |a| a.to_string());
        let _ = writeln!(
            out,
            "{:>6}  {name:<20} {:<6} {attempt:>7}  {:<20} {}",
            d.job_id,
            d.action,
            serde_name(&d.result),
            d.source
        );
    }
    if let Some(s) = r.total.retry_success() {
        let _ = writeln!(out, "\nretries that worked: {:.0}% of those that ran again", s * 100.0);
    }
    out
}
