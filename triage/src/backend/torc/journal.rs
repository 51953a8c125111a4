//! The intent journal and the audit trail, both in Torc's events (`POST /events`).
//!
//! A move is several requests. Before the first change, triage records an *intent* event
//! (`"category": "triage_intent"`): which move, on which job at which run and attempt, the
//! attempt's result row as it was, the job's resource requirements row, the audit record,
//! and the mover (host, pid, process start time). When the move ends, either way, the
//! audit event (`"category": "triage"`) is written and the intent is deleted. An intent
//! still there names a move that was interrupted; [`Owner::is_gone`] tells a dead mover from
//! one still at work, so recovery never races a live process (`recover.rs`).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::TorcBackend;
use super::client::Safety;
use super::wire::{TorcEvent, TorcResult};
use crate::backend::{AuditEvent, BackendError};

/// `data.category` of intent events.
pub(super) const INTENT_CATEGORY: &str = "triage_intent";
/// `data.category` of triage's audit events.
pub(super) const AUDIT_CATEGORY: &str = "triage";
/// An intent from another host is taken as abandoned after this long (a move is a few
/// requests; even with every retry and 30 s timeouts it ends well within this).
const FOREIGN_INTENT_GRACE_MS: i64 = 15 * 60 * 1000;

/// Which move an intent announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum MoveKind {
    Retry,
    Fail,
}

/// The process that makes a move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Owner {
    pub host: String,
    pub pid: u32,
    /// Start time of the process (clock ticks since boot, Linux), against pid reuse.
    #[serde(default)]
    pub started: Option<u64>,
}

impl Owner {
    pub fn this_process() -> Owner {
        let pid = std::process::id();
        Owner { host: hostname(), pid, started: start_ticks(pid) }
    }

    /// Whether the owner has certainly stopped: same host and the process is gone (or its
    /// pid now belongs to a younger process); on another host, when the intent is older
    /// than the grace period.
    pub fn is_gone(&self, intent_ms: i64, now_ms: i64) -> bool {
        if self.host != hostname() {
            return now_ms.saturating_sub(intent_ms) > FOREIGN_INTENT_GRACE_MS;
        }
        if !std::path::Path::new("/proc/self/stat").exists() {
            // No procfs (macOS, BSD): ask the kernel whether the pid exists.
            let pid = i32::try_from(self.pid).unwrap_or(i32::MAX);
            return nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err();
        }
        match (start_ticks(self.pid), self.started) {
            (None, _) => true,
            (Some(now), Some(then)) => now != then,
            (Some(_), None) => false,
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Field 22 of `/proc/PID/stat`; `None` when the process does not exist.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// What an intent event holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Intent {
    pub category: String,
    #[serde(rename = "move")]
    pub kind: MoveKind,
    pub job_id: i64,
    pub run_id: i64,
    pub attempt_id: i64,
    /// The attempt's pending_failed result row when the move began.
    pub result: TorcResult,
    /// The job's resource requirements row when the move began.
    #[serde(default)]
    pub resource_requirements_id: Option<i64>,
    pub audit: AuditEvent,
    pub owner: Owner,
}

/// An intent found in the journal, with its event id and time.
#[derive(Debug, Clone)]
pub(super) struct OpenIntent {
    pub event_id: i64,
    pub timestamp_ms: i64,
    pub intent: Intent,
}

impl TorcBackend {
    /// Record an intent; returns its event id.
    pub(super) async fn open_intent(&self, workflow_id: i64, intent: &Intent) -> Result<i64, BackendError> {
        let data = serde_json::to_value(intent).map_err(|e| BackendError::Unsupported(e.to_string()))?;
        let ev = self.post_event(workflow_id, data, "recording the intent of a move").await?;
        ev.id.ok_or_else(|| BackendError::Remote {
            url: format!("{}/events", self.client.base()),
            what: "recording the intent of a move".into(),
            why: "the server returned the event without an id".into(),
            transient: false,
        })
    }

    /// Delete an intent (the move ended); a missing one is fine (a rival recovery closed it).
    pub(super) async fn close_intent(&self, event_id: i64) -> Result<(), BackendError> {
        let what = "closing the intent of a move";
        let path = format!("/events/{event_id}");
        let a = self.client.call(reqwest::Method::DELETE, &path, &[], None, Safety::Idempotent, what).await?;
        if a.ok() || a.status == 404 { Ok(()) } else { Err(self.client.unexpected(&a, what)) }
    }

    /// Every intent still in the workflow's journal.
    pub(super) async fn open_intents(&self, workflow_id: i64) -> Result<Vec<OpenIntent>, BackendError> {
        let q = [("workflow_id", workflow_id.to_string()), ("category", INTENT_CATEGORY.to_string())];
        let events: Vec<TorcEvent> = self.client.get_all("/events", &q, "reading triage's intent journal").await?;
        let mut out = Vec::new();
        for ev in events {
            let Some(event_id) = ev.id else { continue };
            match serde_json::from_value::<Intent>(ev.data) {
                Ok(intent) => out.push(OpenIntent { event_id, timestamp_ms: ev.timestamp, intent }),
                Err(e) => tracing::warn!(event_id, "ignoring a malformed triage intent event: {e}"),
            }
        }
        Ok(out)
    }

    /// Write one audit event (`category: triage`) with `details`.
    pub(super) async fn audit(&self, workflow_id: i64, event: &AuditEvent) -> Result<(), BackendError> {
        let data = serde_json::json!({
            "category": AUDIT_CATEGORY,
            "action": event.what,
            "job_id": event.job_id,
            "who": event.who,
            "why": event.why,
            "when": event.when,
            "details": event.details,
        });
        self.post_event(workflow_id, data, "recording an audit event").await.map(|_| ())
    }

    /// Every audit event triage wrote for the workflow, oldest first.
    pub(super) async fn audit_events(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        let q = [("workflow_id", workflow_id.to_string()), ("category", AUDIT_CATEGORY.to_string())];
        let mut events: Vec<TorcEvent> = self.client.get_all("/events", &q, "reading triage's audit trail").await?;
        events.sort_by_key(|e| (e.timestamp, e.id));
        let mut out = Vec::new();
        for ev in events {
            let d = ev.data;
            if d["category"] != AUDIT_CATEGORY {
                continue;
            }
            let text = |k: &str| d[k].as_str().unwrap_or_default().to_string();
            let Ok(when) = text("when").parse::<jiff::Timestamp>() else {
                tracing::warn!(event_id = ev.id, "ignoring a triage audit event without a time");
                continue;
            };
            out.push(AuditEvent {
                when,
                who: text("who"),
                what: text("action"),
                job_id: d["job_id"].as_i64(),
                why: text("why"),
                details: d["details"].clone(),
            });
        }
        Ok(out)
    }

    async fn post_event(
        &self,
        workflow_id: i64,
        data: serde_json::Value,
        what: &str,
    ) -> Result<TorcEvent, BackendError> {
        let body = serde_json::json!({
            "workflow_id": workflow_id,
            "timestamp": Timestamp::now().as_millisecond(),
            "data": data,
        });
        // Each POST creates an event: a retry after a lost answer would record it twice.
        let a = self.client.call(reqwest::Method::POST, "/events", &[], Some(&body), Safety::Once, what).await?;
        if !a.ok() {
            return Err(self.client.unexpected(&a, what));
        }
        a.json(what)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use super::*;
    use crate::backend::JobBackend;
    use crate::backend::torc::client::test_server::{self, Serve};

    /// Each POST creates an event (intents and audit records alike, both through
    /// `post_event`): one that reached the server is not sent again, whatever became of its
    /// answer, since the server may have committed it.
    #[tokio::test]
    async fn an_event_is_posted_once_whatever_became_of_the_answer() {
        for serve in [Serve::Status(503), Serve::Drop, Serve::Stall(Duration::from_secs(2))] {
            let (url, count) = test_server::start(serve);
            let b = test_server::backend(&url);
            let err = b.append_event(1, &AuditEvent::now("test", "retry", Some(7), "why")).await.unwrap_err();
            assert!(err.is_transient(), "{serve:?}: {err}");
            assert_eq!(count.load(Ordering::SeqCst), 1, "{serve:?}: {err}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_dead_pid_is_gone() {
        let me = Owner::this_process();
        let now = Timestamp::now().as_millisecond();
        assert!(!me.is_gone(now, now), "{me:?}");
        let dead = Owner { pid: u32::MAX - 7, ..me.clone() };
        assert!(dead.is_gone(now, now));
        let reused = Owner { started: me.started.map(|s| s + 1), ..me.clone() };
        assert!(reused.is_gone(now, now));
        let foreign = Owner { host: "elsewhere.example".into(), ..me };
        assert!(!foreign.is_gone(now, now + 1000));
        assert!(foreign.is_gone(now, now + FOREIGN_INTENT_GRACE_MS + 1));
    }
}
