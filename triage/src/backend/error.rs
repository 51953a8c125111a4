//! `BackendError`: what can go wrong talking to a backend, each variant saying what to do.

use std::path::PathBuf;

/// An error from a backend. Every message names the input and the fix.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(
        "backend spec `{spec}` is not valid: {why}; use `dir:PATH` (a directory store), `torc:URL` (a Torc server's API, e.g. torc:http://127.0.0.1:8080/torc-service/v1) or `slurm:` (the Slurm cluster the client commands reach; `slurm:?cluster=NAME` for -M NAME)"
    )]
    BadSpec { spec: String, why: String },

    #[error("no directory store at {}: {why}. Name a store with `--backend dir:PATH` (or TRIAGE_BACKEND), or create the demo one with `cp -r fixtures/demo triage-store` in the triage repository", path.display())]
    StoreMissing { path: PathBuf, why: String },

    #[error("workflow {workflow_id} not found in {backend}; list the workflows there ({hint})")]
    WorkflowNotFound { backend: String, workflow_id: i64, hint: String },

    #[error(
        "job {job_id} not found in workflow {workflow_id}; check the id with `list_pending_failed_jobs` or `triage run --dry-run`"
    )]
    JobNotFound { workflow_id: i64, job_id: i64 },

    #[error("job {job_id} has no record of attempt {attempt}; recorded attempts: {known}")]
    AttemptNotFound { job_id: i64, attempt: u32, known: String },

    #[error("job {job_id} attempt {attempt} has no {stream} log: {why}")]
    LogMissing { job_id: i64, attempt: u32, stream: &'static str, why: String },

    #[error("{}:{line}:{column}: {message}; fix the file (its JSON Schema: `triage schema store`)", path.display())]
    Malformed { path: PathBuf, line: usize, column: usize, message: String },

    #[error("{} is not a valid store file:\n  - {}\nfix these and retry (its JSON Schema: `triage schema store`)", path.display(), problems.join("\n  - "))]
    Invalid { path: PathBuf, problems: Vec<String> },

    #[error("job {job_id}: log path `{log}` escapes the workflow folder {}; log paths must be relative and stay inside it", folder.display())]
    PathEscapes { job_id: i64, log: String, folder: PathBuf },

    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    #[error("{what} at {url} failed: {why}")]
    Remote { url: String, what: String, why: String, transient: bool },

    #[error("{url} answered {status} ({what}): {hint}")]
    Denied { url: String, status: u16, what: String, hint: String },

    #[error("{url} answered 404 ({what}): {hint}")]
    NoRoute { url: String, what: String, hint: String },

    #[error("`{command}` failed: {why}")]
    Command { command: String, why: String, transient: bool },

    #[error("{0}")]
    Unsupported(String),

    /// A batch of moves failed together; the text names the cause.
    #[error("{0}")]
    Batch(String),

    #[error("internal error: {0}; please report it with the command that caused it")]
    Internal(String),
}

impl BackendError {
    /// Whether trying again later may succeed (network errors, 5xx, lock timeouts).
    pub fn is_transient(&self) -> bool {
        match self {
            BackendError::Remote { transient, .. } | BackendError::Command { transient, .. } => *transient,
            BackendError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> BackendError {
        BackendError::Io { path: path.into(), source }
    }
}
