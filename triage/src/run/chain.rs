//! Walking the agent chain: circuit breaker, retries with seeded backoff, fallbacks.

use std::collections::BTreeMap;
use std::time::Duration;

use backon::Retryable;

use super::RunOptions;
use crate::agent::{AgentFailure, AgentKind, AgentSetup, clis};
use crate::engine::propose_log::ReadBack;
use crate::engine::{Engine, Evidence, Proposal, RunEvent};
use crate::prompts;
use crate::resilience::{Backoff, BreakerState, CircuitBook, Decision};

/// Who ended up proposing, and what.
#[derive(Debug, Clone, Default)]
pub struct AgentChoice {
    /// The agent whose proposals are used (`rules`, `none` when the chain ran out).
    pub agent: String,
    pub proposals: BTreeMap<i64, Proposal>,
    /// Jobs without a proposal get the catalog's verdict.
    pub rules_fallback: bool,
    /// Files holding the agents' captured output.
    pub outputs: Vec<String>,
}

impl AgentChoice {
    pub fn nobody() -> AgentChoice {
        AgentChoice { agent: "none".into(), ..AgentChoice::default() }
    }
}

/// Triage got a signal while an agent ran: the agent's process group is gone; stop the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{signal} received: stopped the agent `{agent}` (its whole process group); nothing was applied")]
pub struct Interrupted {
    pub signal: String,
    /// The signal's number (the process exits with 128 + it).
    pub number: i32,
    pub agent: String,
}

/// Walk the chain until an agent proposes, the rules take over, or it runs out.
pub async fn choose(
    engine: &Engine,
    opts: &RunOptions,
    evidence: &[Evidence],
    emit: &mut impl FnMut(RunEvent),
) -> Result<AgentChoice, Interrupted> {
    let rules_in_chain = opts.chain.contains(&AgentKind::Rules);
    let book = CircuitBook::new(
        &opts.state_dir,
        engine.policy.resilience.breaker_failures,
        Duration::from_secs(engine.policy.resilience.breaker_cooldown_secs),
    );
    let mut outputs = Vec::new();
    for (position, requested) in opts.chain.iter().enumerate() {
        let kind = if *requested == AgentKind::Auto {
            let found = AgentKind::resolve_auto();
            if found == AgentKind::Rules {
                emit(RunEvent::now(
                    "degraded",
                    "auto",
                    "no agent CLI (claude, copilot, codex, gemini) on PATH: using the built-in catalog classifier",
                ));
            }
            found
        } else {
            *requested
        };
        if kind == AgentKind::Rules {
            if position > 0 {
                emit(RunEvent::now(
                    "degraded",
                    "rules",
                    "every agent before it failed: using the built-in catalog classifier",
                ));
            }
            let proposals = evidence
                .iter()
                .filter_map(|ev| crate::engine::rules::propose(ev, &engine.policy).ok().map(|p| (ev.job.id, p)))
                .collect();
            return Ok(AgentChoice { agent: "rules".into(), proposals, rules_fallback: true, outputs });
        }
        let name = kind.as_str().to_string();
        let use_breaker = !opts.resilience_off;
        let mut probing = false;
        if use_breaker {
            match book.check(&name) {
                Ok(Decision::Allow) => {}
                Ok(Decision::Probe) => {
                    probing = true;
                    emit(RunEvent::now("circuit_half_open", &name, "cooldown over: one probe run"));
                }
                Ok(Decision::Refuse { until, last_error }) => {
                    emit(RunEvent::now(
                        "circuit_open",
                        &name,
                        format!(
                            "skipped: its circuit is open until {until} (last error: {}); `triage circuit reset {name}` clears it",
                            last_error.unwrap_or_default()
                        ),
                    ));
                    continue;
                }
                Err(e) => emit(RunEvent::now("warning", &name, e.to_string())),
            }
        }
        let started = std::time::Instant::now();
        let result = attempt_with_retries(engine, opts, kind, emit, &mut outputs).await;
        let took = started.elapsed();
        match result {
            Ok((back, tries)) => {
                if use_breaker && let Ok(Some(from)) = book.record_success(&name) {
                    emit(RunEvent::now("circuit_closed", &name, format!("recovered (was {})", state_name(from))));
                }
                // `recovered` only when the agent worked after failing; `agent_done` otherwise.
                let kind = if tries > 1 || probing { "recovered" } else { "agent_done" };
                emit(RunEvent::now(kind, &name, format!("{} proposals", back.proposals.len())).took(took));
                if back.unreadable > 0 {
                    emit(RunEvent::now(
                        "warning",
                        &name,
                        format!(
                            "{} lines of the propose-only log were not proposal records of this workflow; ignored",
                            back.unreadable
                        ),
                    ));
                }
                return Ok(AgentChoice {
                    agent: name,
                    proposals: back.proposals,
                    rules_fallback: rules_in_chain,
                    outputs,
                });
            }
            Err(AgentFailure::Interrupted { name: signal, number }) => {
                return Err(Interrupted { signal, number, agent: name });
            }
            Err(failure) => {
                if use_breaker && let Ok(Some(BreakerState::Open)) = book.record_failure(&name, &failure.to_string()) {
                    emit(RunEvent::now(
                        "circuit_open",
                        &name,
                        format!(
                            "opened after {} consecutive failed runs; later runs skip it for {} s",
                            engine.policy.resilience.breaker_failures, engine.policy.resilience.breaker_cooldown_secs
                        ),
                    ));
                }
                let next = opts.chain.get(position + 1).map(|k| k.as_str()).unwrap_or("a person (needs review)");
                emit(RunEvent::now("fallback", &name, format!("{failure}; falling back to {next}")).took(took));
            }
        }
    }
    Ok(AgentChoice { agent: "none".into(), proposals: BTreeMap::new(), rules_fallback: false, outputs })
}

async fn attempt_with_retries(
    engine: &Engine,
    opts: &RunOptions,
    kind: AgentKind,
    emit: &mut impl FnMut(RunEvent),
    outputs: &mut Vec<String>,
) -> Result<(ReadBack, u32), AgentFailure> {
    let r = &engine.policy.resilience;
    let backoff = if opts.resilience_off { Backoff::none() } else { Backoff::new(r, opts.seed) };
    let attempt = std::sync::atomic::AtomicU32::new(0);
    let retries = std::sync::Mutex::new(Vec::new());
    let name = kind.as_str();
    let result = (|| async {
        let n = attempt.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        once(engine, opts, kind, n).await
    })
    .retry(backoff)
    .sleep(tokio::time::sleep)
    .when(AgentFailure::is_transient)
    .notify(|err: &AgentFailure, dur: Duration| {
        if let Ok(mut r) = retries.lock() {
            r.push(RunEvent::now("retry", name, format!("{err}; retrying in {} ms", dur.as_millis())));
        }
    })
    .await;
    for e in retries.into_inner().unwrap_or_default() {
        emit(e);
    }
    let n = attempt.load(std::sync::atomic::Ordering::SeqCst);
    let result = result.map(|back| (back, n));
    for i in 1..=n {
        for ext in ["stdout", "stderr"] {
            let p = opts.work_dir.join(format!("{name}-{i}.{ext}"));
            if p.exists() {
                outputs.push(p.display().to_string());
            }
        }
    }
    result
}

/// One agent run: write its files, spawn it, judge its output, read its proposals.
async fn once(engine: &Engine, opts: &RunOptions, kind: AgentKind, n: u32) -> Result<ReadBack, AgentFailure> {
    let name = kind.as_str();
    let mcp = std::path::Path::new(&opts.mcp_command);
    let found = if mcp.components().count() > 1 {
        mcp.is_file()
    } else {
        crate::agent::find_on_path(&opts.mcp_command).is_some()
    };
    if !found {
        return Err(AgentFailure::NotInstalled(format!(
            "the agent needs `triage-mcp`, which is neither beside `triage` nor on PATH ({}); build it with `cargo build -p triage-mcp` or install it with `cargo install --path mcp-server`",
            opts.mcp_command
        )));
    }
    let io = |e: std::io::Error| {
        AgentFailure::Crashed(format!("cannot prepare the run in {}: {e}", opts.work_dir.display()))
    };
    std::fs::create_dir_all(&opts.work_dir).map_err(io)?;
    let proposals_file = opts.work_dir.join(format!("{name}-{n}.proposals.jsonl"));
    let _ = std::fs::remove_file(&proposals_file);
    let mut mcp_args = opts.mcp_args.clone();
    mcp_args.extend([
        "--workflow".into(),
        opts.workflow_id.to_string(),
        "--propose-only".into(),
        proposals_file.display().to_string(),
        "--agent-name".into(),
        name.into(),
    ]);
    let setup = AgentSetup {
        workflow_id: opts.workflow_id,
        mcp_command: opts.mcp_command.clone(),
        mcp_args,
        mcp_env: opts.mcp_env.clone(),
        prompt: prompts::render(
            &opts.prompt_template,
            &[("workflow_id", &opts.workflow_id.to_string()), ("apply_note", prompts::PROPOSE_ONLY_NOTE)],
        ) + &opts.only_jobs.as_ref().map(prompts::batch_note).unwrap_or_default(),
        work_dir: opts.work_dir.clone(),
        timeout: Duration::from_secs(engine.policy.resilience.agent_timeout_secs),
        max_turns: opts.max_turns,
        agent_cmd: opts.agent_cmd.clone(),
        extra_args: opts.agent_args.clone(),
    };
    clis::run_once(kind, &setup, n, &proposals_file).await
}

fn state_name(s: BreakerState) -> &'static str {
    match s {
        BreakerState::Closed => "closed",
        BreakerState::Open => "open",
        BreakerState::HalfOpen => "half-open",
    }
}
