//! `triage hints`: run the catalog over some stderr and print its verdict and evidence.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use triage::catalog::{Hints, ScanContext};
use triage::logs::{TailOptions, tail_lines};
use triage::model::SchedulerState;

use super::common::GlobalArgs;

#[derive(Debug, Args)]
pub struct HintsArgs {
    /// The stderr to read: a file, or `-` (the default) for stdin.
    #[arg(value_name = "FILE|-", default_value = "-")]
    pub input: String,
    /// The job's exit status, if known (e.g. 137: killed, often out of memory).
    #[arg(long, allow_negative_numbers = true)]
    pub exit_code: Option<i64>,
    /// What the scheduler said: PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, ...
    #[arg(long, value_name = "STATE")]
    pub scheduler_state: Option<SchedulerState>,
    /// How many lines from the end of the input to read.
    #[arg(long, default_value_t = 200)]
    pub lines: usize,
    /// Print JSON: {"verdict", "category", "action", "matches": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: HintsArgs) -> anyhow::Result<ExitCode> {
    let catalog = global.settings()?.catalog()?;
    let text = read_input(&args.input, args.lines)?;
    let ctx = ScanContext { exit_code: args.exit_code, scheduler_state: args.scheduler_state };
    let hints = catalog.scan(&text, &ctx);
    if args.json {
        let mut value = serde_json::to_value(&hints)?;
        value["catalog_version"] = catalog.version().into();
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", render(&hints));
    }
    Ok(ExitCode::SUCCESS)
}

/// The last `lines` lines of a file (read from its end) or of stdin.
fn read_input(input: &str, lines: usize) -> anyhow::Result<String> {
    if input == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("cannot read stdin")?;
        let text = String::from_utf8_lossy(&buf);
        let all: Vec<&str> = text.lines().collect();
        return Ok(all[all.len().saturating_sub(lines)..].join("\n"));
    }
    let path = PathBuf::from(input);
    let tail = tail_lines(&path, lines, &TailOptions::default())
        .with_context(|| format!("cannot read `{input}`; give a readable file, or `-` to read stdin"))?;
    Ok(tail.text().into_owned())
}

/// The human rendering: verdict first, then the evidence.
pub fn render(h: &Hints) -> String {
    let mut out = String::new();
    let category = h.category.as_deref().unwrap_or("-");
    out.push_str(&format!("verdict:   {} ({category})\n", h.verdict.as_str()));
    if let Some(action) = h.action {
        let strategy =
            h.strategy.map(|s| format!("  (strategy: {})", triage::model::serde_name(&s))).unwrap_or_default();
        out.push_str(&format!("action:    {}{strategy}\n", action.as_str()));
    }
    if let Some(hint) = &h.hint {
        out.push_str(&format!("hint:      {hint}\n"));
    }
    if let Some(ev) = &h.evidence {
        out.push_str(&format!("evidence:  line {} [{}] {}\n", ev.line, ev.id, ev.text));
    }
    if h.matches.is_empty() {
        out.push_str("matches:   none; no catalog entry knows this failure\n");
    } else {
        out.push_str("matches:\n");
        for m in &h.matches {
            out.push_str(&format!(
                "  {:>5}  {:<9}  {:<20}  {:<28}  {}\n",
                m.line,
                triage::model::serde_name(&m.class),
                m.category,
                m.id,
                m.text
            ));
        }
    }
    out
}
