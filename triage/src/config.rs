//! Configuration both binaries resolve the same way: the backend (flag, environment,
//! default), catalog files (`--catalog`, else `TRIAGE_CATALOG`), and the policy file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::time::Duration;

use crate::backend::torc::TorcOptions;
use crate::backend::{BackendError, BackendOptions, BackendSpec, JobBackend, open_backend};
use crate::catalog::{Catalog, CatalogError};
use crate::engine::{Policy, PolicyError, Resilience};
use crate::resilience::Backoff;

/// The backend flags a surface accepts.
#[derive(Debug, Clone, Default)]
pub struct BackendFlags {
    /// `--backend SPEC`.
    pub backend: Option<String>,
    /// `--api-url URL`, an alias of `--backend torc:URL`.
    pub api_url: Option<String>,
    /// `--torc-output-dir DIR` (alias `--output-dir`).
    pub torc_output_dir: Option<PathBuf>,
}

impl BackendFlags {
    /// The spec the flags name, if they name one.
    pub fn spec_flag(&self) -> Option<String> {
        match (&self.backend, &self.api_url) {
            (Some(b), _) => Some(b.clone()),
            (None, Some(url)) => Some(format!("torc:{url}")),
            (None, None) => None,
        }
    }

    /// Resolve and open the backend with the default resilience settings.
    pub fn open(&self) -> Result<Arc<dyn JobBackend>, BackendError> {
        self.open_with(&Resilience::default())
    }

    /// Resolve and open the backend; a remote one times out and retries as `resilience`
    /// says (no retries with `TRIAGE_RESILIENCE=off`).
    pub fn open_with(&self, resilience: &Resilience) -> Result<Arc<dyn JobBackend>, BackendError> {
        let (spec, source) = BackendSpec::resolve(self.spec_flag().as_deref())?;
        let backoff =
            if crate::resilience::disabled() { Backoff::none() } else { Backoff::new(resilience, fastrand::u64(..)) };
        let opts = BackendOptions {
            torc: TorcOptions {
                output_dir: self.torc_output_dir(),
                timeout: Duration::from_secs(resilience.backend_timeout_secs.max(1)),
                backoff,
            },
        };
        open_backend(&spec, source, &opts)
    }

    /// `--torc-output-dir`, else `TORC_OUTPUT_DIR`, else `torc_output` (Torc's default).
    pub fn torc_output_dir(&self) -> PathBuf {
        self.torc_output_dir
            .clone()
            .or_else(|| std::env::var_os("TORC_OUTPUT_DIR").filter(|v| !v.is_empty()).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("torc_output"))
    }
}

/// Catalog files: the flags if any, else the paths in `TRIAGE_CATALOG` (separated like PATH).
pub fn catalog_files(flags: &[PathBuf]) -> Vec<PathBuf> {
    if !flags.is_empty() {
        return flags.to_vec();
    }
    std::env::var_os("TRIAGE_CATALOG")
        .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
        .unwrap_or_default()
}

/// The built-in catalog plus the user's files.
pub fn load_catalog(flags: &[PathBuf]) -> Result<Catalog, CatalogError> {
    Catalog::load(&catalog_files(flags))
}

/// The policy file if one is named (flag, else `TRIAGE_POLICY`), else the defaults.
pub fn load_policy(flag: Option<&Path>) -> Result<Policy, PolicyError> {
    let env = std::env::var_os("TRIAGE_POLICY").filter(|v| !v.is_empty()).map(PathBuf::from);
    match flag.map(Path::to_path_buf).or(env) {
        Some(path) => Policy::load(&path),
        None => Ok(Policy::default()),
    }
}
