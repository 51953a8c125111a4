"""A scripted MCP agent through `--agent command` over a real Slurm 22.05 cluster: the agent
lists the failure groups of a job array through a propose-only triage-mcp and classifies them;
triage validates and applies; Slurm reruns what was retried (checked with sacct)."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PYTHON, TRIAGE, Run, base_env

HERE = Path(__file__).resolve().parent
AGENT = HERE / "scripted_agent.py"

SCRIPT = """#!/bin/bash
#SBATCH --job-name=agent-arr
#SBATCH --array=1-5
#SBATCH --mem=100M
#SBATCH --output=%x-%A_%a.out
#SBATCH --error=%x-%A_%a.err
case $SLURM_ARRAY_TASK_ID in
  1) echo fine ;;
  2|3) if [ -f flaky-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID ]; then echo again; exit 0; fi
     touch flaky-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID
     python3 -c 'raise ConnectionResetError(104, "Connection reset by peer")' ;;
  4) python3 -c 'import module_that_is_missing' ;;
  5) echo "the frobnicator gave up" >&2; exit 3 ;;
esac
"""


def sh(*args):
    return subprocess.run(args, capture_output=True, text=True)


def rows(job):
    out = sh("sacct", "-D", "-P", "-n", "-X", "-j", job, "-o", "JobID,State,JobName,WorkDir").stdout
    return [l.split("|") for l in out.splitlines() if l.count("|") >= 3]


def wait_ended(job, n):
    deadline = time.monotonic() + 180
    while True:
        r = rows(job)
        last = {f[0]: f for f in r}
        if len(r) >= n and not any(f[1] in ("PENDING", "RUNNING", "REQUEUED", "COMPLETING") or f[2] == "allocation" or not f[3] for f in last.values()):
            return r
        assert time.monotonic() < deadline, r
        time.sleep(0.7)


def test_a_scripted_agent_triages_a_slurm_array(workdir, home):
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or "UP" not in sh("scontrol", "ping").stdout:
        pytest.fail("no Slurm cluster: start one with `eval \"$(bash tests/slurm/cluster.sh start ~/.cache/triage/slurm)\"` (the README's test command does)")
    jobs = workdir / "jobs"
    jobs.mkdir()
    (jobs / "arr.sh").write_text(SCRIPT)
    job = sh("sbatch", "--parsable", "-D", str(jobs), str(jobs / "arr.sh")).stdout.strip()
    assert job.isdigit(), job
    wait_ended(job, 5)
    env = base_env(home, SLURM_CONF=conf)
    side = workdir / "side"
    cmd = [str(TRIAGE), "--backend", "slurm:", "run", "--workflow", job, "--json", "--agent", "command",
           "--agent-cmd", f"'{PYTHON}' '{AGENT}' honest '{side}'"]
    t0 = time.monotonic()
    run = Run(subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL), time.monotonic() - t0)
    assert run.plan is not None, run
    assert run.plan["agent"] == "command" and run.plan["backend"] == "slurm:", run
    got = {j["job_id"]: (j["proposed"] or {}).get("action") for j in run.plan["jobs"]}
    assert got == {2: "retry", 3: "retry", 4: "fail", 5: None}, run
    assert {j["job_id"]: j["outcome"] for j in run.plan["jobs"]} == {2: "applied", 3: "applied", 4: "applied", 5: "needs_review"}, run
    assert all(j["proposed"]["authority"] == "agent" for j in run.plan["jobs"] if j["proposed"]), run
    assert run.rc == 2, run
    final = wait_ended(job, 7)
    for task in ("2", "3"):
        assert [f[1] for f in final if f[0] == f"{job}_{task}"] == ["REQUEUED", "COMPLETED"], final
    assert [f[1] for f in final if f[0] == f"{job}_4"] == ["FAILED"], final
