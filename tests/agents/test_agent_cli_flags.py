"""The four real agent CLIs accept the command line triage builds for them.

Each CLI is pointed at a closed loopback port (127.0.0.1:9) with dummy credentials and a fresh
HOME, with its own retries turned off where it has a knob, so it gets past its argument
parsing, starts, loads the MCP configuration, and then fails on the network. The run must show
that: the failure judged as a network failure (retried with backoff, as a transient one), then
a fallback to rules (degraded, announced), rules' proposals, and exit status 2 (the demo has
jobs that need a person). A CLI that rejected a flag would say so in its captured output
("unknown option", "unexpected argument", ...) and be judged an invalid request, not retried.
"""

import json

import pytest

from conftest import (
    FLAG_ERRORS,
    base_env,
    cli_path,
    cli_version,
    policy,
    snapshot,
    triage_run,
)

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens there

CASES = {
    # Claude Code: ANTHROPIC_BASE_URL is honoured; CLAUDE_CODE_MAX_RETRIES=0 (default 10 retries, 183 s).
    # A refused connection reads "API Error: Connection refused ... (ECONNREFUSED)" with
    # "api_error": "connection_failed" since 2.1.330 (2.1.197 said "Unable to connect to API").
    "claude": {
        "env": {"ANTHROPIC_BASE_URL": CLOSED, "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_MAX_RETRIES": "0"},
        "args": [],
        "attempts": 2,
        "reached": ("stdout", "Connection refused"),
    },
    # Copilot in BYOK mode, offline (no GitHub auth, telemetry or update checks). It retries a
    # refused connection 5 times over about 25 s with no knob to lower that, so triage makes a
    # single attempt here.
    "copilot": {
        "env": {
            "COPILOT_PROVIDER_BASE_URL": CLOSED,
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "dummy",
            "COPILOT_MODEL": "claude-sonnet-4.5",
            "COPILOT_OFFLINE": "true",
        },
        "args": [],
        "attempts": 1,
        "reached": ("stdout", "Could not connect to local model provider"),
    },
    # Codex ignores OPENAI_BASE_URL: a custom provider through -c overrides, retries off.
    "codex": {
        "env": {"TRIAGE_LLM_KEY": "dummy"},
        "args": [
            "--agent-arg=-m",
            "--agent-arg=gpt-5.4",
            "--agent-arg=-c",
            "--agent-arg=model_provider=triage_llm",
            "--agent-arg=-c",
            '--agent-arg=model_providers.triage_llm={name="triage-llm",base_url="http://127.0.0.1:9/v1",'
            'env_key="TRIAGE_LLM_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0,'
            "supports_websockets=false}",
        ],
        "attempts": 2,
        "reached": ("stdout", "Connection failed: error sending request"),
    },
    # Gemini: API key + base URL; its retries are settings only, so the fresh HOME's user
    # settings turn them off (triage's own system settings file leaves `general` alone).
    "gemini": {
        "env": {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": CLOSED},
        "args": ["--agent-arg=-m", "--agent-arg=gemini-2.5-flash"],
        "attempts": 2,
        "reached": ("stderr", "fetch failed"),
        "home_files": {".gemini/settings.json": {"general": {"maxAttempts": 1, "retryFetchErrors": False}}},
    },
}


def copilot_cache_env():
    """Copilot extracts 235 MB into its package cache on first run; share one across tests."""
    from conftest import TOOLS

    return {"COPILOT_PKG_CACHE_HOME": str(TOOLS / "copilot-cache")}


@pytest.mark.parametrize("cli", list(CASES))
def test_real_cli_accepts_triages_command_line_then_falls_back(cli, demo, home, workdir):
    case = CASES[cli]
    exe = cli_path(cli)
    version = cli_version(cli)
    for rel, body in case.get("home_files", {}).items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(json.dumps(body))
    env = base_env(home, [exe.parent], **case["env"], **(copilot_cache_env() if cli == "copilot" else {}))
    pol = policy(workdir / "policy.toml", retry_attempts=case["attempts"], agent_timeout_secs=55)
    before = snapshot(demo)

    run = triage_run(demo, env, "--dry-run", "--agent", cli, "--fallback", "rules", "--policy", pol, *case["args"], timeout=120)

    assert run.plan is not None, run
    what = f"{cli} {version}: {run}"
    assert run.elapsed < 60, what
    # Every captured output: no complaint about the command line, and the CLI got as far as
    # the network.
    outputs = run.outputs()
    names = sorted(outputs)
    expected = sorted(f"{cli}-{n}.{s}" for n in range(1, case["attempts"] + 1) for s in ("stdout", "stderr"))
    assert names == expected, what
    for name, text in outputs.items():
        for bad in FLAG_ERRORS:
            assert bad not in text, f"{name} says {bad!r}: triage's command line for {cli} {version} is wrong\n{text[-3000:]}"
    stream, marker = case["reached"]
    for n in range(1, case["attempts"] + 1):
        assert marker in outputs[f"{cli}-{n}.{stream}"], f"{cli}-{n}.{stream} lacks {marker!r}\n{outputs[f'{cli}-{n}.{stream}'][-3000:]}"
    if cli == "gemini":
        # Our settings file was read (it would be skipped below an insecure folder).
        assert "Skipping system settings" not in outputs["gemini-1.stderr"], outputs["gemini-1.stderr"][-2000:]
    if cli == "copilot":
        # The MCP configuration flag worked: our server connected with its four tools, no others.
        events = [json.loads(line) for line in outputs["copilot-1.stdout"].splitlines() if line.startswith("{")]
        loaded = [e["data"] for e in events if e.get("type") == "session.mcp_server_tools_loaded"]
        assert loaded == [{"serverName": "triage", "toolCount": 4}], loaded

    # The plan: judged a network failure, retried with backoff, then rules (degraded).
    kinds = [(e["kind"], e["subject"]) for e in run.plan["events"]]
    retries = [(k, s) for k, s in kinds if k == "retry"]
    assert retries == [("retry", cli)] * (case["attempts"] - 1), kinds
    fallback = run.events("fallback", cli)
    assert len(fallback) == 1, kinds
    reason = fallback[0]["reason"]
    assert reason.startswith("network or service unavailable:"), reason
    assert "invalid request" not in reason, reason
    assert reason.endswith("falling back to rules"), reason
    assert run.events("degraded", "rules"), kinds
    assert kinds.index(("fallback", cli)) < kinds.index(("degraded", "rules"))
    assert run.plan["agent"] == "rules"
    sources = {j["job_id"]: (j["proposed"] or {}).get("source") for j in run.plan["jobs"]}
    assert {s for s in sources.values() if s} == {"rules"}, sources
    assert [j for j, s in sources.items() if s] == [2, 3, 4, 5, 6, 7, 11], sources
    assert run.plan["summary"]["would_apply"] == 6 and run.plan["summary"]["needs_review"] == 3, run.plan["summary"]
    assert run.rc == 2, what
    assert snapshot(demo) == before, "a dry run changed the store"
