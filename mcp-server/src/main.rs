//! `triage-mcp`: a standalone MCP server that lets an agent triage a workflow's
//! pending_failed jobs, over stdio (default) or streamable HTTP (`--http ADDR`).
//!
//! Thin by design: the tools parse arguments, call the `triage` engine, and render results.
//! stdout carries the protocol and nothing else; logs go to stderr.

mod approval;
mod args;
mod http;
mod lenient;
mod render;
mod resources;
mod server;
mod state;
mod tools;

use clap::Parser;
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = args::Args::parse();
    init_logging(args.log_level.as_deref());
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("triage-mcp: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

async fn run(args: args::Args) -> anyhow::Result<()> {
    let state = state::State::from_args(&args)?;
    let server = server::TriageServer::new(state);
    match args.http {
        Some(addr) => http::serve(addr, server, &args).await,
        None => {
            tracing::info!("serving MCP on stdio");
            let running = server.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        }
    }
}

fn init_logging(level: Option<&str>) {
    let filter = match level {
        Some(l) => tracing_subscriber::EnvFilter::new(l),
        None => tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
    };
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).try_init();
}
