//! The retry schedule: exponential with a cap and seeded jitter, so a run can be replayed
//! (`--seed`). Used as a `backon` backoff (any `Iterator<Item = Duration>`): backon runs the
//! retry loop, this decides the delays.

use std::time::Duration;

use super::Resilience;

/// Delays between attempts: `initial × multiplier^n`, capped, each scaled by a factor drawn
/// uniformly from `1 ± jitter` by a generator seeded with `seed`.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: f64,
    multiplier: f64,
    max: f64,
    jitter: f64,
    left: u32,
    rng: fastrand::Rng,
}

impl Backoff {
    /// The schedule for `attempts` attempts in all (so `attempts - 1` delays).
    pub fn new(r: &Resilience, seed: u64) -> Backoff {
        Backoff {
            next: r.retry_initial_ms as f64,
            multiplier: r.retry_multiplier,
            max: r.retry_max_ms as f64,
            jitter: r.retry_jitter,
            left: r.retry_attempts.saturating_sub(1),
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// No retries at all (resilience off, or errors not worth retrying).
    pub fn none() -> Backoff {
        Backoff { next: 0.0, multiplier: 1.0, max: 0.0, jitter: 0.0, left: 0, rng: fastrand::Rng::with_seed(0) }
    }
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let base = self.next.min(self.max);
        self.next = (self.next * self.multiplier).min(self.max);
        let factor = 1.0 + self.jitter * (self.rng.f64() * 2.0 - 1.0);
        Some(Duration::from_millis((base * factor).max(0.0).round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_design_and_replay_with_the_seed() {
        let r = Resilience::default();
        let a: Vec<Duration> = Backoff::new(&r, 7).collect();
        let b: Vec<Duration> = Backoff::new(&r, 7).collect();
        let c: Vec<Duration> = Backoff::new(&r, 8).collect();
        assert_eq!(a.len(), 2, "3 attempts = 2 delays");
        assert_eq!(a, b, "same seed, same delays");
        assert_ne!(a, c);
        assert!((800..=1200).contains(&a[0].as_millis()), "{a:?}");
        assert!((1600..=2400).contains(&a[1].as_millis()), "{a:?}");
    }

    #[test]
    fn the_cap_holds() {
        let r = Resilience { retry_attempts: 12, retry_jitter: 0.0, ..Resilience::default() };
        let d: Vec<u128> = Backoff::new(&r, 1).map(|d| d.as_millis()).collect();
        assert_eq!(&d[..6], &[1000, 2000, 4000, 8000, 16000, 30000]);
        assert!(d.iter().all(|&x| x <= 30_000));
    }
}
