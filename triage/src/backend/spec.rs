//! `--backend SPEC`: parsing, resolution order, and opening the backend it names.
//!
//! Resolution: the flag, else `TRIAGE_BACKEND`, else `torc:$TORC_API_URL` when Torc's own
//! variable is set, else `dir:triage-store` in the current directory.

use std::path::PathBuf;
use std::sync::Arc;

use super::dir::DirBackend;
use super::slurm::{SlurmBackend, SlurmOptions};
use super::torc::{TorcBackend, TorcOptions};
use super::{BackendError, JobBackend};

/// A parsed backend spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// `dir:PATH`, a directory store.
    Dir(PathBuf),
    /// `torc:URL`, a Torc server's REST API up to and including its prefix.
    Torc(String),
    /// `slurm:` (the cluster the client commands reach) or `slurm:?cluster=NAME` (`-M NAME`).
    Slurm { cluster: Option<String> },
}

/// Where the spec came from, for messages ("no store at triage-store (the default)").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecSource {
    Flag,
    TriageBackendEnv,
    TorcApiUrlEnv,
    /// The backend a plan was made against (`triage apply`, when nothing else names one).
    Plan,
    Default,
}

impl SpecSource {
    pub fn describe(self) -> &'static str {
        match self {
            SpecSource::Flag => "from --backend",
            SpecSource::TriageBackendEnv => "from TRIAGE_BACKEND",
            SpecSource::TorcApiUrlEnv => "from TORC_API_URL",
            SpecSource::Plan => "from the plan",
            SpecSource::Default => "the default",
        }
    }
}

impl BackendSpec {
    /// Parse `dir:PATH`, `torc:URL`, `slurm:` or `slurm:?cluster=NAME`.
    pub fn parse(spec: &str) -> Result<BackendSpec, BackendError> {
        let bad = |why: &str| BackendError::BadSpec { spec: spec.to_string(), why: why.to_string() };
        let (kind, rest) = spec.split_once(':').ok_or_else(|| bad("it has no `kind:` prefix"))?;
        match kind {
            "dir" if rest.is_empty() => Err(bad("the path is empty")),
            "dir" => Ok(BackendSpec::Dir(PathBuf::from(rest))),
            "torc" => {
                if !(rest.starts_with("http://") || rest.starts_with("https://")) {
                    return Err(bad("the URL must start with http:// or https://"));
                }
                Ok(BackendSpec::Torc(rest.trim_end_matches('/').to_string()))
            }
            "slurm" => match rest {
                "" => Ok(BackendSpec::Slurm { cluster: None }),
                _ => match rest.strip_prefix("?cluster=") {
                    Some(name)
                        if !name.is_empty()
                            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
                    {
                        Ok(BackendSpec::Slurm { cluster: Some(name.to_string()) })
                    }
                    _ => Err(bad("after `slurm:` only `?cluster=NAME` may follow (NAME: letters, digits, - and _)")),
                },
            },
            other => Err(bad(&format!("unknown backend kind `{other}`"))),
        }
    }

    /// Resolve the spec from the flag and the environment `env`: the flag, else
    /// `TRIAGE_BACKEND`, else `torc:$TORC_API_URL`, else `dir:triage-store`. Called once, by
    /// [`crate::settings::Settings`].
    pub fn resolve_with(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(BackendSpec, SpecSource), BackendError> {
        let non_empty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        if let Some(f) = flag {
            return Ok((Self::parse(f)?, SpecSource::Flag));
        }
        if let Some(v) = non_empty(env("TRIAGE_BACKEND")) {
            return Ok((Self::parse(&v)?, SpecSource::TriageBackendEnv));
        }
        if let Some(url) = non_empty(env("TORC_API_URL")) {
            return Ok((Self::parse(&format!("torc:{url}"))?, SpecSource::TorcApiUrlEnv));
        }
        Ok((BackendSpec::Dir(PathBuf::from("triage-store")), SpecSource::Default))
    }
}

impl std::fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendSpec::Dir(p) => write!(f, "dir:{}", p.display()),
            BackendSpec::Torc(u) => write!(f, "torc:{u}"),
            BackendSpec::Slurm { cluster: None } => write!(f, "slurm:"),
            BackendSpec::Slurm { cluster: Some(c) } => write!(f, "slurm:?cluster={c}"),
        }
    }
}

/// What opening a backend needs besides its spec (each kind reads its own part).
#[derive(Debug, Clone, Default)]
pub struct BackendOptions {
    /// For `torc:URL`: Torc's output directory, request timeout and retry delays.
    pub torc: TorcOptions,
    /// For `slurm:`: where the ledger lives, and the client commands' timeout.
    pub slurm: SlurmOptions,
}

/// Open the backend a spec names.
pub fn open_backend(
    spec: &BackendSpec,
    source: SpecSource,
    opts: &BackendOptions,
) -> Result<Arc<dyn JobBackend>, BackendError> {
    match spec {
        BackendSpec::Dir(path) => {
            let backend = DirBackend::open(path).map_err(|e| match e {
                BackendError::StoreMissing { path, why } => {
                    BackendError::StoreMissing { path, why: format!("{why} (store path {})", source.describe()) }
                }
                other => other,
            })?;
            Ok(Arc::new(backend))
        }
        BackendSpec::Torc(url) => Ok(Arc::new(TorcBackend::open(url, opts.torc.clone())?)),
        BackendSpec::Slurm { cluster } => Ok(Arc::new(SlurmBackend::open(cluster.clone(), opts.slurm.clone())?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_order_follows_design() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let all = env(&[("TRIAGE_BACKEND", "dir:/b"), ("TORC_API_URL", "http://h:1/torc-service/v1")]);
        assert_eq!(
            BackendSpec::resolve_with(Some("dir:/a"), all).unwrap(),
            (BackendSpec::Dir("/a".into()), SpecSource::Flag)
        );
        assert_eq!(BackendSpec::resolve_with(None, all).unwrap().1, SpecSource::TriageBackendEnv);
        let torc = env(&[("TORC_API_URL", "http://h:1/torc-service/v1/")]);
        assert_eq!(
            BackendSpec::resolve_with(None, torc).unwrap(),
            (BackendSpec::Torc("http://h:1/torc-service/v1".into()), SpecSource::TorcApiUrlEnv)
        );
        assert_eq!(
            BackendSpec::resolve_with(None, env(&[])).unwrap(),
            (BackendSpec::Dir("triage-store".into()), SpecSource::Default)
        );
    }

    #[test]
    fn slurm_specs_round_trip() {
        for s in ["slurm:", "slurm:?cluster=hpc-1"] {
            assert_eq!(BackendSpec::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn bad_specs_explain_the_forms() {
        for bad in ["store", "dir:", "torc:localhost:8080", "slurm:x", "slurm:?cluster=", "slurm:?cluster=a;b"] {
            let e = BackendSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("dir:PATH"), "{e}");
        }
    }
}
