//! Torc 1.0's JSON shapes (its `api/openapi.yaml`), only the fields triage reads or writes.
//!
//! Unknown fields are ignored, so a newer server that adds fields still parses. The result
//! model is kept whole (every field Torc stores), because the fail move writes it back with
//! only its status changed, and an interrupted move restores it from the intent record.

use serde::{Deserialize, Serialize};

use crate::model::JobStatus;

/// The envelope of every Torc list endpoint: `{items, offset, count, total_count, has_more}`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Page<T> {
    pub items: Vec<T>,
    #[serde(default)]
    pub count: i64,
    #[serde(default)]
    pub total_count: i64,
    #[serde(default)]
    pub has_more: bool,
}

/// The largest page Torc serves (`MAX_RECORD_TRANSFER_COUNT`).
pub(super) const TORC_MAX_PAGE: u64 = 100_000;

/// `GET /workflows/{id}`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct TorcWorkflow {
    pub id: Option<i64>,
    pub name: String,
    #[serde(default)]
    pub use_pending_failed: Option<bool>,
    #[serde(default)]
    pub run_id: Option<i64>,
}

/// `GET /jobs`, `GET /jobs/{id}`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct TorcJob {
    pub id: Option<i64>,
    pub workflow_id: i64,
    pub name: String,
    #[serde(default)]
    pub command: String,
    pub status: Option<JobStatus>,
    #[serde(default)]
    pub attempt_id: Option<i64>,
    #[serde(default)]
    pub resource_requirements_id: Option<i64>,
    /// Filled by `GET /jobs/{id}`; null in list items unless relationships are asked for.
    #[serde(default)]
    pub depends_on_job_ids: Option<Vec<i64>>,
    /// Set while a job runner has the job (`start_job`); cleared on completion and retry.
    #[serde(default)]
    pub compute_node_id: Option<i64>,
}

impl TorcJob {
    pub fn attempt(&self) -> i64 {
        self.attempt_id.unwrap_or(1)
    }
}

/// `GET /results`: one finished attempt. Serialized back whole by the fail move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct TorcResult {
    #[serde(default, skip_serializing)]
    pub id: Option<i64>,
    pub job_id: i64,
    pub workflow_id: i64,
    pub run_id: i64,
    #[serde(default)]
    pub attempt_id: Option<i64>,
    pub compute_node_id: i64,
    pub return_code: i64,
    pub exec_time_minutes: f64,
    pub completion_time: String,
    pub status: JobStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_memory_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_cpu_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_cpu_percent: Option<f64>,
}

impl TorcResult {
    pub fn attempt(&self) -> i64 {
        self.attempt_id.unwrap_or(1)
    }
}

/// `GET /workflows/{id}/job_dependencies`: one edge, `job_id` depends on `depends_on_job_id`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct TorcEdge {
    pub job_id: i64,
    pub depends_on_job_id: i64,
}

/// `GET /resource_requirements`. Rows are shared by every job that names them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct TorcResources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    pub workflow_id: i64,
    pub name: String,
    #[serde(default = "one")]
    pub num_cpus: i64,
    #[serde(default)]
    pub num_gpus: i64,
    #[serde(default = "one")]
    pub num_nodes: i64,
    #[serde(default)]
    pub memory: Option<String>,
    #[serde(default)]
    pub runtime: Option<String>,
}

/// `GET /events`: `data` is free JSON; triage's records carry `"category": "triage..."`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct TorcEvent {
    pub id: Option<i64>,
    #[serde(default)]
    pub timestamp: i64,
    #[serde(default)]
    pub data: serde_json::Value,
}

fn one() -> i64 {
    1
}
