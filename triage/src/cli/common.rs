//! What every subcommand shares: backend and catalog selection, logging to stderr.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use triage::backend::JobBackend;
use triage::catalog::Catalog;
use triage::config::{BackendFlags, load_catalog, load_policy};
use triage::engine::Engine;

/// Options accepted by every subcommand.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Where the jobs live: `dir:PATH` or `torc:URL`. Default: TRIAGE_BACKEND, else
    /// torc:$TORC_API_URL, else dir:triage-store.
    #[arg(long, global = true, value_name = "SPEC")]
    pub backend: Option<String>,

    /// Alias of `--backend torc:URL`, for people coming from Torc.
    #[arg(long, global = true, value_name = "URL", conflicts_with = "backend")]
    pub api_url: Option<String>,

    /// Where Torc's runner wrote job_stdio/ (default: TORC_OUTPUT_DIR, else torc_output).
    #[arg(long, global = true, value_name = "DIR", alias = "output-dir")]
    pub torc_output_dir: Option<PathBuf>,

    /// Extra catalog file (repeatable): adds entries or overrides them by id.
    /// Default: the paths in TRIAGE_CATALOG (separated like PATH).
    #[arg(long = "catalog", global = true, value_name = "FILE")]
    pub catalogs: Vec<PathBuf>,

    /// Log level for messages on stderr (error, warn, info, debug, trace); RUST_LOG also works.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
}

impl GlobalArgs {
    pub fn backend_flags(&self) -> BackendFlags {
        BackendFlags {
            backend: self.backend.clone(),
            api_url: self.api_url.clone(),
            torc_output_dir: self.torc_output_dir.clone(),
        }
    }

    /// Open the backend named by the flags and the environment.
    pub fn backend(&self) -> anyhow::Result<Arc<dyn JobBackend>> {
        Ok(self.backend_flags().open()?)
    }

    /// The engine over the flags' backend, catalog and policy.
    pub fn engine(&self, policy: Option<&Path>) -> anyhow::Result<Engine> {
        self.engine_for(None, policy)
    }

    /// The engine, on `fallback_spec` (e.g. a plan's backend) when no flag or variable names one.
    pub fn engine_for(&self, fallback_spec: Option<&str>, policy: Option<&Path>) -> anyhow::Result<Engine> {
        let mut flags = self.backend_flags();
        let env_names_one =
            ["TRIAGE_BACKEND", "TORC_API_URL"].iter().any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()));
        if flags.spec_flag().is_none() && !env_names_one {
            flags.backend = fallback_spec.map(str::to_string);
        }
        let policy = load_policy(policy)?;
        let backend = flags.open_with(&policy.resilience)?;
        let catalog = Arc::new(self.catalog()?);
        Ok(Engine::new(backend, catalog, policy))
    }

    /// The built-in catalog plus `--catalog` files (or TRIAGE_CATALOG's).
    pub fn catalog(&self) -> anyhow::Result<Catalog> {
        Ok(load_catalog(&self.catalogs)?)
    }
}

/// Send `tracing` output to stderr; stdout belongs to the requested output.
pub fn init_logging(level: Option<&str>) {
    let filter = match level {
        Some(l) => tracing_subscriber::EnvFilter::new(l),
        None => tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
    };
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
