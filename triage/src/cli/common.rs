//! What every subcommand shares: the settings flags (backend, catalog, policy) and logging.

use clap::Args;
use triage::engine::Engine;
use triage::settings::{Settings, SettingsArgs};

/// Options accepted by every subcommand.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    #[command(flatten)]
    pub settings: SettingsArgs,

    /// Log level for messages on stderr (error, warn, info, debug, trace); RUST_LOG also works.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
}

impl GlobalArgs {
    /// The settings the flags and the environment name.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        Ok(Settings::resolve(&self.settings)?)
    }

    /// The settings, on `fallback_spec` (a plan's backend) when no flag or variable names one.
    pub fn settings_for(&self, fallback_spec: Option<&str>) -> anyhow::Result<Settings> {
        Ok(Settings::resolve_or(&self.settings, fallback_spec)?)
    }

    /// The engine over the settings' backend, catalog and policy.
    pub fn engine(&self) -> anyhow::Result<Engine> {
        Ok(self.settings()?.engine()?)
    }
}

/// Send `tracing` output to stderr; stdout belongs to the requested output.
pub fn init_logging(level: Option<&str>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(triage::settings::log_filter(level))
        .try_init();
}
