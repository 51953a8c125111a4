//! Argument parsing and dispatch for the `triage` binary; one file per subcommand.

mod agent_args;
mod apply;
mod circuit;
mod common;
mod hints;
mod logs;
mod mcp_config;
mod metrics_server;
mod outcomes;
mod output;
mod progress;
mod review;
mod run;
mod schema;
mod suggest;
mod synth;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use common::init_logging;

/// What `run` and `apply` exit with, so a CI step can branch on it.
const EXIT_STATUS: &str = "Exit status: 0 all handled, 2 some jobs need a person (see the plan), 1 an error (nothing was changed for the jobs it concerns).";

/// Triage failed batch jobs safely: an agent proposes, the catalog and your policy check, you decide.
#[derive(Debug, Parser)]
#[command(name = "triage", version, about, long_about = None)]
#[command(after_help = EXIT_STATUS)]
pub struct Cli {
    #[command(flatten)]
    pub global: common::GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Triage a workflow's pending_failed jobs: an agent proposes, triage validates, then
    /// applies (or only reports with --dry-run).
    #[command(after_help = EXIT_STATUS)]
    Run(run::RunArgs),
    /// Triage failures as they land: poll, batch, triage like `run`, leave the rest for a
    /// person in a review plan that grows. Runs until SIGINT/SIGTERM or --until-complete.
    Watch(watch::WatchArgs),
    /// What became of each applied decision: retries that worked or failed again, fails that
    /// held or were reversed, per source, catalog entry and category.
    Outcomes(outcomes::OutcomesArgs),
    /// Proposals from history for a person to review: catalog entries for recurring failures
    /// agents and people decided the same way, entries whose retries keep failing, Torc
    /// failure-handler rules. Applies nothing.
    Suggest(suggest::SuggestArgs),
    /// Apply a plan (re-checking every job first).
    #[command(after_help = EXIT_STATUS)]
    Apply(apply::ApplyArgs),
    /// Decide the jobs of a plan that need a person, then write the reviewed plan.
    Review(review::ReviewArgs),
    /// Show or clear the agents' circuit breakers.
    Circuit(circuit::CircuitArgs),
    /// What the pattern catalog says about some stderr (a file, or `-` for stdin).
    Hints(hints::HintsArgs),
    /// The end of a job attempt's stderr (or stdout), read from the end of the file.
    Logs(logs::LogsArgs),
    /// Print a JSON Schema generated from triage's types.
    Schema(schema::SchemaArgs),
    /// Print the configuration that registers triage-mcp with an MCP client.
    McpConfig(mcp_config::McpConfigArgs),
    /// Write a synthetic store of pending_failed jobs (for tests and benchmarks).
    #[command(hide = true)]
    Synth(synth::SynthArgs),
}

/// Run the parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(&cli.global, args).await,
        Command::Watch(args) => watch::run(&cli.global, args).await,
        Command::Outcomes(args) => outcomes::run(&cli.global, args).await,
        Command::Suggest(args) => suggest::run(&cli.global, args).await,
        Command::Apply(args) => apply::run(&cli.global, args).await,
        Command::Review(args) => review::run(args),
        Command::Circuit(args) => circuit::run(args),
        Command::Hints(args) => hints::run(&cli.global, args).await,
        Command::Logs(args) => logs::run(&cli.global, args).await,
        Command::Schema(args) => schema::run(args),
        Command::McpConfig(args) => mcp_config::run(&cli.global, args),
        Command::Synth(args) => synth::run(args),
    }
}
