//! Command-line flags of `triage-mcp`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use triage::settings::SettingsArgs;

/// An MCP server for triaging failed batch jobs: list pending_failed jobs grouped by cause,
/// read their stderr, ask the pattern catalog, and classify them (dry run by default).
#[derive(Debug, Parser)]
#[command(name = "triage-mcp", version, about)]
pub struct Args {
    /// Backend, Torc output directory, catalog files, policy: the same flags as `triage`.
    #[command(flatten)]
    pub settings: SettingsArgs,

    /// Serve only this workflow; calls naming another get a tool error.
    #[arg(long, value_name = "ID")]
    pub workflow: Option<i64>,

    /// Nothing can change a job: classify always runs as a dry run.
    #[arg(long, conflicts_with = "propose_only")]
    pub read_only: bool,

    /// Validate classifications and record them to FILE (JSON Lines); change no job.
    /// This is the mode `triage run` gives its agent.
    #[arg(long, value_name = "FILE")]
    pub propose_only: Option<PathBuf>,

    /// Let a classification with `override: true` stand against the catalog.
    #[arg(long)]
    pub allow_overrides: bool,

    /// Largest tool answer in bytes, text and structured content together, for clients that
    /// hide longer answers from the model (Copilot CLI spills answers over about 20 KiB to a
    /// file the model cannot read without shell tools): `list_pending_failed_jobs` puts fewer
    /// groups on a page, `tail_job_stderr` keeps the end of the text. Default: no cap.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(8192..))]
    pub max_answer_bytes: Option<u32>,

    /// Whether a call with `dry_run: false` asks the person first, through their client (MCP
    /// elicitation): `elicit` asks when the client can be asked (else validation alone
    /// decides), `required` applies nothing unapproved (a client that cannot ask gets the dry
    /// run and a plan for `triage apply`), `never` does not ask. Default: the policy file's
    /// `confirm`, else `elicit`.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub confirm: Option<triage::engine::Confirm>,

    /// Name recorded as the proposer in audit events (default: the client's name).
    #[arg(long, value_name = "NAME")]
    pub agent_name: Option<String>,

    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,

    /// Environment variable holding the bearer token HTTP clients must send. Required to bind
    /// a non-loopback address. The token itself never goes on the command line.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,

    /// Extra allowed Origin for browser clients (repeatable), e.g. `https://app.example:443`.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,

    /// Extra allowed Host header values when binding a non-loopback address (repeatable).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// Log level for stderr (error, warn, info, debug, trace); RUST_LOG also works.
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
}
