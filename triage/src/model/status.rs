//! `JobStatus`: Torc's eleven job statuses, with the integer values Torc stores (seed 000).
//!
//! The names are the wire format everywhere (store, MCP, plans); the integers are what Torc's
//! database and some of its endpoints use.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A job's status, named and numbered as in Torc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// 0: not yet initialized.
    Uninitialized,
    /// 1: waiting on dependencies.
    Blocked,
    /// 2: ready to run.
    Ready,
    /// 3: claimed by a worker.
    Pending,
    /// 4: executing.
    Running,
    /// 5: finished successfully.
    Completed,
    /// 6: failed (terminal; dependents get canceled).
    Failed,
    /// 7: canceled.
    Canceled,
    /// 8: killed by a signal.
    Terminated,
    /// 9: skipped.
    Disabled,
    /// 10: failed with no matching failure handler; awaiting classification.
    PendingFailed,
}

impl JobStatus {
    /// Every status, in Torc's numeric order.
    pub const ALL: [JobStatus; 11] = [
        JobStatus::Uninitialized,
        JobStatus::Blocked,
        JobStatus::Ready,
        JobStatus::Pending,
        JobStatus::Running,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Canceled,
        JobStatus::Terminated,
        JobStatus::Disabled,
        JobStatus::PendingFailed,
    ];

    /// Torc's integer value for this status.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// The status with Torc's integer value `n`, if there is one.
    pub fn from_i32(n: i32) -> Option<JobStatus> {
        usize::try_from(n).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// The snake_case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Uninitialized => "uninitialized",
            JobStatus::Blocked => "blocked",
            JobStatus::Ready => "ready",
            JobStatus::Pending => "pending",
            JobStatus::Running => "running",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Canceled => "canceled",
            JobStatus::Terminated => "terminated",
            JobStatus::Disabled => "disabled",
            JobStatus::PendingFailed => "pending_failed",
        }
    }

    /// Statuses from which a job has not run yet and can still be canceled by a fail cascade.
    pub fn is_not_yet_run(self) -> bool {
        matches!(self, JobStatus::Blocked | JobStatus::Uninitialized | JobStatus::Ready)
    }

    /// Statuses Torc counts as complete. `pending_failed` is deliberately not one of them.
    pub fn is_complete(self) -> bool {
        matches!(
            self,
            JobStatus::Completed
                | JobStatus::Failed
                | JobStatus::Canceled
                | JobStatus::Terminated
                | JobStatus::Disabled
        )
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for a status name that is not one of the eleven.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown job status `{0}`; expected one of: uninitialized, blocked, ready, pending, running, completed, failed, canceled, terminated, disabled, pending_failed (or 0-10)"
)]
pub struct UnknownStatus(pub String);

impl FromStr for JobStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Ok(n) = t.parse::<i32>() {
            return JobStatus::from_i32(n).ok_or_else(|| UnknownStatus(s.to_string()));
        }
        let lower = t.to_ascii_lowercase().replace('-', "_");
        JobStatus::ALL.into_iter().find(|st| st.as_str() == lower).ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_match_torc() {
        assert_eq!(JobStatus::Uninitialized.as_i32(), 0);
        assert_eq!(JobStatus::Ready.as_i32(), 2);
        assert_eq!(JobStatus::Failed.as_i32(), 6);
        assert_eq!(JobStatus::PendingFailed.as_i32(), 10);
        for st in JobStatus::ALL {
            assert_eq!(JobStatus::from_i32(st.as_i32()), Some(st));
            assert_eq!(st.as_str().parse::<JobStatus>().unwrap(), st);
            let json = serde_json::to_string(&st).unwrap();
            assert_eq!(json, format!("\"{}\"", st.as_str()));
        }
        assert_eq!(JobStatus::from_i32(11), None);
        assert_eq!(JobStatus::from_i32(-1), None);
    }

    #[test]
    fn parse_errors_name_the_choices() {
        let err = "pendingfailed".parse::<JobStatus>().unwrap_err().to_string();
        assert!(err.contains("pendingfailed") && err.contains("pending_failed"), "{err}");
        assert_eq!("10".parse::<JobStatus>().unwrap(), JobStatus::PendingFailed);
        assert_eq!("Pending-Failed".parse::<JobStatus>().unwrap(), JobStatus::PendingFailed);
    }

    #[test]
    fn pending_failed_is_not_complete() {
        assert!(!JobStatus::PendingFailed.is_complete());
        assert!(JobStatus::Failed.is_complete());
    }
}
