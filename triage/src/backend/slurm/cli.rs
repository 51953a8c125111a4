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

    /// [`SlurmCli::run`], and an error unless it exited 0 (or printed an error on stderr that
    /// Slurm reports with status 0, such as `scontrol write batch_script`'s).
    pub async fn check(&self, program: &str, args: &[&str]) -> Result<Output, BackendError> {
        let out = self.run(program, args).await?;
        // `scontrol write batch_script` and `scancel -v` report failures with status 0.
        let reported = out.stderr.lines().any(|l| l.contains("error:")) || out.stdout.contains("retrieval failed");
        if !out.ok() || reported {
            let shown = format!("{program} {}", args.join(" "));
            let text = format!("{}{}", out.stderr.trim(), out.stdout.trim());
            let transient =
                ["Socket timed out", "Unable to contact slurm controller", "Connection refused", "Zero Bytes"]
                    .iter()
                    .any(|t| text.contains(t));
            return Err(BackendError::Command {
                command: shown,
                why: format!("exit status {}: {}", out.status, text.lines().last().unwrap_or("no message")),
                transient,
            });
        }
        Ok(out)
    }
}
