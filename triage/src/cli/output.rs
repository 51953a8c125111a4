//! Writing a plan where it was asked for: `--json` on stdout, `--plan-out` with its Markdown
//! report beside it, the GitHub step summary, and a short table on stdout otherwise.

use std::io::Write;
use std::path::Path;
use triage::model::serde_name;

use anyhow::Context;
use triage::engine::report;
use triage::engine::{Outcome, Plan};

/// Print and save `plan` as the flags ask.
pub fn emit(plan: &Plan, json: bool, plan_out: Option<&Path>) -> anyhow::Result<()> {
    if let Some(path) = plan_out {
        save(plan, path)?;
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)
            .with_context(|| format!("cannot append to GITHUB_STEP_SUMMARY ({})", Path::new(&summary).display()))?;
        writeln!(f, "{}", report::summary(plan))?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(plan)?)?;
    } else {
        write!(out, "{}", table(plan))?;
    }
    Ok(())
}

/// Write the plan (JSON) and its report (`.md` beside it).
pub fn save(plan: &Plan, path: &Path) -> anyhow::Result<()> {
    let mut json = serde_json::to_vec_pretty(plan)?;
    json.push(b'\n');
    triage::fsutil::write_atomic(path, &json)
        .with_context(|| format!("cannot write the plan to {}", path.display()))?;
    let md = path.with_extension("md");
    triage::fsutil::write_atomic(&md, report::markdown(plan).as_bytes())
        .with_context(|| format!("cannot write the report to {}", md.display()))?;
    eprintln!("triage: plan written to {} (report: {})", path.display(), md.display());
    Ok(())
}

/// A compact terminal table.
pub fn table(plan: &Plan) -> String {
    let mut out = format!(
        "workflow {} ({}), proposals by {}, catalog {}\n",
        plan.workflow_id,
        if plan.dry_run { "dry run: nothing changed" } else { "applied" },
        plan.agent,
        plan.catalog_version
    );
    out.push_str(&format!(
        "{:>6}  {:<20} {:<6} {:<10} {:<13} {}\n",
        "job", "name", "action", "validation", "outcome", "why"
    ));
    for j in &plan.jobs {
        let action = j.proposed.as_ref().map(|p| p.action.as_str()).unwrap_or("-");
        let why = j
            .validation
            .messages
            .iter()
            .chain(&j.notes)
            .find(|m| !m.is_empty())
            .cloned()
            .or_else(|| j.proposed.as_ref().map(|p| p.reason.clone()))
            .unwrap_or_default();
        let status = serde_name(&j.validation.status);
        let outcome = serde_name(&j.outcome);
        let mut name: String = j.name.chars().take(20).collect();
        if j.outcome == Outcome::NeedsReview {
            name = format!("{name}*");
        }
        let why: String = why.replace('\n', " ").chars().take(110).collect();
        out.push_str(&format!("{:>6}  {:<20} {:<6} {:<10} {:<13} {}\n", j.job_id, name, action, status, outcome, why));
    }
    let s = &plan.summary;
    out.push_str(&format!(
        "{} jobs: {} would apply, {} applied, {} need review, {} skipped, {} errors ({} retry, {} fail)\n",
        s.jobs, s.would_apply, s.applied, s.needs_review, s.skipped, s.error, s.retry, s.fail
    ));
    out
}
