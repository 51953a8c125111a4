//! One attempt's log, read from its end: the file a backend names ([`LogFile`]) in, the tail
//! as tools and people see it ([`LogTail`]) out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::tail::{TailError, TailOptions, tail_bytes, tail_lines};
use crate::backend::LogFile;
use crate::model::LogStream;

/// How much of the end of a log to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailSize {
    Lines(usize),
    Bytes(u64),
}

/// The end of one attempt's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogTail {
    pub job_id: i64,
    pub attempt_id: u32,
    pub stream: LogStream,
    /// Where the log was read from.
    pub path: String,
    /// The tail, decoded lossily as UTF-8.
    pub text: String,
    /// Lines in `text`.
    pub lines: usize,
    /// Size of the whole file when it was read.
    pub file_len: u64,
    /// Whether the tail was capped (a line or the start was cut).
    pub truncated: bool,
}

impl LogTail {
    /// Read the end of the log `file` names, from the end of the file (see [`tail_lines`]).
    pub fn read(file: &LogFile, size: TailSize) -> Result<LogTail, TailError> {
        let opts = TailOptions::default();
        let tail = match size {
            TailSize::Lines(n) => tail_lines(&file.path, n, &opts),
            TailSize::Bytes(n) => tail_bytes(&file.path, n, &opts),
        }?;
        Ok(LogTail {
            job_id: file.job_id,
            attempt_id: file.attempt_id,
            stream: file.stream,
            path: file.shown.clone(),
            text: tail.text().into_owned(),
            lines: tail.lines,
            file_len: tail.file_len,
            truncated: tail.truncated,
        })
    }
}
