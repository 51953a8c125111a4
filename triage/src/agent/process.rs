//! Running an agent process: its own process group, output captured to files, a timeout that
//! kills the whole group (an agent CLI starts MCP servers and tools of its own; none may be
//! left behind).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};

use super::clis::Invocation;
use nix::unistd::Pid;

/// How an agent process ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    /// It exited with this status (`None`: killed by a signal).
    Exited(Option<i32>),
    /// It ran past the timeout and its process group was killed.
    TimedOut,
    /// Triage itself got this signal (Ctrl-C, a CI runner's SIGTERM) while the agent ran;
    /// the agent's process group was killed, and the run must stop.
    Interrupted(Signal),
}

/// A finished agent process.
#[derive(Debug, Clone)]
pub struct Finished {
    pub exit: Exit,
    pub elapsed: Duration,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

impl Finished {
    /// The captured stdout, lossily decoded, at most `max` bytes from its end.
    pub fn stdout_text(&self, max: usize) -> String {
        read_end(&self.stdout, max)
    }

    pub fn stderr_text(&self, max: usize) -> String {
        read_end(&self.stderr, max)
    }
}

fn read_end(path: &Path, max: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = bytes.len().saturating_sub(max);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Spawn `inv` (stdin from its file, or /dev/null), stdout and stderr into
/// `out_dir/<name>.stdout|.stderr`, and wait up to `timeout`.
pub async fn run(inv: &Invocation, out_dir: &Path, name: &str, timeout: Duration) -> std::io::Result<Finished> {
    std::fs::create_dir_all(out_dir)?;
    let stdout = out_dir.join(format!("{name}.stdout"));
    let stderr = out_dir.join(format!("{name}.stderr"));
    let mut cmd = tokio::process::Command::new(&inv.program);
    if let Some(dir) = &inv.cwd {
        cmd.current_dir(dir);
    }
    cmd.args(&inv.args)
        .envs(inv.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(match inv.stdin.as_deref() {
            Some(p) => Stdio::from(std::fs::File::open(p)?),
            None => Stdio::null(),
        })
        .stdout(Stdio::from(std::fs::File::create(&stdout)?))
        .stderr(Stdio::from(std::fs::File::create(&stderr)?))
        .process_group(0)
        .kill_on_drop(true);
    // The agent has its own process group, so a Ctrl-C in the terminal (or a CI runner's
    // SIGTERM to triage) does not reach it: triage catches those while the agent runs, kills
    // the agent's whole group, and exits, rather than leave the agent and its MCP server behind.
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let exit = tokio::select! {
        status = child.wait() => {
            let status = status?;
            // The agent is done; anything it left running in its group goes too.
            if let Some(pg) = pgid {
                let _ = killpg(pg, Signal::SIGKILL);
            }
            Exit::Exited(status.code())
        }
        _ = tokio::time::sleep(timeout) => {
            kill_group(pgid).await;
            let _ = child.wait().await;
            Exit::TimedOut
        }
        signo = async {
            tokio::select! {
                _ = interrupt.recv() => Signal::SIGINT,
                _ = terminate.recv() => Signal::SIGTERM,
                _ = hangup.recv() => Signal::SIGHUP,
            }
        } => {
            kill_group(pgid).await;
            let _ = child.wait().await;
            Exit::Interrupted(signo)
        }
    };
    Ok(Finished { exit, elapsed: started.elapsed(), stdout, stderr })
}

/// SIGTERM to the agent's process group, then SIGKILL half a second later.
async fn kill_group(pgid: Option<Pid>) {
    if let Some(pg) = pgid {
        let _ = killpg(pg, Signal::SIGTERM);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _ = killpg(pg, Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, env: Vec<(String, String)>) -> Invocation {
        Invocation { program: "sh".into(), args: vec!["-c".into(), script.into()], env, stdin: None, cwd: None }
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let tmp = tempfile::tempdir().unwrap();
        let pidfile = tmp.path().join("grandchild.pid");
        // The agent starts a grandchild that would outlive it, then hangs.
        let script = format!("sleep 300 & echo $! > {}; sleep 300", pidfile.display());
        let f = run(&sh(&script, vec![]), tmp.path(), "agent", Duration::from_millis(700)).await.unwrap();
        assert_eq!(f.exit, Exit::TimedOut);
        assert!(f.elapsed < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // Signal 0 probes for existence: the grandchild must be gone (or a zombie being reaped).
        let alive = nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ");
        assert!(!alive, "grandchild {pid} survived the timeout");
    }

    #[tokio::test]
    async fn output_is_captured_to_files() {
        let tmp = tempfile::tempdir().unwrap();
        let f = run(
            &sh("echo out; echo err >&2; exit $X", vec![("X".into(), "3".into())]),
            tmp.path(),
            "a",
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(f.exit, Exit::Exited(Some(3)));
        assert_eq!(f.stdout_text(100), "out\n");
        assert_eq!(f.stderr_text(100), "err\n");
    }
}
