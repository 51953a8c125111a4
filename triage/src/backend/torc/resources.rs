//! A job's own resource requirements row, for a retry with more memory or time.
//!
//! Torc's rows are shared by every job that names them (every job without one gets the
//! workflow's `default` row), and `PUT /resource_requirements/{id}` changes the row in place.
//! So a retry that changes resources creates a new row, named `triage_j{J}_a{A}` after the job
//! and the attempt it is for, and points only this job at it (`PUT /jobs/{id}` may change
//! `resource_requirements_id` in any status). Torc's own MCP server updates the shared row.

use reqwest::Method;
use serde_json::json;

use super::TorcBackend;
use super::client::Safety;
use super::convert::torc_memory;
use super::wire::{TorcJob, TorcResources};
use crate::backend::{BackendError, ResourceChange};

impl TorcBackend {
    /// A resource requirements row of the job's own, with the new memory/runtime: rows are
    /// shared, and changing the shared one would change every job that names it.
    pub(super) async fn own_resources(
        &self,
        workflow_id: i64,
        job: &TorcJob,
        change: &ResourceChange,
        next_attempt: i64,
    ) -> Result<i64, BackendError> {
        let job_id = job.id.unwrap_or_default();
        let old = match job.resource_requirements_id {
            Some(id) => Some(
                self.client
                    .get::<TorcResources>(&format!("/resource_requirements/{id}"), &[], "reading resource requirements")
                    .await?,
            ),
            None => None,
        };
        let new = TorcResources {
            id: None,
            workflow_id,
            name: format!("triage_j{job_id}_a{next_attempt}"),
            num_cpus: old.as_ref().map_or(1, |o| o.num_cpus),
            num_gpus: old.as_ref().map_or(0, |o| o.num_gpus),
            num_nodes: old.as_ref().map_or(1, |o| o.num_nodes),
            memory: change.memory.map(torc_memory).or_else(|| old.as_ref().and_then(|o| o.memory.clone())),
            runtime: change.runtime.map(|r| r.to_string()).or_else(|| old.as_ref().and_then(|o| o.runtime.clone())),
        };
        let body = serde_json::to_value(&new).map_err(|e| BackendError::Unsupported(e.to_string()))?;
        let what = format!("creating resource requirements for job {job_id}");
        let a = self
            .client
            .call(Method::POST, "/resource_requirements", &[], Some(&body), Safety::Idempotent, &what)
            .await?;
        if !a.ok() {
            return Err(self.client.unexpected(&a, &what));
        }
        let created: TorcResources = a.json(&what)?;
        let id = created.id.ok_or_else(|| self.client.unexpected(&a, &what))?;
        self.point_resources(job, id).await?;
        Ok(id)
    }

    /// `PUT /jobs/{id}` changing only `resource_requirements_id` (allowed in any status).
    pub(super) async fn point_resources(&self, job: &TorcJob, rr: i64) -> Result<(), BackendError> {
        let job_id = job.id.unwrap_or_default();
        let body = json!({"workflow_id": job.workflow_id, "name": job.name, "command": job.command, "resource_requirements_id": rr});
        let what = format!("giving job {job_id} resource requirements {rr}");
        let a = self
            .client
            .call(Method::PUT, &format!("/jobs/{job_id}"), &[], Some(&body), Safety::Idempotent, &what)
            .await?;
        if a.ok() { Ok(()) } else { Err(self.client.unexpected(&a, &what)) }
    }
}
