//! The settings both binaries share: which backend, which catalog files, which policy.
//!
//! Two levels, as in ripgrep: [`SettingsArgs`] are the flags as typed (both `triage` and
//! `triage-mcp` flatten them into their command lines); [`Settings`] is what they mean,
//! resolved once against the environment. Everything downstream reads `Settings`: the
//! engine is built from it, and so is the argument list of a `triage-mcp` that must see the
//! same jobs, catalog and policy (the one `triage run` gives its agent, and the one
//! `triage mcp-config` registers with a client).
//!
//! Resolution:
//! - backend (`dir:PATH`, `torc:URL`, `slurm:`): `--backend SPEC` (or `--api-url URL` for
//!   `torc:URL`), else `TRIAGE_BACKEND`,
//!   else `torc:$TORC_API_URL` when Torc's own variable is set, else `dir:triage-store`;
//! - Torc's output directory: `--torc-output-dir`, else `TORC_OUTPUT_DIR`, else `torc_output`;
//! - catalog files: `--catalog` (repeatable), else the paths in `TRIAGE_CATALOG` (like PATH);
//! - policy: `--policy FILE`, else `TRIAGE_POLICY`, else the defaults.
//!
//! Paths are made absolute here, because a server started by an MCP client or an agent runs
//! in another folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::slurm::SlurmOptions;
use crate::backend::torc::TorcOptions;
use crate::backend::{BackendError, BackendOptions, BackendSpec, JobBackend, SpecSource, open_backend};
use crate::catalog::{Catalog, CatalogError};
use crate::engine::{Engine, Policy, PolicyError};
use crate::resilience::Backoff;

/// The shared flags, as typed.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
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

    /// Policy file (TOML): budgets, exit-code lists, caps, min confidence, resilience.
    /// Default: TRIAGE_POLICY, else the built-in defaults.
    #[arg(long, global = true, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// Why the settings could not be resolved or used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// The settings, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The backend (a store path made absolute).
    pub backend: BackendSpec,
    /// Where the backend spec came from (for messages).
    pub backend_source: SpecSource,
    /// Torc's output directory, absolute.
    pub torc_output_dir: PathBuf,
    /// The user's catalog files, absolute, in order (the built-in catalog comes first).
    pub catalog_files: Vec<PathBuf>,
    /// The policy file, absolute, if one is named.
    pub policy_file: Option<PathBuf>,
    /// The policy it holds (or the defaults).
    pub policy: Policy,
}

impl Settings {
    /// Resolve the flags against the environment.
    pub fn resolve(args: &SettingsArgs) -> Result<Settings, SettingsError> {
        Self::resolve_with(args, None, |k| std::env::var(k).ok())
    }

    /// [`Settings::resolve`], using `fallback_spec` (a plan's backend) when neither a flag nor
    /// a variable names one.
    pub fn resolve_or(args: &SettingsArgs, fallback_spec: Option<&str>) -> Result<Settings, SettingsError> {
        Self::resolve_with(args, fallback_spec, |k| std::env::var(k).ok())
    }

    /// The resolution, with an injectable environment (for tests).
    pub fn resolve_with(
        args: &SettingsArgs,
        fallback_spec: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let flag = match (&args.backend, &args.api_url) {
            (Some(b), _) => Some(b.clone()),
            (None, Some(url)) => Some(format!("torc:{url}")),
            (None, None) => None,
        };
        let (backend, backend_source) = match BackendSpec::resolve_with(flag.as_deref(), env)? {
            (_, SpecSource::Default) if fallback_spec.is_some() => {
                (BackendSpec::parse(fallback_spec.unwrap_or_default())?, SpecSource::Plan)
            }
            resolved => resolved,
        };
        let backend = match backend {
            BackendSpec::Dir(p) => BackendSpec::Dir(absolute(&p)),
            other => other,
        };
        let torc_output_dir = absolute(
            &args
                .torc_output_dir
                .clone()
                .or_else(|| env("TORC_OUTPUT_DIR").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("torc_output")),
        );
        let catalog_files: Vec<PathBuf> = if args.catalogs.is_empty() {
            env("TRIAGE_CATALOG")
                .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
                .unwrap_or_default()
        } else {
            args.catalogs.clone()
        };
        let catalog_files = catalog_files.iter().map(|p| absolute(p)).collect();
        let policy_file = args.policy.clone().or_else(|| env("TRIAGE_POLICY").map(PathBuf::from)).map(|p| absolute(&p));
        let policy = match &policy_file {
            Some(path) => Policy::load(path)?,
            None => Policy::default(),
        };
        Ok(Settings { backend, backend_source, torc_output_dir, catalog_files, policy_file, policy })
    }

    /// The built-in catalog plus the user's files.
    pub fn catalog(&self) -> Result<Catalog, CatalogError> {
        Catalog::load(&self.catalog_files)
    }

    /// Open the backend; a remote one times out and retries as the policy's resilience
    /// settings say (no retries with `TRIAGE_RESILIENCE=off`).
    pub fn open_backend(&self) -> Result<Arc<dyn JobBackend>, BackendError> {
        let r = &self.policy.resilience;
        let backoff = if crate::resilience::disabled() { Backoff::none() } else { Backoff::new(r, fastrand::u64(..)) };
        let timeout = Duration::from_secs(r.backend_timeout_secs.max(1));
        let opts = BackendOptions {
            torc: TorcOptions { output_dir: self.torc_output_dir.clone(), timeout, backoff },
            slurm: SlurmOptions { state_dir: crate::resilience::CircuitBook::default_dir(), timeout },
        };
        open_backend(&self.backend, self.backend_source, &opts)
    }

    /// The engine over this backend, catalog and policy.
    pub fn engine(&self) -> Result<Engine, SettingsError> {
        let backend = self.open_backend()?;
        let catalog = Arc::new(self.catalog()?);
        Ok(Engine::new(backend, catalog, self.policy.clone()))
    }

    /// The environment a `triage-mcp` started by an agent must have to see what these settings
    /// see, beyond its arguments: the state folder (where the Slurm ledger lives) and
    /// `SLURM_CONF`. MCP clients start servers with a filtered environment, so `triage run`
    /// writes these into the configuration it hands the agent. No credentials: those stay in
    /// the environment of the person's own process.
    pub fn server_env(&self) -> Vec<(String, String)> {
        let mut env = vec![(
            "TRIAGE_STATE_DIR".to_string(),
            absolute(&crate::resilience::CircuitBook::default_dir()).display().to_string(),
        )];
        if let Some(conf) = std::env::var_os("SLURM_CONF").filter(|v| !v.is_empty()) {
            env.push(("SLURM_CONF".into(), absolute(std::path::Path::new(&conf)).display().to_string()));
        }
        env
    }

    /// The `triage-mcp` arguments that make a server see what these settings see: the same
    /// backend, Torc output directory, catalog files and policy, all as absolute paths.
    pub fn server_args(&self) -> Vec<String> {
        let mut out = vec!["--backend".to_string(), self.backend.to_string()];
        if matches!(self.backend, BackendSpec::Torc(_)) {
            out.extend(["--torc-output-dir".to_string(), self.torc_output_dir.display().to_string()]);
        }
        for c in &self.catalog_files {
            out.extend(["--catalog".to_string(), c.display().to_string()]);
        }
        if let Some(p) = &self.policy_file {
            out.extend(["--policy".to_string(), p.display().to_string()]);
        }
        out
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The log filter both binaries use: `level` (their `--log` flag) else `RUST_LOG`, read as a level
/// (`warn`) or per-target levels (`triage=debug,rmcp=info`); what does not parse leaves the
/// default, `warn`. (A `Targets` filter, not `EnvFilter`: the latter builds a DFA for every
/// small regex on start-up, and span or field filters are not needed here.)
pub fn log_filter(level: Option<&str>) -> tracing_subscriber::filter::Targets {
    let spec = level.map(str::to_string).or_else(|| std::env::var("RUST_LOG").ok());
    spec.and_then(|s| s.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(tracing::Level::WARN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn server_args_carry_everything_resolved_and_absolute() {
        let args = SettingsArgs {
            backend: Some("dir:rel/store".into()),
            catalogs: vec!["extra.toml".into()],
            ..Default::default()
        };
        let s = Settings::resolve_with(&args, None, env(&[])).unwrap();
        let a = s.server_args();
        assert_eq!(a[0], "--backend");
        assert!(a[1].starts_with("dir:/") && a[1].ends_with("rel/store"), "{a:?}");
        assert!(a.iter().any(|x| x.starts_with('/') && x.ends_with("extra.toml")), "{a:?}");
        assert!(!a.contains(&"--torc-output-dir".to_string()), "only for Torc: {a:?}");

        let s = Settings::resolve_with(
            &SettingsArgs::default(),
            None,
            env(&[("TORC_API_URL", "http://h:1/torc-service/v1"), ("TRIAGE_CATALOG", "a.toml:b.toml")]),
        )
        .unwrap();
        let a = s.server_args();
        assert_eq!(a[..2], ["--backend".to_string(), "torc:http://h:1/torc-service/v1".to_string()]);
        assert!(a.iter().any(|x| x.ends_with("torc_output")), "{a:?}");
        assert_eq!(a.iter().filter(|x| *x == "--catalog").count(), 2, "{a:?}");
    }

    #[test]
    fn a_plans_backend_is_used_only_when_nothing_names_one() {
        let plan = Some("dir:/plans/store");
        let s = Settings::resolve_with(&SettingsArgs::default(), plan, env(&[])).unwrap();
        assert_eq!((s.backend.to_string(), s.backend_source), ("dir:/plans/store".into(), SpecSource::Plan));
        let s = Settings::resolve_with(&SettingsArgs::default(), plan, env(&[("TRIAGE_BACKEND", "dir:/env")])).unwrap();
        assert_eq!(s.backend.to_string(), "dir:/env");
        let flag = SettingsArgs { api_url: Some("http://t:2/v1".into()), ..Default::default() };
        let s = Settings::resolve_with(&flag, plan, env(&[])).unwrap();
        assert_eq!(s.backend.to_string(), "torc:http://t:2/v1");
    }

    #[test]
    fn a_bad_policy_file_names_itself() {
        let args = SettingsArgs { policy: Some("/nonexistent/policy.toml".into()), ..Default::default() };
        let e = Settings::resolve_with(&args, None, env(&[])).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/policy.toml"), "{e}");
    }
}
