//! `triage watch --metrics`: the exposition checked by `promtool check metrics` and scraped
//! by a real Prometheus server on loopback (Debian's `prometheus` package has both; the
//! README's test command installs it).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::demo_copy;

const INSTALL: &str = "install it with `apt-get install prometheus` (Debian's package has prometheus and promtool)";

fn tool(name: &str) -> String {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| panic!("`{name}` is not on PATH; {INSTALL}")).display().to_string()
}

/// GET `path` from `addr` (HTTP/1.0, so the server closes the connection); the body.
fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn deadline(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn watch_metrics_pass_promtool_and_a_real_prometheus_scrapes_them() {
    let promtool = tool("promtool");
    let prometheus = tool("prometheus");
    let (tmp, store) = demo_copy();
    let state = tmp.path().join("state");
    let mut child = Command::new(env!("CARGO_BIN_EXE_triage"))
        .arg("--backend")
        .arg(format!("dir:{}", store.display()))
        .args(["watch", "--workflow", "42", "--interval", "0.5", "--settle", "0", "--agent", "rules"])
        .args(["--metrics", "127.0.0.1:0"])
        .env("TRIAGE_STATE_DIR", &state)
        .env("PATH", "/usr/bin:/bin")
        .env("CI", "true")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start triage watch");
    let err = BufReader::new(child.stderr.take().expect("stderr"));
    let watcher = Kill(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("triage: metrics on http://") {
                let _ = tx.send(url.trim_end_matches("/metrics").to_string());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).expect("the metrics address on stderr");

    // The batch is counted: 9 jobs, 6 applied by the rules.
    let mut body = String::new();
    deadline("the batch in the metrics", 60, || {
        body = get(&addr, "/metrics").1;
        body.contains("triage_batches_total 1")
    });
    let (head, _) = get(&addr, "/metrics");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let applied: u64 = body
        .lines()
        .filter(|l| l.starts_with("triage_jobs_triaged_total{") && l.contains(r#"outcome="applied""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(applied, 6, "{body}");
    assert!(body.contains(r#"triage_decision_results{action="retry",result="not_run_yet"} 4"#), "{body}");

    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check.stdin.take().expect("stdin").write_all(body.as_bytes()).expect("write");
    let out = check.wait_with_output().expect("promtool output");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus server scrapes it.
    let port = free_port();
    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: triage\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .expect("config");
    let prom = Kill(
        Command::new(&prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", tmp.path().join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let prom_addr = format!("127.0.0.1:{port}");
    let mut seen = 0.0;
    deadline("Prometheus to scrape the watcher", 90, || {
        if TcpStream::connect(&prom_addr).is_err() {
            return false;
        }
        let (_, body) = get(&prom_addr, "/api/v1/query?query=sum(triage_jobs_triaged_total)");
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        seen = v["data"]["result"][0]["value"][1].as_str().and_then(|s| s.parse().ok()).unwrap_or(0.0);
        seen > 0.0
    });
    assert_eq!(seen, 9.0, "Prometheus saw every triaged job");
    let (_, up) = get(&prom_addr, "/api/v1/query?query=up{job=\"triage\"}");
    assert!(up.contains(r#""1"]"#), "the target is up: {up}");
    drop(prom);
    drop(watcher);
}
