//! The prompt templates in `prompts/`, embedded in the binaries. `triage run` gives one to
//! its agent; `triage-mcp` offers them as MCP prompts. Placeholders are `{{name}}`.

/// The triage procedure for one workflow (`{{workflow_id}}`, `{{apply_note}}`).
pub const TRIAGE_WORKFLOW: &str = include_str!("../../prompts/triage-workflow.md");

/// What `{{apply_note}}` says when the agent's classifications are only proposals.
pub const PROPOSE_ONLY_NOTE: &str = "Your classifications are recorded as proposals and validated; triage applies what passes after you finish, so you do not need a second call with dry_run false.";

/// What `{{apply_note}}` says when a person is watching in their client.
pub const INTERACTIVE_NOTE: &str = "Always classify with dry_run true first, show the person the results, and apply (dry_run false) only when they agree.";

/// What `triage watch` adds to the prompt of a batch: which jobs this run covers.
pub fn batch_note(jobs: &std::collections::BTreeSet<i64>) -> String {
    let ids: Vec<String> = jobs.iter().map(i64::to_string).collect();
    format!(
        "\n\nThis run covers only these pending_failed jobs: {}. Classify those; the workflow's other pending_failed jobs are already waiting for a person, and proposals for them are ignored.\n",
        ids.join(", ")
    )
}

/// Fill a template's `{{name}}` placeholders.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(template.to_string(), |acc, (k, v)| acc.replace(&format!("{{{{{k}}}}}"), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_placeholders_and_warns_about_untrusted_stderr() {
        let text = render(TRIAGE_WORKFLOW, &[("workflow_id", "42"), ("apply_note", PROPOSE_ONLY_NOTE)]);
        assert!(!text.contains("{{"), "unfilled placeholder in {text}");
        assert!(text.contains("workflow 42") && text.contains("untrusted data"));
    }
}
