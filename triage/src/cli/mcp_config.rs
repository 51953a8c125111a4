//! `triage mcp-config`: print the configuration that registers `triage-mcp` with a client.

use std::process::ExitCode;

use clap::Args;
use triage::clients::{Client, ServerCommand};

use super::common::GlobalArgs;

#[derive(Debug, Args)]
pub struct McpConfigArgs {
    /// The client to configure.
    #[arg(long, value_enum)]
    pub client: Client,
    /// Serve only this workflow.
    #[arg(long)]
    pub workflow: Option<i64>,
    /// Register the server read-only (nothing can change a job).
    #[arg(long)]
    pub read_only: bool,
}

pub fn run(global: &GlobalArgs, args: McpConfigArgs) -> anyhow::Result<ExitCode> {
    // The same backend, catalog and policy this command resolves, as absolute paths: clients
    // start servers in other folders.
    let mut server_args = global.settings()?.server_args();
    if let Some(w) = args.workflow {
        server_args.extend(["--workflow".to_string(), w.to_string()]);
    }
    if args.read_only {
        server_args.push("--read-only".into());
    }
    let exe = std::env::current_exe().ok();
    let cmd = ServerCommand::triage_mcp(exe.as_deref(), server_args);
    let rendered = cmd.render(args.client);
    for line in rendered.note.lines() {
        eprintln!("# {line}");
    }
    print!("{}", rendered.body);
    Ok(ExitCode::SUCCESS)
}
