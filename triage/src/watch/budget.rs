//! The cap on agent runs per hour: a sliding window of the last hour's run start times.
//! When it is full, `triage watch` lets the catalog decide what it can and leaves the rest
//! for a person, rather than spend more on agents.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

const HOUR: Duration = Duration::from_secs(3600);

/// At most `limit` agent runs in any hour (`None`: no cap).
#[derive(Debug, Clone)]
pub struct HourlyCap {
    limit: Option<u32>,
    runs: VecDeque<Instant>,
}

impl HourlyCap {
    pub fn new(limit: Option<u32>) -> HourlyCap {
        HourlyCap { limit, runs: VecDeque::new() }
    }

    /// Whether another run may start at `now`.
    pub fn allows(&mut self, now: Instant) -> bool {
        while self.runs.front().is_some_and(|t| now.duration_since(*t) >= HOUR) {
            self.runs.pop_front();
        }
        self.limit.is_none_or(|l| self.runs.len() < l as usize)
    }

    /// A run started at `now`.
    pub fn record(&mut self, now: Instant) {
        self.runs.push_back(now);
    }

    pub fn limit(&self) -> Option<u32> {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_within_the_hour_free_again_after_it() {
        let t0 = Instant::now();
        let mut cap = HourlyCap::new(Some(2));
        assert!(cap.allows(t0));
        cap.record(t0);
        cap.record(t0 + Duration::from_secs(60));
        assert!(!cap.allows(t0 + Duration::from_secs(120)), "two runs in the hour: the third waits");
        assert!(!cap.allows(t0 + Duration::from_secs(3599)));
        assert!(cap.allows(t0 + HOUR), "the first run left the window");
        assert!(HourlyCap::new(None).allows(t0), "no cap");
        assert!(!HourlyCap::new(Some(0)).allows(t0), "a cap of 0: the catalog alone");
    }
}
