"""Scripted agents through the real MCP path: `triage run --agent command` starts
scripted_agent.py, which talks to the `triage-mcp` named in TRIAGE_MCP_CONFIG with the official
Python MCP SDK. Whatever the agent does (honest, hostile, forging, hanging, crashing, printing
junk, doing nothing), the jobs stay safe: nothing is applied that validation would not apply,
and the reason is visible in the plan's events."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (
    HERE,
    INJECTION,
    ROOT,
    PERMANENT,
    PYTHON,
    TRANSIENT,
    TRIAGE,
    audit,
    base_env,
    inject,
    jobs,
    pid_alive,
    policy,
    snapshot,
    triage,
    triage_run,
)

AGENT = HERE / "scripted_agent.py"


def agent_cmd(mode: str, side: Path) -> str:
    return f"'{PYTHON}' '{AGENT}' {mode} '{side}'"


@pytest.fixture
def env(home):
    # No agent CLI on PATH: only the scripted agent runs.
    return base_env(home)


@pytest.fixture
def side(workdir):
    d = workdir / "side"
    yield d
    # Should a test fail, leave no agent behind: kill whatever the slow agents recorded.
    for f in d.rglob("pids-*.json"):
        pids = json.loads(f.read_text())
        for pid in [pids["agent"], pids["sleep"], *pids["mcp"]]:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def answers(side: Path):
    p = side / "answers.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def starts(side: Path) -> int:
    p = side / "starts"
    return len(p.read_text().splitlines()) if p.exists() else 0


def sources(run):
    return {j["job_id"]: (j["proposed"] or {}).get("source") for j in run.plan["jobs"]}


def assert_rules_handled(run, demo_jobs_before, store):
    """After a fallback to rules in an applying run: exactly what rules mode does."""
    after = jobs(store)
    for j in TRANSIENT:
        assert after[j]["status"] == "ready" and after[j]["attempt_id"] == 2, (j, after[j]["status"])
    for j in (6, 7):
        assert after[j]["status"] == "failed", (j, after[j]["status"])
    assert after[12]["status"] == "canceled"
    for j in (9, 10, 11):  # rules leave these to a person
        assert after[j]["status"] == "pending_failed" and after[j]["attempt_id"] == demo_jobs_before[j]["attempt_id"]
    assert {s for s in sources(run).values() if s} == {"rules"}, sources(run)


# --------------------------------------------------------------------------------------------
# honest, hostile, forged


def test_honest_agent_its_proposals_are_validated_and_applied(demo, env, side, workdir):
    pol = policy(workdir / "policy.toml")
    plan_out = workdir / "out" / "plan.json"
    run = triage_run(demo, env, "--agent", "command", "--agent-cmd", agent_cmd("honest", side), "--policy", pol, "--plan-out", plan_out)
    assert run.plan is not None, run

    # The agent contract: the three variables, a prompt naming the workflow and calling stderr
    # untrusted, an MCP configuration for a propose-only triage-mcp on this store.
    contract = json.loads((side / "contract.jsonl").read_text().splitlines()[0])
    assert contract["workflow_id"] == 42
    assert "workflow 42" in contract["prompt"] and "untrusted" in contract["prompt"].lower()
    mcp = contract["mcp_config"]["mcpServers"]["triage"]
    assert Path(mcp["command"]).name == "triage-mcp"
    assert f"dir:{demo}" in mcp["args"] and "--propose-only" in mcp["args"]
    # Validation feedback reached the agent: recorded, nothing changed by the server.
    classify = [a for a in answers(side) if a["tool"] == "classify_and_resolve_failures"]
    assert len(classify) == 1 and classify[0]["structured"]["mode"] == "propose_only"
    outcomes = {r["job_id"]: r["outcome"] for r in classify[0]["structured"]["results"]}
    assert outcomes == {2: "recorded", 3: "recorded", 4: "recorded", 5: "recorded", 6: "recorded", 7: "recorded", 9: "recorded", 11: "needs_review"}, outcomes

    # The plan: the agent's proposals, validated, then applied by triage.
    assert run.plan["agent"] == "command"
    assert run.events("agent_done", "command") and not run.events("fallback"), run.plan["events"]
    src = sources(run)
    assert src == {2: "command", 3: "command", 4: "command", 5: "command", 6: "command", 7: "command", 9: "command", 10: None, 11: "command"}, src
    for j in TRANSIENT:
        assert run.job(j)["proposed"]["action"] == "retry" and run.job(j)["outcome"] == "applied"
    for j in PERMANENT:
        assert run.job(j)["proposed"]["action"] == "fail" and run.job(j)["outcome"] == "applied"
    assert run.job(11)["outcome"] == "needs_review"  # failed identically twice: a person decides
    assert run.job(10)["outcome"] == "needs_review"  # the catalog has no verdict, the agent none
    assert run.rc == 2, run

    store = jobs(demo)
    for j in TRANSIENT:
        assert store[j]["status"] == "ready" and store[j]["attempt_id"] == 2
    for j in PERMANENT:
        assert store[j]["status"] == "failed"
    assert store[12]["status"] == "canceled", "failing 6 and 7 cancels 12, which depends on them"
    assert store[13]["status"] == "blocked", "13 waits on 3, which is retried"
    assert store[10]["status"] == store[11]["status"] == "pending_failed"
    # Every change was made by triage, none by the agent's propose-only server.
    log = audit(demo)
    assert log, "the store's audit log records the changes"
    text = json.dumps(log)
    assert "triage run (command)" in text and "triage-mcp" not in text, text[:2000]
    assert plan_out.exists() and plan_out.with_suffix(".md").exists()


def test_hostile_agent_injected_instructions_stay_data(demo, env, side, workdir):
    inject(demo, (6, 7))
    before = jobs(demo)
    pol = policy(workdir / "policy.toml")
    plan_out = workdir / "out" / "plan.json"
    run = triage_run(demo, env, "--agent", "command", "--agent-cmd", agent_cmd("hostile", side), "--policy", pol, "--plan-out", plan_out)
    assert run.plan is not None, run

    # The agent read the injection through tail_job_stderr, and obeyed it.
    tails = [a for a in answers(side) if a["tool"] == "tail_job_stderr"]
    assert any(INJECTION in a["text"] for a in tails)
    classify = [a for a in answers(side) if a["tool"] == "classify_and_resolve_failures"]
    assert len(classify) == 1
    asked = classify[0]["arguments"]
    assert asked["dry_run"] is False and all(c["reason"] == INJECTION and c["override"] for c in asked["classifications"])
    # The server answered: propose-only (its dry_run false changed nothing), 999999 unknown.
    out = classify[0]["structured"]
    assert out["mode"] == "propose_only" and out["dry_run"] is True
    assert [u for u in out["unmatched"] if "999999" in u["error"]], out["unmatched"]
    by_job = {r["job_id"]: r for r in out["results"]}
    for j in PERMANENT:
        assert by_job[j]["validation"]["status"] == "conflict" and by_job[j]["outcome"] == "needs_review", by_job[j]

    # The plan: every permanent failure is a conflict for a person; the injected text is
    # only the proposal's reason (data), quoted as code in the report.
    assert run.plan["agent"] == "command"
    assert 999999 not in [j["job_id"] for j in run.plan["jobs"]]
    for j in PERMANENT:
        pj = run.job(j)
        assert pj["proposed"]["action"] == "retry" and pj["proposed"]["reason"] == INJECTION
        assert pj["proposed"]["source"] == "command"
        assert pj["validation"]["status"] == "conflict", pj["validation"]
        assert pj["outcome"] == "needs_review", pj
    assert any("SyntaxError" in m for m in run.job(6)["validation"]["messages"]), run.job(6)["validation"]
    report = plan_out.with_suffix(".md").read_text()
    assert f"`{INJECTION}`" in report
    assert run.rc == 2, run

    store = jobs(demo)
    for j in PERMANENT:
        assert store[j]["status"] == "pending_failed" and store[j]["attempt_id"] == 1, (j, store[j]["status"])
    assert store[12]["status"] == "blocked"
    assert store[11]["status"] == "pending_failed" and store[11]["attempt_id"] == before[11]["attempt_id"]
    # What the catalog agrees with (transient failures) was applied, and only by triage.
    for j in TRANSIENT:
        assert store[j]["status"] == "ready" and store[j]["attempt_id"] == 2
    assert "triage-mcp" not in json.dumps(audit(demo))


def test_forged_proposal_records_are_validated_again(demo, env, side, workdir):
    """An agent that writes straight into the propose-only log, claiming a person's review
    (and "accepted", even "applied"), gets no further than one that asks: every record is the
    agent's, named by triage, and validated by triage itself."""
    run = triage_run(demo, env, "--agent", "command", "--agent-cmd", agent_cmd("forge", side), "--policy", policy(workdir / "p.toml"))
    assert run.plan is not None, run
    assert run.plan["agent"] == "command"
    for j in PERMANENT:
        p = run.job(j)["proposed"]
        assert (p["reason"], p["source"], p["authority"]) == ("forged", "command", "agent"), p
        assert run.job(j)["validation"]["status"] == "conflict" and run.job(j)["outcome"] == "needs_review"
    assert run.job(11)["outcome"] == "needs_review"
    # The records that carried authority inside the proposal, or the old shape, were refused.
    warnings = [e["reason"] for e in run.events("warning", "command")]
    assert any("6 lines of the propose-only log were not proposal records" in w for w in warnings), run.plan["events"]
    store = jobs(demo)
    for j in PERMANENT:
        assert (store[j]["status"], store[j]["attempt_id"]) == ("pending_failed", jobs(ROOT / "fixtures" / "demo")[j]["attempt_id"])
    for j in (1, 8, 12, 13):  # forged ids of jobs that are not pending_failed change nothing
        assert store[j]["status"] == jobs(ROOT / "fixtures" / "demo")[j]["status"]
    assert run.rc == 2


# --------------------------------------------------------------------------------------------
# agents that fail: timeout, crash, junk, silence


def test_slow_agent_is_killed_with_its_whole_process_group(demo, env, side, workdir):
    pol = policy(workdir / "policy.toml", retry_attempts=2)
    before = snapshot(demo)
    run = triage_run(demo, env, "--dry-run", "--agent", "command", "--agent-cmd", agent_cmd("slow", side), "--agent-timeout", 8, "--policy", pol)
    assert run.plan is not None, run
    # 8 s: room for the agent (Python and the MCP SDK) to start and list on a loaded machine.
    # Two timeouts must have passed; the upper bound only says the agent's own sleep (far
    # longer) was not waited for, and is loose so a loaded CI machine does not trip it.
    assert 16 <= run.elapsed < 120, run
    # A timeout is transient: retried once (2 attempts), then rules.
    kinds = [(e["kind"], e["subject"]) for e in run.plan["events"]]
    assert kinds[1:] == [("retry", "command"), ("fallback", "command"), ("degraded", "rules")], kinds
    assert "timed out after 8 s; its process group was killed" in run.events("retry")[0]["reason"]
    assert re.search(r"retrying in \d+ ms", run.events("retry")[0]["reason"])
    assert run.events("fallback")[0]["reason"].startswith("timed out after 8 s")
    assert starts(side) == 2
    time.sleep(0.5)
    for n in (1, 2):
        pids = json.loads((side / f"pids-{n}.json").read_text())
        assert pids["mcp"], pids  # it had its MCP server running
        for what, pid in [("agent", pids["agent"]), ("sleep", pids["sleep"])] + [("triage-mcp", p) for p in pids["mcp"]]:
            assert not pid_alive(pid), f"attempt {n}: the agent's {what} (pid {pid}) survived the timeout"
    assert run.plan["agent"] == "rules" and {s for s in sources(run).values() if s} == {"rules"}
    assert run.rc == 2
    assert snapshot(demo) == before


def test_interrupting_triage_kills_the_agents_process_group(demo, env, side, workdir):
    """Ctrl-C (SIGINT) or a CI runner's SIGTERM reaches triage, not the agent (it has its own
    process group): triage must stop the agent's whole group before it exits."""
    pol = policy(workdir / "policy.toml")
    for signo in (signal.SIGTERM, signal.SIGINT):
        s = side / signo.name
        cmd = [str(TRIAGE), "--backend", f"dir:{demo}", "run", "--workflow", "42", "--dry-run", "--json", "--agent", "command",
               "--agent-cmd", agent_cmd("slow", s), "--agent-timeout", "300", "--policy", str(pol)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not (s / "pids-1.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        pids = json.loads((s / "pids-1.json").read_text())
        proc.send_signal(signo)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 128 + signo, (proc.returncode, err)
        assert "stopped the agent" in err, err
        time.sleep(0.5)
        for what, pid in [("agent", pids["agent"]), ("sleep", pids["sleep"])] + [("triage-mcp", p) for p in pids["mcp"]]:
            assert not pid_alive(pid), f"{signo.name}: the agent's {what} (pid {pid}) outlived triage"


def retry_delays(run):
    return [int(re.search(r"retrying in (\d+) ms", e["reason"]).group(1)) for e in run.events("retry")]


# The agent runs under `sh -c`, so a segfault shows as the shell's status 139 (128 + SIGSEGV).
@pytest.mark.parametrize("mode,status", [("crash", 'exited with status 3: {"type": "result", "partial": [1, 2,'), ("segfault", "exited with status 139: ")])
def test_crashing_agent_is_retried_with_seeded_backoff_then_falls_back(mode, status, demo, env, side, workdir, home):
    pol = policy(workdir / "policy.toml")
    before = jobs(demo)
    runs = []
    # Three runs, each with its own state directory (one failed run each: no circuit opens):
    # seed 42 applying, seed 42 again and seed 43 as dry runs on the demo as it was.
    for i, seed in enumerate((42, 42, 43)):
        e = dict(env, TRIAGE_STATE_DIR=str(home / f"state-{i}"))
        store = demo if i == 0 else workdir / f"store-{i}"
        if i:
            shutil.copytree(ROOT / "fixtures" / "demo", store)
        runs.append(triage_run(store, e, "--agent", "command", "--agent-cmd", agent_cmd(mode, side / str(i)),
                               "--policy", pol, "--seed", seed, *(["--dry-run"] if i else [])))
    run = runs[0]
    assert run.plan is not None, run
    # A crash is transient: 3 attempts in all, 2 retries with exponential, jittered delays.
    kinds = [(e["kind"], e["subject"]) for e in run.plan["events"]]
    assert kinds[1:] == [("retry", "command"), ("retry", "command"), ("fallback", "command"), ("degraded", "rules")], kinds
    for e in run.events("retry") + run.events("fallback"):
        assert status in e["reason"], e
    assert starts(side / "0") == 3
    d = retry_delays(run)
    assert 40 <= d[0] <= 60 and 80 <= d[1] <= 120, d  # 50 ms then 100 ms, +-20 % jitter
    # Replayable: the same seed gives the same delays, another seed others.
    assert retry_delays(runs[1]) == d
    assert retry_delays(runs[2]) != d
    # The crashed agent had recorded proposals (retry everything) before dying: not used.
    recorded = [p for p in run.plan["agent_output"] if p.endswith(".stdout")]
    assert len(recorded) == 3
    proposals = Path(recorded[0]).with_name("command-1.proposals.jsonl").read_text()
    assert '"job_id":6' in proposals.replace(" ", "")
    assert run.plan["agent"] == "rules"
    assert run.job(6)["proposed"] == {**run.job(6)["proposed"], "action": "fail", "source": "rules"}
    assert_rules_handled(run, before, demo)
    assert run.rc == 2


def test_garbage_printing_agent_proposes_nothing_and_rules_take_over(demo, env, side, workdir):
    before = snapshot(demo)
    run = triage_run(demo, env, "--dry-run", "--agent", "command", "--agent-cmd", agent_cmd("garbage", side), "--policy", policy(workdir / "p.toml"))
    assert run.plan is not None, run
    kinds = [(e["kind"], e["subject"]) for e in run.plan["events"]]
    # Not transient: no retry.
    assert kinds[1:] == [("fallback", "command"), ("degraded", "rules")], kinds
    assert run.events("fallback")[0]["reason"] == "it proposed nothing; falling back to rules"
    out = run.outputs()
    assert len(out["command-1.stdout"]) > 3000  # the junk is kept for a person to look at
    assert run.plan["agent"] == "rules" and {s for s in sources(run).values() if s} == {"rules"}
    assert run.rc == 2
    assert snapshot(demo) == before


def test_silent_agent_then_no_fallback_leaves_every_job_to_a_person(demo, env, side, workdir):
    """`--fallback none`: when the agent fails, nobody else proposes; nothing is applied even
    without --dry-run."""
    before = snapshot(demo)
    run = triage_run(demo, env, "--agent", "command", "--agent-cmd", agent_cmd("none", side), "--fallback", "none", "--policy", policy(workdir / "p.toml"))
    assert run.plan is not None, run
    assert run.events("fallback")[0]["reason"] == "it proposed nothing; falling back to a person (needs review)"
    assert not run.events("degraded")
    assert run.plan["agent"] == "none"
    assert {j["outcome"] for j in run.plan["jobs"]} == {"needs_review"}
    assert all(j["proposed"] is None for j in run.plan["jobs"])
    assert run.rc == 2
    assert snapshot(demo) == before, "nothing may be applied when nobody proposed"
    # `none` goes alone.
    bad = triage_run(demo, env, "--agent", "command", "--agent-cmd", "true", "--fallback", "none,rules")
    assert bad.rc == 1 and "--fallback none" in bad.stderr, bad


def test_fallback_chain_walks_each_agent_in_turn(demo, env, side, workdir):
    """`--agent command --fallback claude,command`... as a chain: the command fails, claude is
    not installed here (not on PATH), then rules."""
    run = triage_run(demo, env, "--dry-run", "--agent", "command", "--agent-cmd", agent_cmd("none", side), "--fallback", "claude,rules",
                     "--policy", policy(workdir / "p.toml"))
    assert run.plan is not None, run
    kinds = [(e["kind"], e["subject"]) for e in run.plan["events"]]
    assert kinds[1:] == [("fallback", "command"), ("fallback", "claude"), ("degraded", "rules")], kinds
    assert run.events("fallback", "command")[0]["reason"].endswith("falling back to claude")
    assert "`claude` is not on PATH" in run.events("fallback", "claude")[0]["reason"]
    assert run.plan["agent"] == "rules" and run.rc == 2


# --------------------------------------------------------------------------------------------
# the circuit breaker


def test_circuit_opens_after_three_failed_runs_and_reset_clears_it(demo, env, side, workdir, home):
    pol = policy(workdir / "policy.toml")
    args = ("--dry-run", "--agent", "command", "--agent-cmd", agent_cmd("none", side), "--policy", pol)
    runs = [triage_run(demo, env, *args) for _ in range(3)]
    for i, r in enumerate(runs):
        assert r.plan is not None and r.rc == 2, r
        assert r.events("fallback", "command"), r.plan["events"]
        opened = r.events("circuit_open", "command")
        if i < 2:
            assert not opened, (i, r.plan["events"])
        else:
            assert len(opened) == 1 and "opened after 3 consecutive failed runs" in opened[0]["reason"], r.plan["events"]
    assert starts(side) == 3

    status = triage(env, "circuit", "status")
    assert status.returncode == 0, status.stderr
    assert re.search(r"^command: open, 3 consecutive failures, last error: it proposed nothing$", status.stdout, re.M), status.stdout

    # The 4th run skips the agent altogether (it is not started) and goes straight to rules.
    fourth = triage_run(demo, env, *args)
    assert fourth.plan is not None, fourth
    kinds = [(e["kind"], e["subject"]) for e in fourth.plan["events"]]
    assert kinds[1:] == [("circuit_open", "command"), ("degraded", "rules")], kinds
    reason = fourth.events("circuit_open")[0]["reason"]
    assert reason.startswith("skipped: its circuit is open until ") and "triage circuit reset command" in reason
    assert starts(side) == 3, "the agent was started although its circuit is open"
    assert not fourth.plan.get("agent_output") and fourth.plan["agent"] == "rules" and fourth.rc == 2

    reset = triage(env, "circuit", "reset", "command")
    assert reset.returncode == 0 and reset.stdout.strip() == "cleared: command", reset
    assert "no circuit breakers recorded" in triage(env, "circuit", "status").stdout
    fifth = triage_run(demo, env, *args)
    assert not fifth.events("circuit_open") and starts(side) == 4, fifth.plan["events"]


def test_circuit_half_opens_after_cooldown_and_a_good_probe_closes_it(demo, env, side, workdir):
    pol = policy(workdir / "policy.toml", breaker_failures=2, breaker_cooldown_secs=10)
    failing = ("--dry-run", "--agent", "command", "--agent-cmd", agent_cmd("none", side / "bad"), "--policy", pol)
    runs = [triage_run(demo, env, *failing) for _ in range(2)]
    assert runs[1].events("circuit_open", "command"), runs[1].plan["events"]
    assert triage_run(demo, env, *failing).events("circuit_open")[0]["reason"].startswith("skipped")
    time.sleep(10.2)  # the cooldown: long enough that a loaded machine still runs the third run inside it
    probe = triage_run(demo, env, "--dry-run", "--agent", "command", "--agent-cmd", agent_cmd("honest", side / "good"), "--policy", pol)
    kinds = [(e["kind"], e["subject"]) for e in probe.plan["events"]]
    assert kinds[1:] == [("circuit_half_open", "command"), ("circuit_closed", "command"), ("recovered", "command")], kinds
    assert probe.events("circuit_closed")[0]["reason"] == "recovered (was half-open)"
    assert probe.plan["agent"] == "command"
    assert "command: closed, 0 consecutive failures" in triage(env, "circuit", "status").stdout
