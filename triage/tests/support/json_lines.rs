//! A child process's output followed from reader threads: its JSON lines (`--json` output) as
//! they come, and its stderr as text, for tests that wait on what a long-running command
//! (`triage watch`) has printed so far.

use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The JSON lines read so far; a line that is not JSON is kept apart ([`JsonLines::not_json`]).
#[derive(Clone, Default)]
pub struct JsonLines {
    lines: Arc<Mutex<Vec<Value>>>,
    not_json: Arc<Mutex<Vec<String>>>,
}

impl JsonLines {
    /// Read `from` line by line on a thread until it closes.
    pub fn follow(from: impl Read + Send + 'static) -> JsonLines {
        let out = JsonLines::default();
        let sink = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(from).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => sink.lines.lock().expect("lines").push(v),
                    Err(_) => sink.not_json.lock().expect("not json").push(line),
                }
            }
        });
        out
    }

    /// The lines so far.
    pub fn snapshot(&self) -> Vec<Value> {
        self.lines.lock().expect("lines").clone()
    }

    /// Lines that were not JSON.
    pub fn not_json(&self) -> Vec<String> {
        self.not_json.lock().expect("not json").clone()
    }

    /// Wait until `f` holds over the lines so far, at most `within` (a deadline against
    /// hanging, not a speed check); on a timeout, panic with the lines and `context()`.
    pub fn wait_for(&self, what: &str, within: Duration, f: impl Fn(&[Value]) -> bool, context: impl Fn() -> String) {
        let deadline = Instant::now() + within;
        while !f(&self.lines.lock().expect("lines")) {
            if Instant::now() >= deadline {
                panic!("timed out waiting for {what}; output:\n{:#?}\n{}", self.snapshot(), context());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Collect `from` as text on a thread until it closes.
pub fn follow_text(from: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            sink.lock().expect("text").push_str(&(line + "\n"));
        }
    });
    text
}
