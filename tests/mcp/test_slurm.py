"""triage-mcp over a real Slurm 22.05 cluster (`tests/slurm/cluster.sh start ROOT`; the README's
test command starts one), driven by the official Python MCP SDK: an array's tasks fail for real,
the four tools list, read, explain and classify them, and the effects are checked with sacct."""

import json
import os
import subprocess
import time

import pytest

from conftest import run, stdio_session, structured, text_of

SCRIPT = """#!/bin/bash
#SBATCH --job-name=mcp-arr
#SBATCH --array=1-4
#SBATCH --mem=100M
#SBATCH --output=%x-%A_%a.out
#SBATCH --error=%x-%A_%a.err
case $SLURM_ARRAY_TASK_ID in
  1) echo fine ;;
  2) if [ -f flaky-$SLURM_ARRAY_JOB_ID ]; then echo again; exit 0; fi
     touch flaky-$SLURM_ARRAY_JOB_ID
     python3 -c 'raise ConnectionResetError(104, "Connection reset by peer")' ;;
  3) python3 -c 'def broken(:' ;;
  4) echo "the frobnicator gave up" >&2; exit 3 ;;
esac
"""


def sh(*args):
    return subprocess.run(args, capture_output=True, text=True)


@pytest.fixture
def cluster():
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or not os.path.isfile(conf) or "UP" not in sh("scontrol", "ping").stdout:
        pytest.fail("no Slurm cluster: start one with `eval \"$(bash tests/slurm/cluster.sh start ~/.cache/triage/slurm)\"` "
                    "(the README's test command does), or set SLURM_CONF to a cluster you may submit jobs to")


def wait_ended(job, rows):
    deadline = time.monotonic() + 180
    while True:
        out = sh("sacct", "-D", "-P", "-n", "-X", "-j", job, "-o", "JobID,State,JobName,WorkDir").stdout
        lines = [l.split("|") for l in out.splitlines() if l.count("|") >= 3]
        last = {f[0]: f for f in lines}
        busy = any(f[1] in ("PENDING", "RUNNING", "REQUEUED", "COMPLETING") or f[2] == "allocation" or not f[3] for f in last.values())
        if len(lines) >= rows and not busy:
            return lines
        assert time.monotonic() < deadline, out
        time.sleep(0.7)


def test_the_four_tools_over_slurm(cluster, tmp_path):
    (tmp_path / "arr.sh").write_text(SCRIPT)
    job = sh("sbatch", "--parsable", "-D", str(tmp_path), str(tmp_path / "arr.sh")).stdout.strip()
    assert job.isdigit(), job
    wait_ended(job, 4)
    wf = int(job)
    env = {"TRIAGE_STATE_DIR": str(tmp_path / "state")}

    async def go():
        async with stdio_session("--backend", "slurm:", env=env) as s:
            data = structured(await s.call_tool("list_pending_failed_jobs", {"workflow_id": wf}))
            assert sorted(i for g in data["groups"] for i in g["job_ids"]) == [2, 3, 4], data
            syntax = next(g for g in data["groups"] if 3 in g["job_ids"])
            assert syntax["hints"]["verdict"] == "permanent" and "SyntaxError" in syntax["representative"]["stderr_tail"]

            t = structured(await s.call_tool("tail_job_stderr", {"workflow_id": wf, "job_id": 2}))
            assert "Connection reset by peer" in t["text"] and t["path"].endswith(f"mcp-arr-{job}_2.err"), t
            h = structured(await s.call_tool("get_pattern_hints", {"workflow_id": wf, "job_id": 3}))
            assert h["verdict"] == "permanent", h

            dry = structured(await s.call_tool("classify_and_resolve_failures", {
                "workflow_id": wf, "classifications": [{"job_id": 3, "action": "retry", "reason": "try again"}]}))
            assert dry["results"][0]["validation"]["status"] == "conflict" and dry["results"][0]["outcome"] == "needs_review"

            applied = structured(await s.call_tool("classify_and_resolve_failures", {
                "workflow_id": wf, "dry_run": False, "classifications": [
                    {"job_id": 2, "action": "retry", "reason": "connection reset by the peer mid-transfer"},
                    {"job_id": 3, "action": "fail", "reason": "a syntax error in the job"}]}))
            outcomes = {r["job_id"]: r["outcome"] for r in applied["results"]}
            assert outcomes == {2: "applied", 3: "applied"}, text_of(applied) if hasattr(applied, "content") else applied

    run(go())
    rows = wait_ended(job, 5)
    task2 = [f for f in rows if f[0] == f"{job}_2"]
    assert [f[1] for f in task2] == ["REQUEUED", "COMPLETED"], rows
    assert len([f for f in rows if f[0] == f"{job}_3"]) == 1, "a failed task is not rerun"
    ledger = [json.loads(l) for l in (tmp_path / "state/slurm/triage/ledger.jsonl").read_text().splitlines()]
    begins = [e for e in ledger if e["entry"] == "begin"]
    assert sorted((e["job_id"], e["action"]) for e in begins) == [(2, "retry"), (3, "fail")]
    assert all(e["audit"]["who"].startswith("triage-mcp") for e in begins), begins
