//! Surviving a bad agent or backend: the retry schedule (backoff with seeded jitter, used for
//! agent runs and for a remote backend's safe requests), and a circuit breaker per agent, kept
//! on disk so that repeated CI runs stop starting an agent that keeps failing. Backends have
//! no breaker: a request that still fails after its retries fails the command, which says so.
//! `TRIAGE_RESILIENCE=off` turns retries and breakers off for debugging.
//!
//! - [`settings`]: the `[resilience]` table of the policy file;
//! - `backoff`: the schedule (backon runs the loop);
//! - `circuit`: the breakers.

mod backoff;
mod circuit;
pub mod settings;

pub use backoff::Backoff;
pub use circuit::{BreakerState, Circuit, CircuitBook, CircuitError, Decision};
pub use settings::Resilience;

/// Whether resilience is switched off (`TRIAGE_RESILIENCE=off`).
pub fn disabled() -> bool {
    std::env::var("TRIAGE_RESILIENCE").is_ok_and(|v| v.eq_ignore_ascii_case("off"))
}
