//! The Markdown report of a plan: what a person reads before approving, and what goes into
//! `GITHUB_STEP_SUMMARY`. Evidence lines from stderr are shown as code, never as Markdown.

use std::fmt::Write;

use super::plan::{Outcome, Plan, PlanJob};
use crate::model::serde_name;

/// The full report: summary, then one section per job, those needing a person first.
pub fn markdown(plan: &Plan) -> String {
    let mut out = summary(plan);
    let mut jobs: Vec<&PlanJob> = plan.jobs.iter().collect();
    jobs.sort_by_key(|j| (j.outcome != Outcome::NeedsReview, j.job_id));
    for j in jobs {
        write_job(&mut out, j);
    }
    if !plan.events.is_empty() {
        out.push_str("\n## Events\n\n");
        for e in &plan.events {
            let _ =
                writeln!(out, "- {} `{}` {}: {}", e.time.strftime("%H:%M:%S"), e.kind, e.subject, one_line(&e.reason));
        }
    }
    if !plan.agent_output.is_empty() {
        out.push_str("\n## Agent output\n\n");
        for p in &plan.agent_output {
            let _ = writeln!(out, "- `{p}`");
        }
    }
    out
}

/// The header and the table of jobs (also the GitHub step summary).
pub fn summary(plan: &Plan) -> String {
    let s = &plan.summary;
    let mut out = format!(
        "# Triage of workflow {} ({})\n\n{} pending_failed jobs; proposals by **{}**; catalog {}; backend `{}`.\n\n",
        plan.workflow_id,
        if plan.dry_run { "dry run: nothing changed" } else { "applied" },
        s.jobs,
        plan.agent,
        plan.catalog_version,
        plan.backend
    );
    let _ = writeln!(
        out,
        "| would apply | applied | need review | skipped | errors | retry | fail |\n|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} | {} |\n",
        s.would_apply, s.applied, s.needs_review, s.skipped, s.error, s.retry, s.fail
    );
    out.push_str("| job | name | proposal | by | validation | outcome |\n|---|---|---|---|---|---|\n");
    for j in &plan.jobs {
        let (action, by) = j
            .proposed
            .as_ref()
            .map(|p| (p.action.as_str().to_string(), p.source.clone()))
            .unwrap_or_else(|| ("-".into(), "-".into()));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | **{}** |",
            j.job_id,
            cell(&j.name),
            action,
            cell(&by),
            serde_name(&j.validation.status),
            serde_name(&j.outcome)
        );
    }
    out
}

/// The section of entry `index` alone (what `triage review` shows a person).
pub fn job_section(plan: &Plan, index: usize) -> String {
    let mut out = String::new();
    if let Some(j) = plan.jobs.get(index) {
        write_job(&mut out, j);
    }
    out
}

fn write_job(out: &mut String, j: &PlanJob) {
    let _ = writeln!(out, "\n## Job {} `{}`: {}\n", j.job_id, cell(&j.name), serde_name(&j.outcome));
    let _ = writeln!(
        out,
        "- attempt {} of run {}, exit code {}",
        j.attempt_id,
        j.run_id,
        j.return_code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into())
    );
    let _ = writeln!(
        out,
        "- catalog: {} ({}), suggests {}",
        j.catalog.verdict.as_str(),
        j.catalog.category.as_deref().unwrap_or("no category"),
        j.catalog.action.map(|a| a.as_str()).unwrap_or("nothing")
    );
    if let Some(e) = &j.catalog.evidence {
        let _ = writeln!(out, "- evidence: line {} `{}`", e.line, code(&e.text));
    }
    match &j.proposed {
        Some(p) => {
            let _ = writeln!(
                out,
                "- proposed: **{}** by {} ({}): {}",
                p.action,
                cell(&p.source),
                p.authority().as_str(),
                code_or_text(&p.reason)
            );
            if let Some(c) = p.confidence {
                let _ = writeln!(out, "- confidence: {c:.2}");
            }
        }
        None => out.push_str("- proposed: nothing\n"),
    }
    let _ = writeln!(out, "- validation: {}", serde_name(&j.validation.status));
    for m in j.validation.messages.iter().chain(&j.notes) {
        let _ = writeln!(out, "  - {}", one_line(m));
    }
    let r = &j.validation.resources;
    if !r.is_empty() {
        out.push_str("\n```diff\n");
        if let Some(m) = &r.memory {
            let _ = writeln!(
                out,
                "- memory: {}\n+ memory: {}",
                m.before.map(|b| b.to_string()).unwrap_or_else(|| "unset".into()),
                m.after
            );
        }
        if let Some(t) = &r.runtime {
            let _ = writeln!(
                out,
                "- runtime: {}\n+ runtime: {}",
                t.before.map(|b| b.to_string()).unwrap_or_else(|| "unset".into()),
                t.after
            );
        }
        out.push_str("```\n");
    }
    if !j.canceled.is_empty() {
        let _ = writeln!(out, "- canceled downstream: {:?}", j.canceled);
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Text for a table cell: no pipes, no newlines.
fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}

/// Untrusted text inside inline code: backticks cannot close it.
fn code(s: &str) -> String {
    one_line(s).replace('`', "'")
}

fn code_or_text(s: &str) -> String {
    format!("`{}`", code(s))
}
