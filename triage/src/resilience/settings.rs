//! The resilience settings: the policy file's `[resilience]` table (timeouts, the retry
//! schedule, the agents' circuit breakers).

use serde::{Deserialize, Serialize};

/// Timeouts and retries for agents and remote backends, and the agents' circuit breakers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Resilience {
    pub agent_timeout_secs: u64,
    pub backend_timeout_secs: u64,
    pub retry_attempts: u32,
    pub retry_initial_ms: u64,
    pub retry_multiplier: f64,
    pub retry_max_ms: u64,
    pub retry_jitter: f64,
    pub breaker_failures: u32,
    pub breaker_cooldown_secs: u64,
}

impl Default for Resilience {
    fn default() -> Self {
        Resilience {
            agent_timeout_secs: 600,
            backend_timeout_secs: 30,
            retry_attempts: 3,
            retry_initial_ms: 1000,
            retry_multiplier: 2.0,
            retry_max_ms: 30_000,
            retry_jitter: 0.2,
            breaker_failures: 3,
            breaker_cooldown_secs: 1800,
        }
    }
}

impl Resilience {
    /// Check the ranges; on error, the field, its value and what it must be.
    pub fn check(&self) -> Result<(), (&'static str, String, &'static str)> {
        if !(0.0..=1.0).contains(&self.retry_jitter) {
            return Err(("resilience.retry_jitter", self.retry_jitter.to_string(), "must be between 0 and 1"));
        }
        if self.retry_multiplier < 1.0 {
            return Err(("resilience.retry_multiplier", self.retry_multiplier.to_string(), "must be at least 1"));
        }
        if self.agent_timeout_secs == 0 || self.backend_timeout_secs == 0 {
            return Err(("resilience timeouts", "0".into(), "must be at least 1 second"));
        }
        Ok(())
    }
}
