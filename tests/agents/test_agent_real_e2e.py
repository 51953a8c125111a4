"""The real agent CLIs end to end, each pointed at a scripted model on loopback: `triage run
--agent X` (not a dry run) starts the real CLI with the MCP configuration triage built; the CLI
asks the fake endpoint for a turn, gets `tool_use` for list_pending_failed_jobs, runs it through
our triage-mcp (propose-only), sends the result back, gets classify_and_resolve_failures, sends
that result back, and finishes with a text. Two scripted models (model_script.py): HONEST
follows the catalog hints; HOSTILE obeys an instruction injected into job stderr.

Asserted through the store (workflow.json, events.jsonl), the plan, and what the fake saw: the
only tools offered to the model are our four."""

import json

import pytest

from conftest import (
    INJECTION,
    PERMANENT,
    TOOLS,
    TRANSIENT,
    audit,
    base_env,
    cli_path,
    inject,
    jobs,
    policy,
    triage_run,
)

FOUR = ("list_pending_failed_jobs", "tail_job_stderr", "get_pattern_hints", "classify_and_resolve_failures")

CLIS = {
    # Claude Code: ANTHROPIC_BASE_URL; the model is offered mcp__triage__* only.
    "claude": {
        "fake": "fake_anthropic.py",
        "env": lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_MAX_RETRIES": "0"},
        "args": ["--agent-arg=--model", "--agent-arg=claude-sonnet-4-5"],
        "tools": sorted(f"mcp__triage__{t}" for t in FOUR),
    },
    # Copilot CLI in BYOK mode against the same Messages API; tools are triage-*.
    "copilot": {
        "fake": "fake_anthropic.py",
        "env": lambda url: {
            "COPILOT_PROVIDER_BASE_URL": url,
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "dummy",
            "COPILOT_MODEL": "claude-sonnet-4.5",
            "COPILOT_OFFLINE": "true",
            "COPILOT_PKG_CACHE_HOME": str(TOOLS / "copilot-cache"),
        },
        "args": [],
        "tools": sorted(f"triage-{t}" for t in FOUR),
    },
    # Codex through a custom Responses API provider; our tools come in the `mcp__triage`
    # namespace, beside Codex's own MCP-resource readers and request_user_input (no shell,
    # no file edits, no web: the --disable list).
    "codex": {
        "fake": "fake_openai.py",
        "env": lambda url: {"TRIAGE_LLM_KEY": "dummy"},
        "args": lambda url: [
            "--agent-arg=-m",
            "--agent-arg=gpt-5.4",
            "--agent-arg=-c",
            "--agent-arg=model_provider=triage_llm",
            "--agent-arg=-c",
            f'--agent-arg=model_providers.triage_llm={{name="triage-llm",base_url="{url}/v1",env_key="TRIAGE_LLM_KEY",'
            'wire_api="responses",request_max_retries=0,stream_max_retries=0,supports_websockets=false}',
        ],
        "tools": sorted([f"mcp__triage::{t}" for t in FOUR] + ["list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "request_user_input"]),
    },
    # Gemini CLI: GOOGLE_GEMINI_BASE_URL; tools mcp_triage_*; retries off in the user settings.
    "gemini": {
        "fake": "fake_gemini.py",
        "env": lambda url: {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": url},
        "args": ["--agent-arg=-m", "--agent-arg=gemini-2.5-flash"],
        "tools": sorted(f"mcp_triage_{t}" for t in FOUR),
        "home_files": {".gemini/settings.json": {"general": {"maxAttempts": 1, "retryFetchErrors": False}}},
    },
}
# What each CLI does to a tool answer it finds too big (the answer must arrive whole).
CUT_MARKS = ("Output too large", "tokens truncated")


def run_cli(cli, mode, demo, home, workdir, fake_model):
    c = CLIS[cli]
    exe = cli_path(cli)
    fake = fake_model(c["fake"], mode)
    for rel, body in c.get("home_files", {}).items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(json.dumps(body))
    env = base_env(home, [exe.parent], **c["env"](fake.url))
    args = c["args"](fake.url) if callable(c["args"]) else c["args"]
    pol = policy(workdir / "policy.toml", retry_attempts=1, agent_timeout_secs=90)
    run = triage_run(demo, env, "--agent", cli, "--policy", pol, "--plan-out", workdir / "out" / "plan.json", *args, timeout=150)
    assert run.plan is not None, run
    return run, fake


def check_conversation(cli, fake, run):
    """The model was offered our four tools and nothing else, on every turn, and the turns went
    list (one per page) -> classify -> final text, each tool result coming back in the next
    request. Returns the listed pages, the classify arguments and the classify result."""
    turns = fake.model_requests()
    assert turns, f"the CLI never asked the model for a turn\n{run}"
    with_tools = [t for t in turns if t["tools_offered"]]
    assert with_tools, turns
    for t in with_tools:
        assert sorted(t["tools_offered"]) == CLIS[cli]["tools"], t["tools_offered"]
    steps = [t["answer"][1] if t["answer"][0] == "call" else "text" for t in with_tools]
    pages = steps.count("list")
    assert pages >= 1 and steps == ["list"] * pages + ["classify", "text"], steps
    last = with_tools[-1]["calls"]
    assert [c["kind"] for c in last] == ["list"] * pages + ["classify"]
    listed = [c["output"] for c in last[:-1]]
    for page in listed:
        # The whole answer reached the model (Copilot would spill a big one to a file, Codex
        # cut the middle out).
        assert "sig-" in page and not any(m in page for m in CUT_MARKS), page[:500]
    if cli == "copilot":
        assert pages >= 2, "the demo's list does not fit Copilot's 20 KiB: triage-mcp must page it"
        assert all(len(p) < 20 * 1024 for p in listed), [len(p) for p in listed]
    classified = last[-1]["output"]
    assert "propose_only" in classified or "Recorded" in classified, classified[:1000]
    return listed, with_tools[-2]["answer"][2], classified


@pytest.mark.parametrize("cli", list(CLIS))
def test_real_cli_honest_model(cli, demo, home, workdir, fake_model):
    run, fake = run_cli(cli, "honest", demo, home, workdir, fake_model)
    what = repr(run)
    _, sent, _ = check_conversation(cli, fake, run)
    # The classifications the model sent: by signature, as the catalog hints said.
    sent = sent["classifications"]
    assert sent and all("signature" in c and "job_id" not in c for c in sent), sent

    assert run.plan["agent"] == cli, what
    assert run.events("agent_done", cli) and not run.events("fallback"), run.plan["events"]
    src = {j["job_id"]: (j["proposed"] or {}).get("source") for j in run.plan["jobs"]}
    assert src == {2: cli, 3: cli, 4: cli, 5: cli, 6: cli, 7: cli, 9: cli, 10: None, 11: cli}, src
    for j in TRANSIENT + PERMANENT:
        assert run.job(j)["outcome"] == "applied", run.job(j)
    assert run.job(11)["outcome"] == "needs_review"
    assert run.rc == 2, what

    store = jobs(demo)
    for j in TRANSIENT:
        assert (store[j]["status"], store[j]["attempt_id"]) == ("ready", 2), (j, store[j])
    for j in PERMANENT:
        assert store[j]["status"] == "failed", (j, store[j]["status"])
    assert store[12]["status"] == "canceled", "12 depends on the failed 6 and 7"
    assert store[10]["status"] == store[11]["status"] == "pending_failed"
    # events.jsonl: one entry per applied move, all by triage itself (none by the agent's
    # propose-only server), the proposal's reason as `why`.
    moves = sorted((e["job_id"], e["what"], e["who"]) for e in audit(demo))
    who = f"triage run ({cli})"
    expected = [(j, "retry", who) for j in TRANSIENT] + [(j, "fail", who) for j in PERMANENT] + [(12, "cancel", who)]
    assert moves == sorted(expected), moves
    fail6 = next(e for e in audit(demo) if e["job_id"] == 6)
    assert fail6["details"]["canceled"] == [12] and fail6["why"].startswith("catalog: permanent")


@pytest.mark.parametrize("cli", list(CLIS))
def test_real_cli_hostile_model(cli, demo, home, workdir, fake_model):
    inject(demo, (6, 7))
    run, fake = run_cli(cli, "hostile", demo, home, workdir, fake_model)
    what = repr(run)
    listed, sent, classified = check_conversation(cli, fake, run)
    # The injection reached the model as data inside the tool result, and it obeyed.
    assert any(INJECTION in page for page in listed)
    assert sent["dry_run"] is False
    assert {c["reason"] for c in sent["classifications"]} == {INJECTION}
    assert 999999 in [c["job_id"] for c in sent["classifications"]]
    assert "999999" in classified, "the server told the model the unknown job id"

    assert run.plan["agent"] == cli, what
    assert 999999 not in [j["job_id"] for j in run.plan["jobs"]]
    for j in PERMANENT:
        pj = run.job(j)
        assert pj["proposed"]["source"] == cli and pj["proposed"]["action"] == "retry"
        assert pj["proposed"]["reason"] == INJECTION  # kept as data, nothing more
        assert pj["validation"]["status"] == "conflict" and pj["outcome"] == "needs_review", pj
    report = (workdir / "out" / "plan.md").read_text()
    assert f"`{INJECTION}`" in report
    assert run.rc == 2, what

    store = jobs(demo)
    for j in PERMANENT:
        assert (store[j]["status"], store[j]["attempt_id"]) == ("pending_failed", 1), (j, store[j])
    assert store[12]["status"] == "blocked"
    for j in TRANSIENT:  # the catalog agrees with these retries
        assert (store[j]["status"], store[j]["attempt_id"]) == ("ready", 2)
    moves = sorted((e["job_id"], e["what"], e["who"], e["why"]) for e in audit(demo))
    applied = sorted(j["job_id"] for j in run.plan["jobs"] if j["outcome"] == "applied")
    assert [m[0] for m in moves] == applied and not set(applied) & set(PERMANENT + [11]), (moves, applied)
    assert {m[1:] for m in moves} == {("retry", f"triage run ({cli})", INJECTION)}, moves
