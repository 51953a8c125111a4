//! `triage synth`: write a synthetic store for tests and benchmarks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Folder of the new store (created).
    pub dir: PathBuf,
    /// Workflow id.
    #[arg(long, default_value_t = 1)]
    pub workflow: i64,
    /// Number of pending_failed jobs.
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Distinct failure causes (1 to 12).
    #[arg(long, default_value_t = 12)]
    pub causes: usize,
    /// Lines of stderr per job.
    #[arg(long, default_value_t = 41)]
    pub lines: usize,
}

pub fn run(args: SynthArgs) -> anyhow::Result<ExitCode> {
    triage::synth::write_store(&args.dir, args.workflow, args.jobs, args.causes, args.lines)?;
    eprintln!(
        "wrote {} pending_failed jobs ({} causes) to {}",
        args.jobs,
        args.causes.clamp(1, 12),
        args.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
