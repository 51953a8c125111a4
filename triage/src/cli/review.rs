//! `triage review`: walk a person through the jobs that need one, and write the reviewed
//! plan. Works in a terminal and from piped answers (one answer per line).
//!
//! Answers: `a` accept the proposal, `r` retry, `f` fail, `s` skip (leave it for later),
//! `q` quit (keep the answers so far). A decision made here is marked `source: review`:
//! `triage apply` then holds it only to the hard rules (state, budget, resources).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use triage::engine::{Outcome, Plan, Proposal, REVIEWED, report};
use triage::model::Action;

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
    let pending: Vec<usize> = (0..plan.jobs.len()).filter(|&i| plan.jobs[i].outcome == Outcome::NeedsReview).collect();
    writeln!(err, "{} of {} jobs need a decision.", pending.len(), plan.jobs.len())?;
    let mut decided = 0;
    'jobs: for i in pending {
        let single = Plan { jobs: vec![plan.jobs[i].clone()], ..plan.clone() };
        let section = report::markdown(&single);
        let body = section.split("\n## Job").nth(1).map(|s| format!("## Job{s}")).unwrap_or(section);
        writeln!(err, "\n{}", body.trim_end())?;
        loop {
            write!(err, "\n[a]ccept proposal / [r]etry / [f]ail / [s]kip / [q]uit > ")?;
            err.flush()?;
            let Some(answer) = lines.next().transpose()? else { break 'jobs };
            let job = &mut plan.jobs[i];
            let chosen = match answer.trim().to_ascii_lowercase().as_str() {
                "a" | "accept" => match &job.proposed {
                    Some(p) => Some(p.action),
                    None => {
                        writeln!(err, "nothing was proposed for this job; answer r or f")?;
                        continue;
                    }
                },
                "r" | "retry" => Some(Action::Retry),
                "f" | "fail" => Some(Action::Fail),
                "s" | "skip" | "" => None,
                "q" | "quit" => break 'jobs,
                other => {
                    writeln!(err, "`{other}` is not an answer; type a, r, f, s or q")?;
                    continue;
                }
            };
            if let Some(action) = chosen {
                let base = job.proposed.clone();
                let kept = base.as_ref().filter(|p| p.action == action);
                job.proposed = Some(Proposal {
                    action,
                    reason: format!(
                        "{reviewer} decided {action} in triage review{}",
                        kept.map(|p| format!(" (proposal: {})", p.reason)).unwrap_or_default()
                    ),
                    source: REVIEWED.into(),
                    memory: kept.and_then(|p| p.memory.clone()),
                    runtime: kept.and_then(|p| p.runtime.clone()),
                    confidence: None,
                    override_catalog: true,
                    attempt_id: Some(job.attempt_id),
                });
                job.outcome = Outcome::WouldApply;
                job.notes.push(format!("reviewed by {reviewer}: {action}"));
                decided += 1;
            }
            break;
        }
    }
    plan.summarize();
    let out = args.out.clone().unwrap_or(args.plan.clone());
    output::save(&plan, &out)?;
    writeln!(err, "{decided} decisions recorded; apply them with `triage apply --plan {}`", out.display())?;
    Ok(ExitCode::SUCCESS)
}
