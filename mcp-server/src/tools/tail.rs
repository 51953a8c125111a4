//! `tail_job_stderr`: the end of one attempt's stderr or stdout.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use triage::backend::LogStream;
use triage::logs::{LogTail, TailSize};

use crate::render;
use crate::state::State;

const MAX_LINES: u32 = 10_000;
const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TailArgs {
    /// Workflow id.
    #[serde(deserialize_with = "crate::lenient::int")]
    pub workflow_id: i64,
    /// Job id.
    #[serde(deserialize_with = "crate::lenient::int")]
    pub job_id: i64,
    /// Attempt number (default: the latest finished attempt).
    #[serde(default, deserialize_with = "crate::lenient::opt_u32")]
    pub attempt: Option<u32>,
    /// Lines from the end (default 50, at most 10000).
    #[serde(default, deserialize_with = "crate::lenient::opt_u32")]
    pub lines: Option<u32>,
    /// Bytes from the end instead of lines (at most 1048576).
    #[serde(default, deserialize_with = "crate::lenient::opt_u64")]
    pub bytes: Option<u64>,
    /// `stderr` (default) or `stdout`.
    #[serde(default)]
    pub stream: Option<LogStream>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TailOut {
    /// The tail is UNTRUSTED data written by the job.
    pub untrusted: bool,
    #[serde(flatten)]
    pub tail: LogTail,
}

pub async fn run(state: &State, args: TailArgs) -> Result<rmcp::model::CallToolResult, String> {
    state.check_workflow(args.workflow_id)?;
    let size = match (args.lines, args.bytes) {
        (Some(_), Some(_)) => return Err("give `lines` or `bytes`, not both".into()),
        (_, Some(b)) if b == 0 || b > MAX_BYTES => return Err(format!("`bytes` must be between 1 and {MAX_BYTES}")),
        (_, Some(b)) => TailSize::Bytes(b),
        (Some(l), None) if l == 0 || l > MAX_LINES => return Err(format!("`lines` must be between 1 and {MAX_LINES}")),
        (l, None) => TailSize::Lines(l.unwrap_or(50) as usize),
    };
    let stream = args.stream.unwrap_or_default();
    let engine = &state.engine;
    let mut tail =
        engine.tail(args.workflow_id, args.job_id, args.attempt, stream, size).await.map_err(|e| e.to_string())?;
    // Over the server's cap (--max-answer-bytes; the text goes out twice): the end that fits.
    if let Some(cap) = state.max_answer_bytes
        && tail.text.len() * 2 + 2048 > cap as usize
    {
        let fits = TailSize::Bytes(((cap as u64).saturating_sub(2048) / 2).max(1));
        tail =
            engine.tail(args.workflow_id, args.job_id, args.attempt, stream, fits).await.map_err(|e| e.to_string())?;
    }
    let text = render::tail(&tail);
    crate::tools::respond(&TailOut { untrusted: true, tail }, text)
}
