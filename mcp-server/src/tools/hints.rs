//! `get_pattern_hints`: the catalog's view of a job's latest failure, or of some text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use triage::catalog::{Hints, ScanContext};
use triage::model::SchedulerState;

use crate::render;
use crate::state::State;

const MAX_TEXT: usize = 1 << 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HintsArgs {
    /// Workflow id (with `job_id`).
    #[serde(default, deserialize_with = "crate::lenient::opt_int")]
    pub workflow_id: Option<i64>,
    /// Job id (with `workflow_id`): its latest attempt's stderr, exit code and scheduler state.
    #[serde(default, deserialize_with = "crate::lenient::opt_int")]
    pub job_id: Option<i64>,
    /// Text to classify instead of a job's stderr (at most 1 MiB).
    #[serde(default)]
    pub text: Option<String>,
    /// Exit status to consider with `text` (e.g. 137).
    #[serde(default, deserialize_with = "crate::lenient::opt_int")]
    pub exit_code: Option<i64>,
    /// Scheduler state to consider with `text`: PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, ...
    #[serde(default)]
    pub scheduler_state: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HintsOut {
    /// `job` or `text`.
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<u32>,
    pub catalog_version: String,
    #[serde(flatten)]
    pub hints: Hints,
}

pub async fn run(state: &State, args: HintsArgs) -> Result<rmcp::model::CallToolResult, String> {
    let engine = &state.engine;
    let out = match (args.workflow_id, args.job_id, args.text) {
        (Some(wf), Some(job_id), None) => {
            state.check_workflow(wf)?;
            let info = engine.backend.workflow(wf).await.map_err(|e| e.to_string())?;
            let job = engine.backend.job(wf, job_id).await.map_err(|e| e.to_string())?;
            let attempt_id = job.last_attempt().map(|a| a.attempt_id);
            let ev = engine.evidence(&info, job).await.map_err(|e| e.to_string())?;
            HintsOut { source: "job".into(), job_id: Some(job_id), attempt_id, catalog_version: engine.catalog.version().into(), hints: std::sync::Arc::unwrap_or_clone(ev.hints) }
        }
        (None, None, Some(text)) => {
            if text.len() > MAX_TEXT {
                return Err(format!("`text` is {} bytes; send at most {MAX_TEXT} (the end of the log is what matters)", text.len()));
            }
            let scheduler_state = match args.scheduler_state {
                Some(s) => Some(s.parse::<SchedulerState>().map_err(|e| e.to_string())?),
                None => None,
            };
            let ctx = ScanContext { exit_code: args.exit_code, scheduler_state };
            HintsOut { source: "text".into(), job_id: None, attempt_id: None, catalog_version: engine.catalog.version().into(), hints: engine.catalog.scan(&text, &ctx) }
        }
        _ => return Err("give either `workflow_id` and `job_id` (a job's latest failure) or `text` (with optional `exit_code` and `scheduler_state`)".into()),
    };
    let text = render::hints(&out.hints);
    crate::tools::respond(&out, text)
}
