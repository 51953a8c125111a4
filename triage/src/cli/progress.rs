//! Progress for `triage run` and `apply`: a spinner with the latest event on a terminal, plain
//! lines on stderr in CI or when stderr is not a terminal. stdout is left to the output.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use triage::engine::RunEvent;

pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new() -> Progress {
        let interactive = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let bar = interactive.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar }
    }

    pub fn event(&self, e: &RunEvent) {
        let line = format!("[{}] {}: {}", e.kind, e.subject, e.reason);
        match &self.bar {
            Some(bar) if e.kind == "progress" => bar.set_message(line),
            Some(bar) => bar.println(line),
            None => eprintln!("triage: {line}"),
        }
    }

    pub fn message(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(text.to_string()),
            None => eprintln!("triage: {text}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
