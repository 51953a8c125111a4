//! `triage watch`: run beside the workload, triaging failures as they land. This file reads
//! the flags, turns SIGINT/SIGTERM/SIGHUP into a stop request, and prints; the loop is
//! `triage::watch`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use triage::engine::{Plan, RunEvent};
use triage::resilience::CircuitBook;
use triage::watch::{WatchEnd, WatchOptions, WatchSink};

use super::agent_args::AgentArgs;
use super::common::GlobalArgs;
use super::output;
use super::progress::Progress;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// A workflow to watch (repeat for several).
    #[arg(long, required = true)]
    pub workflow: Vec<i64>,
    /// Seconds between polls of the backend.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub interval: f64,
    /// Seconds to wait after new failures appear, so failures landing together are one batch.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub settle: f64,
    /// At most N agent runs in any hour; past it the catalog decides and the rest waits for a person.
    #[arg(long, value_name = "N")]
    pub max_agent_runs_per_hour: Option<u32>,
    /// At most N jobs per batch; the rest waits for the next one.
    #[arg(long, value_name = "N")]
    pub max_jobs_per_run: Option<usize>,
    /// Stop once every watched workflow is complete (pending_failed is not complete).
    #[arg(long)]
    pub until_complete: bool,
    /// Change nothing: show each batch's plan once, move no job, write no review plan.
    #[arg(long)]
    pub dry_run: bool,
    /// Folder of the review plans (`workflow-<ID>-review.json`, for `triage review --plan`).
    /// Default: $TRIAGE_STATE_DIR/watch.
    #[arg(long, value_name = "DIR")]
    pub review_dir: Option<PathBuf>,
    /// Command run through `sh -c` when jobs start waiting for a person, with
    /// TRIAGE_WORKFLOW_ID, TRIAGE_REVIEW_JOBS (comma-separated ids) and TRIAGE_REVIEW_PLAN set.
    #[arg(long, value_name = "CMD")]
    pub on_review: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464; port 0 picks one).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Events and each batch's plan as JSON Lines on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub agent: AgentArgs,
}

fn seconds(flag: &str, secs: f64) -> anyhow::Result<Duration> {
    anyhow::ensure!(secs.is_finite() && secs >= 0.0, "{flag} must be a number of seconds, 0 or more (got {secs})");
    Ok(Duration::from_secs_f64(secs))
}

/// Where the watcher's output goes: a progress line and a table per batch, or JSON Lines.
struct Printer {
    json: bool,
    progress: Progress,
}

impl Printer {
    fn line(&self, value: serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }
}

impl WatchSink for Printer {
    fn event(&self, e: &RunEvent) {
        if self.json {
            self.line(serde_json::json!({"type": "event", "event": e}));
        } else {
            self.progress.event(e);
        }
    }

    fn batch(&self, plan: &Plan) {
        if self.json {
            self.line(serde_json::json!({"type": "batch", "plan": plan}));
        } else {
            print!("{}", output::table(plan));
        }
    }
}

pub async fn run(global: &GlobalArgs, args: WatchArgs) -> anyhow::Result<ExitCode> {
    let settings = global.settings()?;
    let mut engine = settings.engine()?;
    args.agent.check(&mut engine)?;
    anyhow::ensure!(args.interval > 0.0, "--interval must be more than 0 seconds");
    let state = CircuitBook::default_dir();
    let first = args.workflow[0];
    let mut opts = WatchOptions {
        workflows: args.workflow.clone(),
        interval: seconds("--interval", args.interval)?,
        settle: seconds("--settle", args.settle)?,
        max_agent_runs_per_hour: args.max_agent_runs_per_hour,
        max_jobs_per_run: args.max_jobs_per_run.filter(|n| *n > 0),
        until_complete: args.until_complete,
        review_dir: args.review_dir.clone().unwrap_or_else(|| state.join("watch")),
        on_review: args.on_review.clone(),
        run: args.agent.run_options(&settings, first, args.dry_run, state.join("runs"))?,
        runs_dir: state.join("runs"),
        lock_dir: state.join("watch").join("locks"),
        metrics: None,
    };
    anyhow::ensure!(args.max_jobs_per_run != Some(0), "--max-jobs-per-run must be at least 1");
    if let Some(addr) = args.metrics {
        let metrics = triage::metrics::Metrics::new();
        super::metrics_server::spawn(addr, metrics.clone()).await?;
        opts.metrics = Some(metrics);
    }

    // From here on a signal is a stop request, honoured between batches: the process does
    // not die in the middle of a move.
    let (tx, rx) = tokio::sync::watch::channel(None::<String>);
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        };
        let _ = tx.send(Some(name.to_string()));
    });

    let printer = Printer { json: args.json, progress: Progress::new() };
    let end = triage::watch::watch(&engine, &opts, &printer, rx).await;
    printer.progress.finish();
    match end? {
        WatchEnd::Complete => eprintln!("triage: every watched workflow is complete"),
        WatchEnd::Stopped(signal) => eprintln!("triage: {signal} received; stopped between batches"),
        WatchEnd::Interrupted(i) => eprintln!("triage: {i}; its jobs are taken up by the next watcher"),
    }
    Ok(ExitCode::SUCCESS)
}
