//! `triage suggest`: proposals from history for a person to review (catalog entries, flagged
//! entries, Torc failure-handler rules). `triage::engine::suggest` does the work; this file
//! prints and writes the catalog file. Nothing is applied.

use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use triage::engine::suggest::Suggestions;

use super::common::GlobalArgs;

#[derive(Debug, Args)]
pub struct SuggestArgs {
    /// The workflow whose history to learn from.
    #[arg(long)]
    pub workflow: i64,
    /// Decisions on one failure signature needed before an entry is proposed.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub min_decisions: usize,
    /// Write the proposed entries as a catalog file (load it with `--catalog FILE` once reviewed).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print everything as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: SuggestArgs) -> anyhow::Result<ExitCode> {
    let engine = global.engine()?;
    let s = engine.suggest(args.workflow, args.min_decisions).await?;
    if let Some(path) = &args.out {
        anyhow::ensure!(
            !s.catalog_toml.is_empty(),
            "no catalog entry to propose for workflow {} (see `triage suggest --workflow {}` for why); {} not written",
            args.workflow,
            args.workflow,
            path.display()
        );
        triage::fsutil::write_atomic(path, s.catalog_toml.as_bytes())
            .with_context(|| format!("cannot write the suggested catalog to {}", path.display()))?;
        eprintln!(
            "triage: {} suggested entries written to {}; review them, then use --catalog {}",
            s.entries.len(),
            path.display(),
            path.display()
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", render(&s));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(s: &Suggestions) -> String {
    let mut out = format!("workflow {} ({})\n", s.workflow_id, s.backend);
    let _ = writeln!(out, "\n{} catalog entries proposed", s.entries.len());
    for e in &s.entries {
        let by: Vec<String> = e.decided_by.iter().map(|(k, v)| format!("{k} x{v}")).collect();
        let _ = writeln!(
            out,
            "  {} ({}, {}): /{}/\n    jobs {:?}, decided by {}; retries worked {}, failed again {}; {}",
            e.id,
            e.class,
            e.action,
            e.pattern,
            e.job_ids,
            by.join(", "),
            e.outcomes.worked,
            e.outcomes.failed_again + e.outcomes.failed_differently,
            if e.effective { "decides its tails once loaded" } else { "another entry still decides its tails" }
        );
    }
    for why in &s.not_proposed {
        let _ = writeln!(out, "  not proposed: {why}");
    }
    let _ = writeln!(out, "\n{} catalog entries flagged", s.flagged.len());
    for f in &s.flagged {
        let _ = writeln!(out, "  {}: {}", f.entry, f.why);
    }
    if !s.failure_handler_rules.is_empty() {
        let _ = writeln!(
            out,
            "\nTorc failure_handlers rules (exit codes whose retries all worked):\n\nfailure_handlers:\n  - name: triage_suggested\n    rules:"
        );
        for r in &s.failure_handler_rules {
            let _ = writeln!(
                out,
                "      - exit_codes: [{}]   # {} retries worked\n        max_retries: {}",
                r.exit_code, r.retries_that_worked, r.max_retries
            );
        }
    }
    if !s.catalog_toml.is_empty() {
        let _ = writeln!(out, "\n{}", s.catalog_toml);
    }
    out
}
