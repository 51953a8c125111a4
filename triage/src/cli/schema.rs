//! `triage schema`: JSON Schemas generated from the Rust types, so files can be checked.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use triage::catalog::Hints;
use triage::engine::{Plan, Policy};
use triage::model::Workflow;

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which document: `store` (a directory store's workflow.json), `hints` (`hints --json`),
    /// `plan` (`run --json`, `--plan-out`) or `policy` (`--policy`).
    pub which: Which,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Which {
    Store,
    Hints,
    Plan,
    Policy,
}

pub fn run(args: SchemaArgs) -> anyhow::Result<ExitCode> {
    let schema = match args.which {
        Which::Store => schemars::schema_for!(Workflow),
        Which::Hints => schemars::schema_for!(Hints),
        Which::Plan => schemars::schema_for!(Plan),
        Which::Policy => schemars::schema_for!(Policy),
    };
    println!("{}", serde_json::to_string_pretty(&schema)?);
    Ok(ExitCode::SUCCESS)
}
