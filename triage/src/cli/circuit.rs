//! `triage circuit`: show and clear the agents' circuit breakers kept in the state directory.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use triage::resilience::CircuitBook;

#[derive(Debug, Args)]
pub struct CircuitArgs {
    #[command(subcommand)]
    pub command: CircuitCommand,
}

#[derive(Debug, Subcommand)]
pub enum CircuitCommand {
    /// Every breaker: state, consecutive failures, last error.
    Status,
    /// Close one breaker (by agent name, such as `claude`), or all.
    Reset { name: Option<String> },
}

pub fn run(args: CircuitArgs) -> anyhow::Result<ExitCode> {
    let book = CircuitBook::new(CircuitBook::default_dir(), 3, Duration::from_secs(1800));
    match args.command {
        CircuitCommand::Status => {
            let all = book.list()?;
            if all.is_empty() {
                println!("no circuit breakers recorded in {}", book.dir().display());
            }
            for (name, c) in all {
                println!(
                    "{name}: {}, {} consecutive failures{}",
                    triage::model::serde_name(&c.state),
                    c.consecutive_failures,
                    c.last_error.map(|e| format!(", last error: {e}")).unwrap_or_default()
                );
            }
        }
        CircuitCommand::Reset { name } => {
            let cleared = book.reset(name.as_deref())?;
            match (cleared.is_empty(), name) {
                (true, Some(n)) => println!("no circuit breaker named `{n}`"),
                (true, None) => println!("no circuit breakers to clear"),
                _ => println!("cleared: {}", cleared.join(", ")),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
