"""From history to a catalog entry: a scripted agent (through the real MCP path) decides a
failure the catalog does not know the same way each time, the retries work under the runner
(played by the test), `triage outcomes` says so per source, and `triage suggest` writes a
catalog entry that passes the catalog's checks and, loaded with `--catalog`, makes the catalog
alone decide that failure the next time. Nothing in suggest changes a job."""

import json
from pathlib import Path

from conftest import base_env, jobs, policy, snapshot, triage, triage_run
from test_agent_scripted import agent_cmd

WOBBLE = "frobnicator wobbled: quux level {n} on node{node:03d} (license server lic{n}.example.org:27000)\n"


def add_wobbling_jobs(store: Path, ids=(14, 15, 16)):
    """Three jobs that failed with the same failure the catalog has no verdict on."""
    path = store / "workflows/42/workflow.json"
    wf = json.loads(path.read_text())
    for i, job in enumerate(ids):
        err = f"job_stdio/job_wf42_j{job}_r1_a1.e"
        (store / "workflows/42" / err).write_text(
            f"starting solver run {job}\nloading mesh part {i}\n" + WOBBLE.format(n=7 + i * 5, node=30 + i)
        )
        wf["jobs"].append({
            "id": job, "name": f"solve_{job}", "command": "solver --part {i}", "status": "pending_failed",
            "attempt_id": 1, "resources": {"memory": "2g", "runtime": "PT1H", "num_cpus": 1},
            "attempts": [{"attempt_id": 1, "run_id": 1, "return_code": 42, "started_at": "2026-11-20T05:00:00Z",
                          "finished_at": "2026-11-20T05:01:00Z", "host": f"node{30 + i:03d}", "stderr": err}],
        })
    path.write_text(json.dumps(wf, indent=2))


def run_again(store: Path, ids, rc=0):
    """Play the runner: attempt 2 of each job finished with `rc`."""
    path = store / "workflows/42/workflow.json"
    wf = json.loads(path.read_text())
    for j in wf["jobs"]:
        if j["id"] in ids:
            assert j["status"] == "ready" and j["attempt_id"] == 2, j
            j["attempts"].append({"attempt_id": 2, "run_id": 1, "return_code": rc, "started_at": "2026-11-21T05:00:00Z",
                                  "finished_at": "2026-11-21T05:02:00Z", "host": "node050"})
            j["status"] = "completed" if rc == 0 else "pending_failed"
    path.write_text(json.dumps(wf, indent=2))


def test_a_failure_decided_the_same_way_each_time_becomes_a_catalog_entry(demo, home, workdir):
    env = base_env(home)
    side = workdir / "side"
    add_wobbling_jobs(demo)
    wobbling = [14, 15, 16]

    # The catalog alone has no verdict on them.
    dry = triage_run(demo, env, "--dry-run", "--agent", "rules")
    for j in dry.plan["jobs"]:
        if j["job_id"] in wobbling:
            assert j["catalog"]["verdict"] == "unknown" and j["outcome"] == "needs_review", j

    run = triage_run(demo, env, "--agent", "command", "--agent-cmd", agent_cmd("decisive", side),
                     "--policy", policy(workdir / "p.toml"))
    outcome = {j["job_id"]: j["outcome"] for j in run.plan["jobs"]}
    assert all(outcome[j] == "applied" for j in wobbling), (outcome, run.stderr)
    run_again(demo, wobbling)

    o = triage(env, "--backend", f"dir:{demo}", "outcomes", "--workflow", "42", "--json")
    assert o.returncode == 0, o.stderr
    report = json.loads(o.stdout)
    by_job = {d["job_id"]: d for d in report["decisions"]}
    for j in wobbling:
        assert by_job[j]["result"] == "worked" and by_job[j]["source"] == "agent: command", by_job[j]
        assert by_job[j]["catalog_verdict"] == "unknown"
    assert report["by_source"]["agent: command"]["worked"] == 3, report["by_source"]

    before = snapshot(demo)
    out = workdir / "suggested.toml"
    s = triage(env, "--backend", f"dir:{demo}", "suggest", "--workflow", "42", "--json", "--out", str(out))
    assert s.returncode == 0, s.stderr
    assert snapshot(demo) == before, "suggest changes nothing"
    sug = json.loads(s.stdout)
    entries = [e for e in sug["entries"] if set(e["job_ids"]) == set(wobbling)]
    assert len(entries) == 1, sug
    e = entries[0]
    assert (e["class"], e["action"], e["effective"]) == ("transient", "retry", True), e
    assert e["decided_by"] == {"agent: command": 3}, e
    assert all("frobnicator wobbled" in x for x in e["examples"]) and len(e["examples"]) == 3, e
    assert e["counter_examples"], "the workflow's other failures are its counter-examples"
    assert len(sug["entries"]) == 1, "nothing proposed from the catalog's own verdicts"

    # Loaded as a catalog, the next such failure is decided by the catalog alone, and the
    # workflow's other failures are not touched by it.
    new = workdir / "new.txt"
    new.write_text("loading mesh part 9\n" + WOBBLE.format(n=99, node=77))
    h = triage(env, "--catalog", str(out), "hints", str(new), "--json")
    assert h.returncode == 0, h.stderr
    hints = json.loads(h.stdout)
    assert hints["verdict"] == "transient" and hints["evidence"]["id"] == e["id"], hints
    other = workdir / "other.txt"
    other.write_text("Traceback (most recent call last):\nSyntaxError: invalid syntax\n")
    h = json.loads(triage(env, "--catalog", str(out), "hints", str(other), "--json").stdout)
    assert h["verdict"] == "permanent", h
