//! Applying a plan reads the workflow once and moves its jobs in batches, whatever the number of
//! entries: a backend that counts the calls it gets (over a real directory store) sees one
//! listing, one `retry_jobs` and one `fail_jobs`, never a read or a move per entry. That is what
//! keeps `triage apply --plan` of a 10,000-task Slurm array to a few Slurm commands.

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use triage::backend::dir::DirBackend;
use triage::backend::{
    AuditEvent, BackendError, FailMove, Guard, JobBackend, JobPage, LogFile, LogStream, MoveOutcome, PageRequest,
    ResourceChange, RetryMove, WorkflowInfo,
};
use triage::catalog::Catalog;
use triage::engine::{Engine, Mode, Outcome, PLAN_FORMAT_VERSION, Plan, Policy};
use triage::model::{Action, Job, JobStatus};

/// The directory store, with every call it gets written down (`name` or `name:moves`).
struct Counting {
    inner: DirBackend,
    calls: Mutex<Vec<String>>,
}

impl Counting {
    fn note(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl JobBackend for Counting {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn workflow(&self, workflow_id: i64) -> Result<WorkflowInfo, BackendError> {
        self.note("workflow".into());
        self.inner.workflow(workflow_id).await
    }
    async fn list_jobs(
        &self,
        workflow_id: i64,
        status: Option<JobStatus>,
        page: PageRequest,
    ) -> Result<JobPage, BackendError> {
        self.note("list_jobs".into());
        self.inner.list_jobs(workflow_id, status, page).await
    }
    async fn job(&self, workflow_id: i64, job_id: i64) -> Result<Job, BackendError> {
        self.note("job".into());
        self.inner.job(workflow_id, job_id).await
    }
    async fn log_file(
        &self,
        workflow_id: i64,
        job_id: i64,
        attempt: Option<u32>,
        stream: LogStream,
    ) -> Result<LogFile, BackendError> {
        self.inner.log_file(workflow_id, job_id, attempt, stream).await
    }
    async fn retry_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        change: &ResourceChange,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        self.note("retry_job".into());
        self.inner.retry_job(workflow_id, job_id, guard, change, audit).await
    }
    async fn retry_jobs(&self, workflow_id: i64, moves: &[RetryMove]) -> Vec<Result<MoveOutcome, BackendError>> {
        self.note(format!("retry_jobs:{}", moves.len()));
        self.inner.retry_jobs(workflow_id, moves).await
    }
    async fn fail_job(
        &self,
        workflow_id: i64,
        job_id: i64,
        guard: &Guard,
        audit: &AuditEvent,
    ) -> Result<MoveOutcome, BackendError> {
        self.note("fail_job".into());
        self.inner.fail_job(workflow_id, job_id, guard, audit).await
    }
    async fn fail_jobs(&self, workflow_id: i64, moves: &[FailMove]) -> Vec<Result<MoveOutcome, BackendError>> {
        self.note(format!("fail_jobs:{}", moves.len()));
        self.inner.fail_jobs(workflow_id, moves).await
    }
    async fn append_event(&self, workflow_id: i64, event: &AuditEvent) -> Result<(), BackendError> {
        self.inner.append_event(workflow_id, event).await
    }
    async fn audit_trail(&self, workflow_id: i64) -> Result<Vec<AuditEvent>, BackendError> {
        self.inner.audit_trail(workflow_id).await
    }
}

#[tokio::test]
async fn a_plan_is_applied_with_one_listing_and_one_batch_per_kind_of_move() {
    let (_tmp, store) = support::demo_copy();
    let backend = Arc::new(Counting { inner: DirBackend::open(&store).unwrap(), calls: Mutex::new(Vec::new()) });
    let engine = Engine::new(backend.clone(), Arc::new(Catalog::builtin()), Policy::default());

    // A dry-run plan by the rules, as `triage run --dry-run --plan-out` writes it.
    let (_, evidence) = engine.pending(42).await.unwrap();
    let jobs: Vec<_> = evidence.iter().map(|ev| engine.judge(ev, None, true, Mode::DryRun)).collect();
    let ready = |action: Action| {
        jobs.iter()
            .filter(|j| j.outcome == Outcome::WouldApply && j.proposed.as_ref().is_some_and(|p| p.action == action))
            .count()
    };
    let (retries, fails) = (ready(Action::Retry), ready(Action::Fail));
    assert!(retries >= 2 && fails >= 2, "the demo workflow has several of each: {jobs:?}");
    let mut plan = Plan {
        format: PLAN_FORMAT_VERSION,
        workflow_id: 42,
        backend: engine.backend.describe(),
        dry_run: true,
        agent: "rules".into(),
        catalog_version: String::new(),
        created_at: jiff::Timestamp::now(),
        jobs,
        events: vec![],
        summary: Default::default(),
        agent_output: vec![],
    };
    backend.calls.lock().unwrap().clear();

    engine.apply_plan(&mut plan, Mode::Apply, "test", &|_| {}).await;

    let calls = backend.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec!["workflow".to_string(), "list_jobs".into(), format!("retry_jobs:{retries}"), format!("fail_jobs:{fails}")],
        "one read of the workflow, one batch of retries, one of fails"
    );
    let applied = plan.jobs.iter().filter(|j| j.outcome == Outcome::Applied).count();
    assert_eq!(applied, retries + fails, "{:?}", plan.jobs);
    let after = engine.backend.all_jobs(42, None).await.unwrap();
    for j in plan.jobs.iter().filter(|j| j.outcome == Outcome::Applied) {
        let now = after.iter().find(|a| a.id == j.job_id).unwrap();
        let want = match j.proposed.as_ref().unwrap().action {
            Action::Retry => JobStatus::Ready,
            Action::Fail => JobStatus::Failed,
        };
        assert_eq!(now.status, want, "job {}", j.job_id);
    }

    // The same plan again changes nothing: every entry moved on.
    backend.calls.lock().unwrap().clear();
    let mut again = plan.clone();
    for j in &mut again.jobs {
        if j.outcome == Outcome::Applied {
            j.outcome = Outcome::WouldApply;
        }
    }
    engine.apply_plan(&mut again, Mode::Apply, "test", &|_| {}).await;
    assert!(again.jobs.iter().all(|j| j.outcome != Outcome::Applied), "{:?}", again.jobs);
    let calls = backend.calls.lock().unwrap().clone();
    assert_eq!(calls, vec!["workflow".to_string(), "list_jobs".into()], "skipped entries make no move");
}
