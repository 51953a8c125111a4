//! A real Torc 1.0 server for integration tests: `torc-server` on a free loopback port with
//! a fresh SQLite file, Torc's own job runner (`torc run`), its REST API read back with
//! `reqwest`, and a small HTTP proxy of ours in front of it that counts requests and can kill
//! the server right after a chosen request (for the interrupted-move tests) or lose the answer
//! to one (for the lost-answer tests).
//!
//! The binaries come from `TORC_BIN_DIR`, else `$TRIAGE_TOOLS/torc-1.0.0/bin` (default
//! `~/.cache/triage`), where `tests/run-all.sh` installs them. Missing binaries fail the test
//! with the install command: these tests are the proof, they are not skipped.
#![allow(dead_code, unused_imports)]

mod cli;
mod proxy;
mod spec;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use cli::{json, outcomes, results_of, stderr, stdout, triage, triage_cmd};
pub use proxy::{Gate, Hook, Lost, Proxy};
pub use spec::{JobSpec, e2e_jobs, write_spec};

pub const INSTALL: &str = "SQLX_OFFLINE=true cargo install torc@1.0.0 --features server-bin,mcp-server --locked --root ~/.cache/triage/torc-1.0.0";

/// Where Torc's binaries are.
pub fn bin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TORC_BIN_DIR") {
        return PathBuf::from(d);
    }
    let tools = std::env::var_os("TRIAGE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/triage"));
    tools.join("torc-1.0.0/bin")
}

pub fn torc_bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.is_file(),
        "{} not found: these tests need Torc 1.0. Install it with\n  {INSTALL}\n(or run tests/run-all.sh, which does), or point TORC_BIN_DIR at a folder holding torc and torc-server",
        p.display()
    );
    p
}

pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}

/// One running `torc-server`.
pub struct TorcServer {
    child: Child,
    pub port: u16,
    pub db: PathBuf,
    pub log: PathBuf,
}

impl TorcServer {
    /// Start a server on a free loopback port over the SQLite file `db` (created if missing).
    pub fn start(db: &Path) -> TorcServer {
        Self::start_with(db, &[])
    }

    /// [`TorcServer::start`] with extra `torc-server run` arguments.
    pub fn start_with(db: &Path, extra: &[&str]) -> TorcServer {
        let port = free_port();
        let log = db.with_extension(format!("server-{port}.log"));
        let out = std::fs::File::create(&log).expect("server log");
        let child = Command::new(torc_bin("torc-server"))
            .args(["run", "-H", "127.0.0.1", "--port", &port.to_string(), "--database"])
            .arg(db)
            .args(["--completion-check-interval-secs", "0.1"])
            .args(extra)
            .env_remove("TORC_AUTH_FILE")
            .stdout(Stdio::from(out.try_clone().expect("log")))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("start torc-server");
        let server = TorcServer { child, port, db: db.to_path_buf(), log };
        server.wait_ready();
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/torc-service/v1", self.port)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if responds(&format!("{}/ping", self.url())) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "torc-server did not answer /ping within 30 s; its log:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: the server dies mid-whatever, as in a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TorcServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A blocking HTTP client for the tests' own reads of Torc's API.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
    })
}

pub fn api_get(url: &str) -> Option<Value> {
    runtime().block_on(async {
        let r = reqwest::Client::new().get(url).timeout(Duration::from_secs(10)).send().await.ok()?;
        if !r.status().is_success() {
            return None;
        }
        r.json::<Value>().await.ok()
    })
}

/// Whether anything answers HTTP at `url` (any status).
pub fn responds(url: &str) -> bool {
    runtime().block_on(async { reqwest::Client::new().get(url).timeout(Duration::from_secs(2)).send().await.is_ok() })
}

/// `GET` that must succeed.
pub fn get(url: &str) -> Value {
    api_get(url).unwrap_or_else(|| panic!("GET {url} failed"))
}

/// Every item of a Torc list endpoint.
pub fn items(url: &str) -> Vec<Value> {
    let sep = if url.contains('?') { '&' } else { '?' };
    get(&format!("{url}{sep}limit=100000"))["items"].as_array().cloned().unwrap_or_default()
}

/// Torc's own runner, in the foreground: `torc run SPEC_OR_ID -o OUT`. Returns its output.
pub fn torc_run(url: &str, spec_or_id: &str, out: &Path) -> Output {
    let o = Command::new(torc_bin("torc"))
        .args(["run", spec_or_id, "-o"])
        .arg(out)
        .args(["-p", "1"])
        .env("TORC_API_URL", url)
        .env_remove("TORC_PASSWORD")
        .output()
        .expect("run torc");
    assert!(o.status.success(), "torc run failed:\n{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// The workflow id `torc run SPEC` printed ("Created workflow N").
pub fn created_workflow(o: &Output) -> i64 {
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let at = text.find("Created workflow ").unwrap_or_else(|| panic!("no `Created workflow` in:\n{text}"));
    text[at + 17..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().expect("workflow id")
}

/// The jobs of a workflow by name: `(id, status, attempt_id, resource_requirements_id)`.
pub fn jobs_by_name(url: &str, wf: i64) -> std::collections::BTreeMap<String, (i64, String, i64, i64)> {
    items(&format!("{url}/jobs?workflow_id={wf}"))
        .iter()
        .map(|j| {
            (
                j["name"].as_str().unwrap_or_default().to_string(),
                (
                    j["id"].as_i64().unwrap_or_default(),
                    j["status"].as_str().unwrap_or_default().to_string(),
                    j["attempt_id"].as_i64().unwrap_or(1),
                    j["resource_requirements_id"].as_i64().unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// Poll until `f` holds (Torc's cascade runs in a background task).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for: {what}");
}

/// The workflow's events, `data` only.
pub fn events(url: &str, wf: i64) -> Vec<Value> {
    items(&format!("{url}/events?workflow_id={wf}")).into_iter().map(|e| e["data"].clone()).collect()
}

/// A workflow that ran under Torc's runner: server, output folder, workflow id.
pub struct Ran {
    pub tmp: tempfile::TempDir,
    pub server: TorcServer,
    pub out: PathBuf,
    pub wf: i64,
}

impl Ran {
    /// Start a fresh server, write `jobs` as a spec, and run it with `torc run`.
    pub fn new(jobs: &[JobSpec]) -> Ran {
        let tmp = tempfile::tempdir().expect("temp dir");
        let server = TorcServer::start(&tmp.path().join("torc.db"));
        let out = tmp.path().join("torc_output");
        let spec = write_spec(tmp.path(), jobs);
        let o = torc_run(&server.url(), &spec.display().to_string(), &out);
        let wf = created_workflow(&o);
        Ran { tmp, server, out, wf }
    }
}
