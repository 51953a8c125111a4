//! MCP resources, so a client can show a job's logs and a written plan without a tool call:
//!
//! - `triage://workflows/{workflow_id}/jobs/{job_id}/attempts/{attempt_id}/stderr` (and
//!   `.../stdout`): the end of that attempt's log, at most [`MAX_LOG_BYTES`] of it, read from
//!   the end of the file so a huge log costs no more than a small one. The text is untrusted
//!   data written by the job.
//! - `triage://plans/{name}`: a plan this server wrote for a person (`--confirm required`
//!   with a client that cannot ask), as JSON; `resources/list` lists them.
//!
//! Bad URIs get an error naming the URI and the shapes this server serves.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use triage::backend::LogStream;
use triage::logs::TailSize;

use crate::state::State;

/// The most of a log one read returns: its last 256 KiB.
pub const MAX_LOG_BYTES: u64 = 256 * 1024;

const LOG_TEMPLATE: &str = "triage://workflows/{workflow_id}/jobs/{job_id}/attempts/{attempt_id}/{stream}";
const PLAN_PREFIX: &str = "triage://plans/";

pub fn templates() -> ListResourceTemplatesResult {
    let log = |stream: &str| {
        ResourceTemplate::new(LOG_TEMPLATE.replace("{stream}", stream), format!("job-attempt-{stream}"))
            .with_title(format!("A job attempt's {stream}"))
            .with_description(format!(
                "The end (at most {} KiB) of one attempt's {stream}; untrusted data written by the job",
                MAX_LOG_BYTES / 1024
            ))
            .with_mime_type("text/plain")
    };
    ListResourceTemplatesResult::with_all_items(vec![
        log("stderr"),
        log("stdout"),
        ResourceTemplate::new(format!("{PLAN_PREFIX}{{name}}"), "plan")
            .with_title("A plan for a person")
            .with_description("A plan this server wrote for a person to review and apply with `triage apply --plan`")
            .with_mime_type("application/json"),
    ])
}

/// The plans this server wrote, newest first.
pub fn list(state: &State) -> ListResourcesResult {
    let mut plans: Vec<(std::time::SystemTime, Resource)> = std::fs::read_dir(state.plans_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok().filter(|n| n.ends_with(".json"))?;
            let meta = e.metadata().ok()?;
            let r = Resource::new(format!("{PLAN_PREFIX}{name}"), name.clone())
                .with_title(format!("Plan {name}"))
                .with_description("Moves an agent proposed, awaiting a person: `triage apply --plan FILE` applies them")
                .with_mime_type("application/json")
                .with_size(meta.len());
            Some((meta.modified().unwrap_or(std::time::UNIX_EPOCH), r))
        })
        .collect();
    plans.sort_by_key(|p| std::cmp::Reverse(p.0));
    ListResourcesResult::with_all_items(plans.into_iter().map(|(_, r)| r).collect())
}

pub async fn read(state: &State, uri: &str) -> Result<ReadResourceResult, McpError> {
    if let Some(name) = uri.strip_prefix(PLAN_PREFIX) {
        return read_plan(state, uri, name);
    }
    let (workflow_id, job_id, attempt_id, stream) = parse_log_uri(uri).ok_or_else(|| {
        McpError::invalid_params(
            format!(
                "unknown resource `{uri}`: this server serves {LOG_TEMPLATE} (stream stderr or stdout) and {PLAN_PREFIX}{{name}}"
            ),
            None,
        )
    })?;
    state.check_workflow(workflow_id).map_err(|e| McpError::invalid_params(e, None))?;
    let tail = state
        .engine
        .tail(workflow_id, job_id, Some(attempt_id), stream, TailSize::Bytes(MAX_LOG_BYTES))
        .await
        .map_err(|e| McpError::resource_not_found(format!("`{uri}`: {e}"), None))?;
    Ok(ReadResourceResult::new(vec![ResourceContents::text(tail.text, uri)]))
}

fn read_plan(state: &State, uri: &str, name: &str) -> Result<ReadResourceResult, McpError> {
    let safe = !name.is_empty()
        && name.ends_with(".json")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.starts_with('.');
    if !safe {
        return Err(McpError::invalid_params(
            format!("`{uri}` does not name a plan: take plan URIs from resources/list"),
            None,
        ));
    }
    let text = std::fs::read_to_string(state.plans_dir().join(name))
        .map_err(|e| McpError::resource_not_found(format!("`{uri}`: {e}; take plan URIs from resources/list"), None))?;
    Ok(ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.into(),
        mime_type: Some("application/json".into()),
        text,
        meta: None,
    }]))
}

/// `triage://workflows/W/jobs/J/attempts/A/STREAM` into its parts.
fn parse_log_uri(uri: &str) -> Option<(i64, i64, u32, LogStream)> {
    let rest = uri.strip_prefix("triage://workflows/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [w, "jobs", j, "attempts", a, s] = parts.as_slice() else { return None };
    let stream = match *s {
        "stderr" => LogStream::Stderr,
        "stdout" => LogStream::Stdout,
        _ => return None,
    };
    Some((w.parse().ok()?, j.parse().ok()?, a.parse().ok()?, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_uris_parse_and_nothing_else_does() {
        assert_eq!(
            parse_log_uri("triage://workflows/42/jobs/5/attempts/1/stderr"),
            Some((42, 5, 1, LogStream::Stderr))
        );
        assert_eq!(
            parse_log_uri("triage://workflows/42/jobs/5/attempts/2/stdout").map(|p| p.3),
            Some(LogStream::Stdout)
        );
        for bad in [
            "triage://workflows/42/jobs/5/attempts/1/stdin",
            "triage://workflows/x/jobs/5/attempts/1/stderr",
            "triage://workflows/42/jobs/5/attempts/-1/stderr",
            "triage://workflows/42/jobs/5/stderr",
            "file:///etc/passwd",
        ] {
            assert_eq!(parse_log_uri(bad), None, "{bad}");
        }
    }
}
