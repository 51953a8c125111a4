//! `triage review`: walk a person through the jobs that need one, and write the reviewed
//! plan. Works in a terminal and from piped answers (one answer per line).
//!
//! Answers: `a` accept the proposal, `r` retry, `f` fail, `s` skip (leave it for later),
//! `q` quit (keep the answers so far). The engine turns each answer into a reviewed decision
//! (`triage::engine::review`); this file only asks and saves.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use triage::engine::report;
use triage::engine::review::{ANSWERS, Answer};

use super::apply::load_plan;
use super::output;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The plan to review.
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// Where to write the reviewed plan (default: over the input).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Name recorded with each decision (default: $USER).
    #[arg(long)]
    pub reviewer: Option<String>,
}

pub fn run(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let mut plan = load_plan(&args.plan)?;
    let reviewer = args.reviewer.clone().or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "a person".into());
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut err = std::io::stderr().lock();
    let pending = plan.awaiting_review();
    writeln!(err, "{} of {} jobs need a decision.", pending.len(), plan.jobs.len())?;
    let mut decided = 0;
    'jobs: for i in pending {
        writeln!(err, "\n{}", report::job_section(&plan, i).trim_end())?;
        loop {
            write!(err, "\n{ANSWERS} > ")?;
            err.flush()?;
            let Some(line) = lines.next().transpose()? else { break 'jobs };
            let answer = match line.parse::<Answer>() {
                Ok(Answer::Quit) => break 'jobs,
                Ok(a) => a,
                Err(e) => {
                    writeln!(err, "{e}")?;
                    continue;
                }
            };
            match plan.review(i, answer, &reviewer) {
                Ok(Some(_)) => decided += 1,
                Ok(None) => {}
                Err(e) => {
                    writeln!(err, "{e}")?;
                    continue;
                }
            }
            break;
        }
    }
    let out = args.out.clone().unwrap_or(args.plan.clone());
    output::save(&plan, &out)?;
    writeln!(err, "{decided} decisions recorded; apply them with `triage apply --plan {}`", out.display())?;
    Ok(ExitCode::SUCCESS)
}
