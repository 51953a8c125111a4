//! `classify_and_resolve_failures`: validate classifications and apply, record or report them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use triage::engine::classify::{ClassifyResult, Unmatched};
use triage::engine::{Mode, Summary};
use triage::model::Classification;

use crate::render;
use crate::state::{ServerMode, State};

const MAX_CLASSIFICATIONS: usize = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassifyArgs {
    /// Workflow id.
    #[serde(deserialize_with = "crate::lenient::int")]
    pub workflow_id: i64,
    /// One per job (`job_id`) or per failure group (`signature`).
    pub classifications: Vec<Classification>,
    /// Only report what would happen (default true). Set false to apply.
    #[serde(default, deserialize_with = "crate::lenient::opt_bool")]
    pub dry_run: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassifyOut {
    pub workflow_id: i64,
    pub dry_run: bool,
    /// `normal`, `read_only` or `propose_only` (validated and recorded, nothing applied).
    pub mode: String,
    pub results: Vec<ClassifyResult>,
    /// Classifications that matched no job, with why.
    pub unmatched: Vec<Unmatched>,
    pub summary: Summary,
    pub next_steps: String,
}

pub async fn run(
    state: &State,
    args: ClassifyArgs,
    client: Option<String>,
) -> Result<rmcp::model::CallToolResult, String> {
    state.check_workflow(args.workflow_id)?;
    if args.classifications.is_empty() {
        return Err("`classifications` is empty; give at least one {job_id or signature, action, reason}".into());
    }
    if args.classifications.len() > MAX_CLASSIFICATIONS {
        return Err(format!(
            "{} classifications in one call; send at most {MAX_CLASSIFICATIONS} (use `signature` to cover a whole group)",
            args.classifications.len()
        ));
    }
    let dry_run = args.dry_run.unwrap_or(true);
    let mode = match (state.mode, dry_run) {
        (ServerMode::ProposeOnly, _) => Mode::ProposeOnly,
        (ServerMode::ReadOnly, false) => {
            return Err("this server is read-only (--read-only): nothing can change a job; call with dry_run true, or ask the person to apply".into());
        }
        (_, true) => Mode::DryRun,
        (ServerMode::Normal, false) => Mode::Apply,
    };
    let agent = state.agent_name(client);
    let who = format!("triage-mcp ({agent})");
    let (results, unmatched) =
        state.engine.classify(args.workflow_id, &args.classifications, &agent, mode, &who).await.map_err(|e| {
            state.metrics.record_backend_error(&state.engine.backend.describe());
            e.to_string()
        })?;
    state.metrics.record_jobs(results.iter().map(|r| &r.entry));
    if let (Mode::ProposeOnly, Some(log)) = (mode, &state.proposals) {
        log.record(args.workflow_id, &results).map_err(|e| e.to_string())?;
    }
    let summary = Summary::of(results.iter().map(|r| &r.entry));
    let next_steps = match mode {
        Mode::DryRun => "Dry run: nothing changed. Show these results to the person; jobs marked would_apply can be applied by calling again with dry_run false. Reconsider conflicts and rejections, or leave them for review.",
        Mode::ProposeOnly => "Recorded: nothing changed. triage applies what passes validation after you finish. Reconsider conflicts and rejections if you have better evidence.",
        Mode::Apply => "Applied where the outcome says applied; jobs marked needs_review or skipped were left as they are.",
    }
    .to_string();
    let out = ClassifyOut {
        workflow_id: args.workflow_id,
        dry_run: mode != Mode::Apply,
        mode: state.mode.as_str().into(),
        results,
        unmatched,
        summary,
        next_steps,
    };
    let text = render::classify(&out);
    crate::tools::respond(&out, text)
}
