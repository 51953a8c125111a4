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
        // Each POST creates a row: a retry after a lost answer would leave an orphan.
        let a = self.client.call(Method::POST, "/resource_requirements", &[], Some(&body), Safety::Once, &what).await?;
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use super::*;
    use crate::backend::torc::client::test_server::{self, Serve};
    use crate::model::JobStatus;

    /// A POST that reached the server may have created the row: it is not sent again (a
    /// second row would be an orphan), whatever became of the answer.
    #[tokio::test]
    async fn a_resources_row_is_posted_once_whatever_became_of_the_answer() {
        let job = TorcJob {
            id: Some(7),
            workflow_id: 1,
            name: "train".into(),
            command: "true".into(),
            status: Some(JobStatus::PendingFailed),
            attempt_id: Some(1),
            resource_requirements_id: None,
            depends_on_job_ids: None,
            compute_node_id: None,
        };
        let change = ResourceChange { memory: Some("2g".parse().unwrap()), runtime: None };
        for serve in [Serve::Status(503), Serve::Drop, Serve::Stall(Duration::from_secs(2))] {
            let (url, count) = test_server::start(serve);
            let b = test_server::backend(&url);
            let err = b.own_resources(1, &job, &change, 2).await.unwrap_err();
            assert!(err.is_transient(), "{serve:?}: {err}");
            assert_eq!(count.load(Ordering::SeqCst), 1, "{serve:?}: {err}");
        }
    }
}
