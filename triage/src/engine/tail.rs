//! Reading an attempt's log: the backend says which file, the logs layer reads its end.
//! Both surfaces (`tail_job_stderr`, `triage logs`) and the evidence come through here, so a
//! missing file reads the same everywhere: which job, attempt and stream, and what to do.

use super::Engine;
use crate::backend::{BackendError, JobBackend, LogStream};
use crate::logs::{LogTail, TailSize};

/// The end of one attempt's log (`attempt`: the latest finished one when `None`).
pub async fn read_tail(
    backend: &dyn JobBackend,
    workflow_id: i64,
    job_id: i64,
    attempt: Option<u32>,
    stream: LogStream,
    size: TailSize,
) -> Result<LogTail, BackendError> {
    let file = backend.log_file(workflow_id, job_id, attempt, stream).await?;
    LogTail::read(&file, size).map_err(|e| BackendError::LogMissing {
        job_id,
        attempt: file.attempt_id,
        stream: stream.as_str(),
        why: match &file.hint {
            Some(hint) => format!("{e}; {hint}"),
            None => e.to_string(),
        },
    })
}

impl Engine {
    /// The end of one attempt's log, from this engine's backend.
    pub async fn tail(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
        size: TailSize,
    ) -> Result<LogTail, BackendError> {
        read_tail(self.backend.as_ref(), workflow_id, job_id, attempt, stream, size).await
    }
}
