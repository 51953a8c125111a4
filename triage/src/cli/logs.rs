//! `triage logs`: the end of one job attempt's stderr or stdout.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use triage::backend::LogStream;
use triage::logs::TailSize;

use super::common::GlobalArgs;

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Workflow id.
    #[arg(long)]
    pub workflow: i64,
    /// Job id.
    #[arg(long)]
    pub job: i64,
    /// Attempt number (default: the latest finished attempt).
    #[arg(long)]
    pub attempt: Option<u32>,
    /// Lines from the end (like `tail -n`).
    #[arg(long, default_value_t = 50, conflicts_with = "bytes")]
    pub lines: usize,
    /// Bytes from the end instead of lines (like `tail -c`).
    #[arg(long)]
    pub bytes: Option<u64>,
    /// Read stdout instead of stderr.
    #[arg(long)]
    pub stdout: bool,
    /// Print JSON with the path, sizes and whether the tail was cut.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: LogsArgs) -> anyhow::Result<ExitCode> {
    let engine = global.engine()?;
    let stream = if args.stdout { LogStream::Stdout } else { LogStream::Stderr };
    let size = match args.bytes {
        Some(b) => TailSize::Bytes(b),
        None => TailSize::Lines(args.lines),
    };
    let tail = engine.tail(args.workflow, args.job, args.attempt, stream, size).await?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&tail)?)?;
    } else {
        out.write_all(tail.text.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
