//! The policy: budgets, exit-code lists, resource caps and growth, confidence threshold, and
//! the `[resilience]` table (its type lives in [`crate::resilience`]). A TOML file (`--policy FILE`); every field optional.
//!
//! ```toml
//! max_retries_failure = 3          # a job's own failures (its `max_retries` wins)
//! max_retries_preemption = 100     # preemptions and node failures (seed 003)
//! retry_on_exit_codes = []         # empty: any exit code may be retried
//! no_retry_on_exit_codes = [2]     # never retried; wins over the allow list
//! memory_cap = "512g"
//! runtime_cap = "P7D"
//! memory_growth = 1.5              # retry_more_memory without an amount: current × 1.5
//! runtime_growth = 1.5
//! min_confidence = 0.5             # proposals below need a person
//! allow_overrides = false          # may a proposal with `override: true` beat the catalog?
//! agent_only_needs_review = false  # must a person confirm what the catalog has no verdict on?
//! confirm = "elicit"               # triage-mcp: ask the person before applying (elicit|never|required)
//!
//! [resilience]
//! agent_timeout_secs = 600
//! backend_timeout_secs = 30
//! retry_attempts = 3
//! retry_initial_ms = 1000
//! retry_multiplier = 2.0
//! retry_max_ms = 30000
//! retry_jitter = 0.2
//! breaker_failures = 3
//! breaker_cooldown_secs = 1800
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::model::{Memory, Runtime};
use crate::resilience::Resilience;

/// Rules that decide what may be applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    pub max_retries_failure: u32,
    pub max_retries_preemption: u32,
    pub retry_on_exit_codes: Vec<i64>,
    pub no_retry_on_exit_codes: Vec<i64>,
    pub memory_cap: Memory,
    pub runtime_cap: Runtime,
    pub memory_growth: f64,
    pub runtime_growth: f64,
    pub min_confidence: f64,
    pub allow_overrides: bool,
    /// When the catalog has no verdict, an agent's proposal stands alone (`agent_only`); set
    /// this to have a person confirm those too.
    pub agent_only_needs_review: bool,
    /// Whether `triage-mcp` asks the person, through their MCP client, before it applies what
    /// an agent classified with `dry_run: false`.
    pub confirm: Confirm,
    pub resilience: Resilience,
}

/// When `triage-mcp` asks the person before applying an agent's classifications.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Confirm {
    /// Ask through MCP elicitation when the client can be asked; apply directly when it cannot.
    #[default]
    Elicit,
    /// Never ask: validation alone decides (how a server without a person behind it runs).
    Never,
    /// Always ask; with a client that cannot be asked, apply nothing and write a plan for
    /// `triage apply`.
    Required,
}

impl Confirm {
    pub fn as_str(self) -> &'static str {
        match self {
            Confirm::Elicit => "elicit",
            Confirm::Never => "never",
            Confirm::Required => "required",
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_retries_failure: 3,
            max_retries_preemption: 100,
            retry_on_exit_codes: vec![],
            no_retry_on_exit_codes: vec![],
            memory_cap: Memory::from_bytes(1 << 40),
            runtime_cap: Runtime::from_seconds(7 * 24 * 3600),
            memory_growth: 1.5,
            runtime_growth: 1.5,
            min_confidence: 0.5,
            allow_overrides: false,
            agent_only_needs_review: false,
            confirm: Confirm::Elicit,
            resilience: Resilience::default(),
        }
    }
}

/// A policy file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("policy file {path}: {message}; see the policy format in the README (`Policy` section)")]
    Parse { path: String, message: String },
    #[error("policy file {path}: {field} = {value} is out of range: {why}")]
    Range { path: String, field: &'static str, value: String, why: &'static str },
}

impl Policy {
    /// Read and check a policy file.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: shown.clone(), source })?;
        Self::parse(&text, &shown)
    }

    /// Parse and check policy TOML; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let policy: Policy = toml::from_str(text).map_err(|e| PolicyError::Parse {
            path: origin.to_string(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        policy.check(origin)?;
        Ok(policy)
    }

    fn check(&self, origin: &str) -> Result<(), PolicyError> {
        let range = |field, value: String, why| PolicyError::Range { path: origin.to_string(), field, value, why };
        if !(self.memory_growth >= 1.0 && self.memory_growth <= 16.0) {
            return Err(range("memory_growth", self.memory_growth.to_string(), "must be between 1 and 16"));
        }
        if !(self.runtime_growth >= 1.0 && self.runtime_growth <= 16.0) {
            return Err(range("runtime_growth", self.runtime_growth.to_string(), "must be between 1 and 16"));
        }
        if !(0.0..=1.0).contains(&self.min_confidence) {
            return Err(range("min_confidence", self.min_confidence.to_string(), "must be between 0 and 1"));
        }
        self.resilience.check().map_err(|(field, value, why)| range(field, value, why))
    }

    /// Whether exit code `code` may be retried at all (deny list wins; empty allow list allows).
    pub fn exit_code_allows_retry(&self, code: i64) -> Result<(), String> {
        if self.no_retry_on_exit_codes.contains(&code) {
            return Err(format!("exit code {code} is in the policy's no_retry_on_exit_codes"));
        }
        if !self.retry_on_exit_codes.is_empty() && !self.retry_on_exit_codes.contains(&code) {
            return Err(format!("exit code {code} is not in the policy's retry_on_exit_codes"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_designs() {
        let p = Policy::parse("", "p.toml").unwrap();
        assert_eq!((p.max_retries_failure, p.max_retries_preemption), (3, 100));
        assert_eq!(p.resilience.agent_timeout_secs, 600);
        assert_eq!(p.min_confidence, 0.5);
        assert_eq!(p.confirm, Confirm::Elicit);
        assert_eq!(Policy::parse("confirm = \"required\"", "p.toml").unwrap().confirm, Confirm::Required);
        let e = Policy::parse("confirm = \"maybe\"", "p.toml").unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("maybe"), "{e}");
    }

    #[test]
    fn deny_list_wins() {
        let p = Policy::parse("retry_on_exit_codes = [1, 2]\nno_retry_on_exit_codes = [2]", "p.toml").unwrap();
        assert!(p.exit_code_allows_retry(1).is_ok());
        assert!(p.exit_code_allows_retry(2).unwrap_err().contains("no_retry_on_exit_codes"));
        assert!(p.exit_code_allows_retry(3).unwrap_err().contains("not in the policy's retry_on_exit_codes"));
        assert!(Policy::default().exit_code_allows_retry(77).is_ok());
    }

    #[test]
    fn bad_policies_name_file_and_field() {
        let e = Policy::parse("max_retries = 3", "ops/policy.toml").unwrap_err().to_string();
        assert!(e.contains("ops/policy.toml") && e.contains("max_retries"), "{e}");
        let e = Policy::parse("memory_cap = \"lots\"", "p.toml").unwrap_err().to_string();
        assert!(e.contains("invalid memory `lots`"), "{e}");
        let e = Policy::parse("min_confidence = 3.0", "p.toml").unwrap_err().to_string();
        assert!(e.contains("min_confidence") && e.contains("between 0 and 1"), "{e}");
    }
}
