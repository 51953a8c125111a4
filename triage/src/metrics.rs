//! Prometheus metrics for `triage watch --metrics ADDR` and `triage-mcp --http` at
//! `/metrics`, in the Prometheus text exposition format (the `prometheus` crate).
//! Names follow Prometheus' conventions: a `triage_` prefix, base units (seconds), `_total`
//! on counters, labels of small fixed sets (no job ids, no free text).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `triage_jobs_triaged_total` | counter | `verdict` (the catalog's), `validation`, `outcome`, `authority` |
//! | `triage_agent_runs_total` | counter | `agent`, `result` (`proposed`, `failed`) |
//! | `triage_agent_run_duration_seconds` | histogram | `agent` |
//! | `triage_decision_results` | gauge | `action`, `result` (from `triage outcomes`: retries that worked or failed again, fails held or reversed) |
//! | `triage_agent_circuit_state` | gauge | `agent`, `state` (1 for the current state) |
//! | `triage_backend_errors_total` | counter | `backend` (its kind: dir, torc, slurm) |
//! | `triage_batches_total` | counter | none |

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::engine::outcomes::OutcomeReport;
use crate::engine::{PlanJob, RunEvent};
use crate::model::serde_name;

/// The content type of [`Metrics::render`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const CIRCUIT_STATES: [&str; 3] = ["closed", "half_open", "open"];

/// Every metric triage exports, cheap to clone (shared counters).
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    jobs: IntCounterVec,
    agent_runs: IntCounterVec,
    agent_seconds: HistogramVec,
    results: IntGaugeVec,
    circuits: IntGaugeVec,
    backend_errors: IntCounterVec,
    batches: IntCounter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        // Every name, help text and label set below is fixed and valid, so building and
        // registering them cannot fail; a failure would be a bug in this file.
        let counter = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition")
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition")
        };
        let m = Metrics {
            registry: Registry::new(),
            jobs: counter(
                "triage_jobs_triaged_total",
                "Jobs triaged, by the catalog's verdict, validation, outcome and authority.",
                &["verdict", "validation", "outcome", "authority"],
            ),
            agent_runs: counter(
                "triage_agent_runs_total",
                "Agent runs (with their retries), by agent and result.",
                &["agent", "result"],
            ),
            agent_seconds: HistogramVec::new(
                HistogramOpts::new(
                    "triage_agent_run_duration_seconds",
                    "Wall time of an agent's run, retries included.",
                )
                .buckets(prometheus::exponential_buckets(1.0, 2.0, 12).expect("valid buckets")),
                &["agent"],
            )
            .expect("valid metric definition"),
            results: gauge(
                "triage_decision_results",
                "Applied decisions of the watched workflows by what became of them (retries that worked or failed again, fails held or reversed).",
                &["action", "result"],
            ),
            circuits: gauge(
                "triage_agent_circuit_state",
                "An agent's circuit breaker: 1 for its current state.",
                &["agent", "state"],
            ),
            backend_errors: counter(
                "triage_backend_errors_total",
                "Backend requests that failed, by backend kind.",
                &["backend"],
            ),
            batches: IntCounter::new("triage_batches_total", "Batches triaged by triage watch.")
                .expect("valid metric definition"),
        };
        let all: [Box<dyn prometheus::core::Collector>; 7] = [
            Box::new(m.jobs.clone()),
            Box::new(m.agent_runs.clone()),
            Box::new(m.agent_seconds.clone()),
            Box::new(m.results.clone()),
            Box::new(m.circuits.clone()),
            Box::new(m.backend_errors.clone()),
            Box::new(m.batches.clone()),
        ];
        for c in all {
            m.registry.register(c).expect("distinct metric names");
        }
        m
    }

    /// Count triaged jobs (a batch's plan, or what an MCP classify call judged).
    pub fn record_jobs<'a>(&self, jobs: impl IntoIterator<Item = &'a PlanJob>) {
        for j in jobs {
            let authority = j.proposed.as_ref().map_or("none".into(), |p| serde_name(&p.authority()));
            self.jobs
                .with_label_values(&[
                    serde_name(&j.catalog.verdict),
                    serde_name(&j.validation.status),
                    serde_name(&j.outcome),
                    authority,
                ])
                .inc();
        }
    }

    /// A batch was triaged.
    pub fn record_batch(&self) {
        self.batches.inc();
    }

    /// What an event says about agents and circuits.
    pub fn record_event(&self, e: &RunEvent) {
        let agent = e.subject.as_str();
        let result = match e.kind.as_str() {
            "agent_done" | "recovered" => Some("proposed"),
            "fallback" => Some("failed"),
            _ => None,
        };
        if let Some(result) = result {
            self.agent_runs.with_label_values(&[agent, result]).inc();
            if let Some(secs) = e.duration_secs {
                self.agent_seconds.with_label_values(&[agent]).observe(secs);
            }
        }
        let state = match e.kind.as_str() {
            "circuit_open" => Some("open"),
            "circuit_half_open" => Some("half_open"),
            "circuit_closed" => Some("closed"),
            _ => None,
        };
        if let Some(state) = state {
            for s in CIRCUIT_STATES {
                self.circuits.with_label_values(&[agent, s]).set(i64::from(s == state));
            }
        }
    }

    /// A backend request failed (`spec` is the backend's description; only its kind is kept).
    pub fn record_backend_error(&self, spec: &str) {
        let kind = spec.split(':').next().unwrap_or("unknown");
        self.backend_errors.with_label_values(&[kind]).inc();
    }

    /// Set the decision results from the outcome reports of the watched workflows.
    pub fn set_results(&self, reports: &[OutcomeReport]) {
        self.results.reset();
        for r in reports {
            for d in &r.decisions {
                self.results.with_label_values(&[d.action.clone(), serde_name(&d.result)]).inc();
            }
        }
    }

    /// The exposition, Prometheus text format (serve it with [`CONTENT_TYPE`]).
    /// The `/metrics` route serving [`Metrics::render`], for any axum app to merge (the CLI's
    /// `--metrics` server and the MCP server's HTTP transport serve the same one).
    pub fn router(&self) -> axum::Router {
        let metrics = self.clone();
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let m = metrics.clone();
                async move { ([(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)], m.render()) }
            }),
        )
    }

    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding gathered families into memory cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_count_agent_runs_with_their_durations_and_circuit_states() {
        let m = Metrics::new();
        m.record_event(&RunEvent::now("agent_done", "claude", "3 proposals").took(std::time::Duration::from_secs(5)));
        m.record_event(&RunEvent::now("fallback", "codex", "crashed; falling back to rules"));
        m.record_event(&RunEvent::now("circuit_open", "codex", "opened"));
        m.record_backend_error("torc:http://127.0.0.1:8080/torc-service/v1");
        let text = m.render();
        assert!(text.contains(r#"triage_agent_runs_total{agent="claude",result="proposed"} 1"#), "{text}");
        assert!(text.contains(r#"triage_agent_runs_total{agent="codex",result="failed"} 1"#), "{text}");
        assert!(text.contains(r#"triage_agent_run_duration_seconds_count{agent="claude"} 1"#), "{text}");
        assert!(text.contains(r#"triage_agent_circuit_state{agent="codex",state="open"} 1"#), "{text}");
        assert!(text.contains(r#"triage_agent_circuit_state{agent="codex",state="closed"} 0"#), "{text}");
        assert!(text.contains(r#"triage_backend_errors_total{backend="torc"} 1"#), "{text}");
    }
}
