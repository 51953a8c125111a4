//! Circuit breakers, one per agent (`claude`, `command`, ...), persisted in the state directory
//! (`TRIAGE_STATE_DIR`, else `$XDG_STATE_HOME/triage`, else `~/.local/state/triage`).
//!
//! Closed: calls go through; `failures` consecutive failed runs open it. Open: calls are
//! refused until `cooldown` has passed, then it is half-open: one probe goes through; success
//! closes it, failure opens it again. The file is updated under a lock with an atomic replace,
//! so concurrent CI jobs sharing a state directory do not lose each other's counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::fsutil::{FolderLock, write_atomic};

/// A breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

/// One breaker as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Circuit {
    pub state: BreakerState,
    pub consecutive_failures: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// Whether a call may go ahead.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Closed: go ahead.
    Allow,
    /// Half-open: this call is the probe.
    Probe,
    /// Open: do not call before `until`.
    Refuse { until: Timestamp, last_error: Option<String> },
}

#[derive(Debug, thiserror::Error)]
pub enum CircuitError {
    #[error(
        "circuit state {path}: {why}; fix or delete the file (`triage circuit reset` clears it), or set TRIAGE_STATE_DIR to another folder"
    )]
    State { path: PathBuf, why: String },
}

/// The breakers in one state directory.
#[derive(Debug, Clone)]
pub struct CircuitBook {
    dir: PathBuf,
    failures: u32,
    cooldown: Duration,
}

type Book = BTreeMap<String, Circuit>;

impl CircuitBook {
    pub fn new(dir: impl Into<PathBuf>, failures: u32, cooldown: Duration) -> CircuitBook {
        CircuitBook { dir: dir.into(), failures: failures.max(1), cooldown }
    }

    /// The default state directory.
    pub fn default_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("TRIAGE_STATE_DIR").filter(|v| !v.is_empty()) {
            return PathBuf::from(d);
        }
        if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(d).join("triage");
        }
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        home.join(".local/state/triage")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self) -> PathBuf {
        self.dir.join("circuits.json")
    }

    fn err(&self, why: impl std::fmt::Display) -> CircuitError {
        CircuitError::State { path: self.path(), why: why.to_string() }
    }

    fn read(&self) -> Result<Book, CircuitError> {
        match std::fs::read(self.path()) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| self.err(e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Book::new()),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Read-modify-write under the directory's lock.
    fn update<T>(&self, f: impl FnOnce(&mut Book) -> T) -> Result<T, CircuitError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| self.err(e))?;
        let _lock = FolderLock::acquire(&self.dir).map_err(|e| self.err(e))?;
        let mut book = self.read()?;
        let out = f(&mut book);
        let mut json = serde_json::to_vec_pretty(&book).map_err(|e| self.err(e))?;
        json.push(b'\n');
        write_atomic(&self.path(), &json).map_err(|e| self.err(e))?;
        Ok(out)
    }

    /// Every breaker, by name.
    pub fn list(&self) -> Result<Book, CircuitError> {
        self.read()
    }

    /// May `name` be called now? Moves an open breaker past its cooldown to half-open.
    pub fn check(&self, name: &str) -> Result<Decision, CircuitError> {
        let book = self.read()?;
        let Some(c) = book.get(name) else { return Ok(Decision::Allow) };
        match c.state {
            BreakerState::Closed => Ok(Decision::Allow),
            BreakerState::HalfOpen => Ok(Decision::Probe),
            BreakerState::Open => {
                let opened = c.opened_at.unwrap_or(Timestamp::UNIX_EPOCH);
                let until = opened
                    .checked_add(jiff::SignedDuration::try_from(self.cooldown).unwrap_or_default())
                    .unwrap_or(opened);
                if Timestamp::now() >= until {
                    self.update(|b| {
                        if let Some(c) = b.get_mut(name) {
                            c.state = BreakerState::HalfOpen;
                            c.updated_at = Some(Timestamp::now());
                        }
                    })?;
                    Ok(Decision::Probe)
                } else {
                    Ok(Decision::Refuse { until, last_error: c.last_error.clone() })
                }
            }
        }
    }

    /// Record a successful run; returns the state it left, if it changed.
    pub fn record_success(&self, name: &str) -> Result<Option<BreakerState>, CircuitError> {
        self.update(|b| {
            let c = b.entry(name.to_string()).or_default();
            let before = c.state;
            *c = Circuit { updated_at: Some(Timestamp::now()), ..Circuit::default() };
            (before != BreakerState::Closed).then_some(before)
        })
    }

    /// Record a failed run; returns the new state if this failure changed it.
    pub fn record_failure(&self, name: &str, error: &str) -> Result<Option<BreakerState>, CircuitError> {
        let threshold = self.failures;
        self.update(|b| {
            let c = b.entry(name.to_string()).or_default();
            let before = c.state;
            c.consecutive_failures += 1;
            c.last_error = Some(error.chars().take(500).collect());
            c.updated_at = Some(Timestamp::now());
            if before == BreakerState::HalfOpen || c.consecutive_failures >= threshold {
                c.state = BreakerState::Open;
                c.opened_at = Some(Timestamp::now());
            }
            (c.state != before).then_some(c.state)
        })
    }

    /// Clear one breaker, or all; returns the names cleared.
    pub fn reset(&self, name: Option<&str>) -> Result<Vec<String>, CircuitError> {
        self.update(|b| match name {
            Some(n) => b.remove(n).map(|_| vec![n.to_string()]).unwrap_or_default(),
            None => std::mem::take(b).into_keys().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_n_failures_probes_after_cooldown_and_closes_on_success() {
        let tmp = tempfile::tempdir().unwrap();
        let book = CircuitBook::new(tmp.path(), 3, Duration::from_secs(3600));
        assert_eq!(book.check("claude").unwrap(), Decision::Allow);
        assert_eq!(book.record_failure("claude", "timeout").unwrap(), None);
        assert_eq!(book.record_failure("claude", "timeout").unwrap(), None);
        assert_eq!(book.record_failure("claude", "timeout").unwrap(), Some(BreakerState::Open));
        assert!(matches!(book.check("claude").unwrap(), Decision::Refuse { .. }));
        // A second book on the same directory (another CI run) sees it too.
        let other = CircuitBook::new(tmp.path(), 3, Duration::ZERO);
        assert_eq!(other.check("claude").unwrap(), Decision::Probe);
        assert_eq!(
            other.record_failure("claude", "still down").unwrap(),
            Some(BreakerState::Open),
            "half-open failure reopens"
        );
        assert_eq!(other.list().unwrap()["claude"].state, BreakerState::Open);
        assert_eq!(other.check("claude").unwrap(), Decision::Probe);
        assert_eq!(other.record_success("claude").unwrap(), Some(BreakerState::HalfOpen));
        assert_eq!(other.check("claude").unwrap(), Decision::Allow);
        assert_eq!(other.reset(None).unwrap(), vec!["claude".to_string()]);
    }

    #[test]
    fn a_corrupt_state_file_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("circuits.json"), "{not json").unwrap();
        let e = CircuitBook::new(tmp.path(), 3, Duration::ZERO).check("x").unwrap_err().to_string();
        assert!(e.contains("circuits.json") && e.contains("triage circuit reset"), "{e}");
    }
}
