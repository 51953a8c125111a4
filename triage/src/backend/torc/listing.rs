//! Reading a workflow from Torc in bulk: jobs by status with Torc's paging, and, for the
//! attempts, upstream ids and resources, three workflow-wide requests (results of all runs,
//! dependency edges, resource requirements) made concurrently, instead of one request per
//! job as Torc's own MCP server does. A listing costs 4 requests per 100,000 rows.
//!
//! A listing by status asks only for the results that ended in that status (Torc filters
//! `result.status`), so listing 10 pending_failed jobs of a workflow with a million completed
//! ones does not read a million results. For pending_failed jobs these are the attempts that
//! waited for a decision, which is what the retry budget counts; `job()`, which the engine
//! calls again before every move, carries every attempt of every run.
//!
//! Logs are files, not requests: `log_file` needs the run an attempt belonged to, which the
//! listing has just seen, so the backend remembers `(workflow, job) -> [(attempt, run)]` and
//! asks Torc (one request) only for a job it has not listed.

use super::TorcBackend;
use super::convert::{Tables, small, stdio_path};
use super::wire::{Page, TORC_MAX_PAGE, TorcEdge, TorcJob, TorcResources, TorcResult, TorcWorkflow};
use crate::backend::{BackendError, JobPage, LogFile, LogStream, PageRequest};
use crate::model::{Job, JobStatus};

/// Remembered attempts beyond this many jobs are forgotten (memory stays bounded).
const MAX_REMEMBERED_JOBS: usize = 2_000_000;

impl TorcBackend {
    pub(super) async fn fetch_workflow(&self, workflow_id: i64) -> Result<TorcWorkflow, BackendError> {
        let what = format!("reading workflow {workflow_id}");
        let a = self
            .client
            .call(
                reqwest::Method::GET,
                &format!("/workflows/{workflow_id}"),
                &[],
                None,
                super::client::Safety::Idempotent,
                &what,
            )
            .await?;
        if a.status == 404 && serde_json::from_slice::<serde_json::Value>(&a.body).is_ok() {
            return Err(BackendError::WorkflowNotFound {
                backend: self.describe_url(),
                workflow_id,
                hint: "`torc workflows list` shows them".into(),
            });
        }
        if !a.ok() {
            return Err(self.client.unexpected(&a, &what));
        }
        a.json(&what)
    }

    /// Results of every run (those that ended in `status`, if given), dependency edges and
    /// resource requirements of the workflow.
    pub(super) async fn tables(&self, workflow_id: i64, status: Option<JobStatus>) -> Result<Tables, BackendError> {
        let wf = ("workflow_id", workflow_id.to_string());
        let mut results_q = vec![wf.clone(), ("all_runs", "true".into()), ("sort_by", "id".into())];
        if let Some(s) = status {
            results_q.push(("status", s.as_str().to_string()));
        }
        let results = self.client.get_all::<TorcResult>("/results", &results_q, "listing results");
        let edges_path = format!("/workflows/{workflow_id}/job_dependencies");
        let edges = self.client.get_all::<TorcEdge>(&edges_path, &[], "listing job dependencies");
        let rr_q = [wf];
        let rrs =
            self.client.get_all::<TorcResources>("/resource_requirements", &rr_q, "listing resource requirements");
        let (results, edges, rrs) = tokio::join!(results, edges, rrs);
        Ok(Tables::new(results?, edges?, rrs?))
    }

    async fn job_page(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        offset: u64,
        limit: u64,
    ) -> Result<Page<TorcJob>, BackendError> {
        let mut q = vec![
            ("workflow_id", workflow_id.to_string()),
            ("offset", offset.to_string()),
            ("limit", limit.clamp(1, TORC_MAX_PAGE).to_string()),
            ("sort_by", "id".to_string()),
        ];
        if let Some(s) = status {
            q.push(("status", s.as_str().to_string()));
        }
        self.client.get("/jobs", &q, "listing jobs").await
    }

    fn build(&self, jobs: &[TorcJob], tables: &Tables) -> Result<Vec<Job>, BackendError> {
        let out =
            jobs.iter().map(|j| tables.job(j, &self.output_dir, self.client.base())).collect::<Result<Vec<_>, _>>()?;
        self.remember(jobs.first().map(|j| j.workflow_id).unwrap_or_default(), &out);
        Ok(out)
    }

    pub(super) async fn list_page(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        page: PageRequest,
    ) -> Result<JobPage, BackendError> {
        let (jobs, tables) =
            tokio::join!(self.job_page(workflow_id, status, page.offset, page.limit), self.tables(workflow_id, status));
        let (jobs, tables) = (jobs?, tables?);
        let total = u64::try_from(jobs.total_count).unwrap_or_default();
        let next = page.offset + jobs.items.len() as u64;
        Ok(JobPage {
            jobs: self.build(&jobs.items, &tables)?,
            total,
            next_offset: (jobs.has_more && !jobs.items.is_empty()).then_some(next),
        })
    }

    /// Every page of jobs, with one pass of the workflow-wide tables.
    pub(super) async fn list_all(&self, workflow_id: i64, status: Option<JobStatus>) -> Result<Vec<Job>, BackendError> {
        let mut q = vec![("workflow_id", workflow_id.to_string()), ("sort_by", "id".to_string())];
        if let Some(s) = status {
            q.push(("status", s.as_str().to_string()));
        }
        let (jobs, tables) =
            tokio::join!(self.client.get_all::<TorcJob>("/jobs", &q, "listing jobs"), self.tables(workflow_id, status));
        self.build(&jobs?, &tables?)
    }

    /// One job, its results, and its resource requirements row.
    pub(super) async fn one_job(&self, workflow_id: i64, job_id: i64) -> Result<(TorcJob, Job), BackendError> {
        let tj = self.torc_job(workflow_id, job_id).await?;
        let results = self.job_results(workflow_id, job_id);
        let rr = async {
            match tj.resource_requirements_id {
                Some(id) => self
                    .client
                    .get::<TorcResources>(&format!("/resource_requirements/{id}"), &[], "reading resource requirements")
                    .await
                    .map(Some),
                None => Ok(None),
            }
        };
        let (results, rr) = tokio::join!(results, rr);
        let tables = Tables::new(results?, vec![], rr?.into_iter().collect());
        let job = tables.job(&tj, &self.output_dir, self.client.base())?;
        self.remember(workflow_id, std::slice::from_ref(&job));
        Ok((tj, job))
    }

    /// `GET /jobs/{id}`, refusing a job of another workflow.
    pub(super) async fn torc_job(&self, workflow_id: i64, job_id: i64) -> Result<TorcJob, BackendError> {
        let what = format!("reading job {job_id}");
        let a = self
            .client
            .call(reqwest::Method::GET, &format!("/jobs/{job_id}"), &[], None, super::client::Safety::Idempotent, &what)
            .await?;
        if a.status == 404 && serde_json::from_slice::<serde_json::Value>(&a.body).is_ok() {
            return Err(BackendError::JobNotFound { workflow_id, job_id });
        }
        if !a.ok() {
            return Err(self.client.unexpected(&a, &what));
        }
        let tj: TorcJob = a.json(&what)?;
        if tj.workflow_id != workflow_id {
            return Err(BackendError::JobNotFound { workflow_id, job_id });
        }
        Ok(tj)
    }

    /// Every result row of one job, all runs.
    pub(super) async fn job_results(&self, workflow_id: i64, job_id: i64) -> Result<Vec<TorcResult>, BackendError> {
        let q = [
            ("workflow_id", workflow_id.to_string()),
            ("job_id", job_id.to_string()),
            ("all_runs", "true".to_string()),
            ("sort_by", "id".to_string()),
        ];
        self.client.get_all("/results", &q, &format!("listing results of job {job_id}")).await
    }

    fn remember(&self, workflow_id: i64, jobs: &[Job]) {
        let Ok(mut runs) = self.runs.lock() else { return };
        if runs.len() + jobs.len() > MAX_REMEMBERED_JOBS {
            runs.clear();
        }
        for j in jobs {
            runs.insert((workflow_id, j.id), j.attempts.iter().map(|a| (a.attempt_id, a.run_id)).collect());
        }
    }

    fn remembered(&self, workflow_id: i64, job_id: i64) -> Option<Vec<(u32, u32)>> {
        self.runs.lock().ok()?.get(&(workflow_id, job_id)).cloned()
    }

    pub(super) async fn log_file_impl(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
    ) -> Result<LogFile, BackendError> {
        let pick = |known: &[(u32, u32)]| -> Option<(u32, u32)> {
            match attempt {
                Some(n) => known.iter().filter(|(a, _)| *a == n).max_by_key(|(_, r)| *r).copied(),
                None => known.iter().max_by_key(|(a, r)| (*r, *a)).copied(),
            }
        };
        let mut found = self.remembered(workflow_id, job_id).and_then(|k| pick(&k));
        if found.is_none() {
            let results = self.job_results(workflow_id, job_id).await?;
            let mut known = Vec::new();
            for r in &results {
                known.push((
                    small(r.attempt(), "attempt_id", self.client.base())?,
                    small(r.run_id, "run_id", self.client.base())?,
                ));
            }
            if known.is_empty() {
                // Tell a missing job from a job with no finished attempt.
                self.torc_job(workflow_id, job_id).await?;
            }
            found = pick(&known);
            if found.is_none() {
                let mut ids: Vec<String> = known.iter().map(|(a, r)| format!("{a} (run {r})")).collect();
                ids.sort();
                let known = if ids.is_empty() { "none".to_string() } else { ids.join(", ") };
                return Err(BackendError::AttemptNotFound { job_id, attempt: attempt.unwrap_or(0), known });
            }
            if let Ok(mut runs) = self.runs.lock() {
                runs.insert((workflow_id, job_id), known);
            }
        }
        let (attempt_id, run_id) = found.unwrap_or_default();
        let path = stdio_path(&self.output_dir, workflow_id, job_id, i64::from(run_id), i64::from(attempt_id), stream);
        let shown = path.display().to_string();
        let hint = format!(
            "Torc's runner writes it under its output directory (`torc run -o DIR`): pass the same DIR as --torc-output-dir or TORC_OUTPUT_DIR (now {})",
            self.output_dir.display()
        );
        Ok(LogFile { job_id, attempt_id, stream, path, shown, hint: Some(hint) })
    }
}
