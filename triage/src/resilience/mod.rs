//! Surviving a bad agent or backend (seed 004): backoff with seeded jitter, and a circuit
//! breaker per agent and per backend URL kept on disk so that repeated CI runs stop calling
//! something that keeps failing. `TRIAGE_RESILIENCE=off` turns both off for debugging.

mod backoff;
mod circuit;

pub use backoff::Backoff;
pub use circuit::{BreakerState, Circuit, CircuitBook, CircuitError, Decision};

/// Whether resilience is switched off (`TRIAGE_RESILIENCE=off`).
pub fn disabled() -> bool {
    std::env::var("TRIAGE_RESILIENCE").is_ok_and(|v| v.eq_ignore_ascii_case("off"))
}
