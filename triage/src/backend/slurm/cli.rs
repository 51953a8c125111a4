//! Running Slurm's client commands (`sacct`, `scontrol`, `sbatch`, `scancel`, `squeue`): the
//! only place the Slurm backend starts a process. Each runs with a timeout (the backend's
//! request timeout), with `-M CLUSTER` when a cluster is named, and with the environment
//! Slurm reads (`SLURM_CONF`, ...) passed through. A command that is not installed, times out
//! or fails comes back as a [`BackendError`] that names the command line and what to do.

use std::process::Stdio;
use std::time::Duration;

use crate::backend::BackendError;

/// How to reach the cluster.
#[derive(Debug, Clone)]
pub struct SlurmCli {
    /// `-M NAME`, when the spec names a cluster.
    pub cluster: Option<String>,
    pub timeout: Duration,
}

/// What a finished command printed.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.status == 0
    }
}

/// What a failed command prints when the controller was busy or briefly away: the command did
/// nothing, and the same command a moment later usually goes through.
const TRANSIENT: &[&str] = &[
    "Socket timed out",
    "Unable to contact slurm controller",
    "Connection refused",
    "Zero Bytes",
    "Job update not available right now",
    "DB index is being set",
];

impl SlurmCli {
    /// Run `program args...` (with `-M` first when a cluster is named) and return its output,
    /// whatever its exit status; `Err` only when it could not run or timed out.
    pub async fn run(&self, program: &str, args: &[&str]) -> Result<Output, BackendError> {
        let mut argv: Vec<String> = Vec::new();
        if let Some(c) = &self.cluster {
            argv.extend(["-M".to_string(), c.clone()]);
        }
        argv.extend(args.iter().map(|a| a.to_string()));
        let shown = format!("{program} {}", argv.join(" "));
        let started = std::time::Instant::now();
        let child = tokio::process::Command::new(program)
            .args(&argv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BackendError::Command {
                command: shown.clone(),
                why: if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "`{program}` is not on PATH: the slurm: backend drives the cluster through Slurm's client commands (sacct, scontrol, sbatch, scancel, squeue); run triage on a login node, or install the client (Debian: slurm-client) with SLURM_CONF naming the cluster's slurm.conf"
                    )
                } else {
                    e.to_string()
                },
                transient: false,
            })?;
        let out = tokio::time::timeout(self.timeout, child.wait_with_output()).await.map_err(|_| {
            BackendError::Command {
                command: shown.clone(),
                why: format!(
                    "no answer in {} s (is slurmctld/slurmdbd up? `scontrol ping`); the timeout is the policy's resilience.backend_timeout_secs",
                    self.timeout.as_secs()
                ),
                transient: true,
            }
        })?;
        let out =
            out.map_err(|e| BackendError::Command { command: shown.clone(), why: e.to_string(), transient: true })?;
        tracing::debug!(
            command = %shown,
            status = out.status.code().unwrap_or(-1),
            bytes = out.stdout.len(),
            ms = started.elapsed().as_millis() as u64,
            "slurm command"
        );
        Ok(Output {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// [`SlurmCli::check`] of a command that may be sent again (`scontrol release`: releasing a
    /// released job changes nothing), sent again while it fails in a way that passes ([`TRANSIENT`]:
    /// the controller busy or briefly away, such as "the DB index is being set" right after many
    /// jobs were released), a few times over about 8 s. A job left held costs a whole
    /// triage run (recovery releases it then); a few seconds here usually save that.
    pub async fn check_retrying(&self, program: &str, args: &[&str]) -> Result<Output, BackendError> {
        use backon::Retryable;
        let schedule = backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(4))
            .with_max_times(4)
            .with_jitter();
        (|| self.check(program, args))
            .retry(schedule)
            .sleep(tokio::time::sleep)
            .when(BackendError::is_transient)
            .notify(|e: &BackendError, d: Duration| tracing::info!("{program} {}: {e}; again in {d:?}", args.join(" ")))
            .await
    }

    /// [`SlurmCli::run`], and an error unless it exited 0 (or printed an error on stderr that
    /// Slurm reports with status 0, such as `scontrol write batch_script`'s).
    pub async fn check(&self, program: &str, args: &[&str]) -> Result<Output, BackendError> {
        let out = self.run(program, args).await?;
        // `scontrol write batch_script` and `scancel -v` report failures with status 0.
        let reported = out.stderr.lines().any(|l| l.contains("error:")) || out.stdout.contains("retrieval failed");
        if !out.ok() || reported {
            let shown = format!("{program} {}", args.join(" "));
            let text = format!("{}{}", out.stderr.trim(), out.stdout.trim());
            let transient = TRANSIENT.iter().any(|t| text.contains(t));
            return Err(BackendError::Command {
                command: shown,
                why: format!("exit status {}: {}", out.status, text.lines().last().unwrap_or("no message")),
                transient,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `scontrol` that fails like a busy controller `fails` times, then succeeds;
    /// it counts its calls in `calls`.
    fn flaky(dir: &std::path::Path, fails: u32, message: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("scontrol");
        let calls = dir.join("calls");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\nif [ $n -le {fails} ]; then echo 'scontrol: error: {message}' >&2; exit 1; fi\nexit 0\n",
                c = calls.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    fn calls(dir: &std::path::Path) -> u32 {
        std::fs::read_to_string(dir.join("calls")).unwrap().trim().parse().unwrap()
    }

    #[tokio::test]
    async fn a_release_refused_by_a_busy_controller_is_sent_again() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = SlurmCli { cluster: None, timeout: Duration::from_secs(10) };
        let busy = "Job update not available right now, the DB index is being set, try again later for JobId=12";
        let prog = flaky(tmp.path(), 2, busy);
        let out = cli.check_retrying(prog.to_str().unwrap(), &["release", "12"]).await;
        assert!(out.is_ok(), "{out:?}");
        assert_eq!(calls(tmp.path()), 3, "two refusals, then the release went through");
    }

    #[tokio::test]
    async fn a_release_refused_for_good_is_not_sent_again() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = SlurmCli { cluster: None, timeout: Duration::from_secs(10) };
        let prog = flaky(tmp.path(), 9, "Invalid job id specified");
        let out = cli.check_retrying(prog.to_str().unwrap(), &["release", "12"]).await;
        assert!(matches!(out, Err(BackendError::Command { transient: false, .. })), "{out:?}");
        assert_eq!(calls(tmp.path()), 1, "a permanent refusal is reported at once");
    }
}
