"""Shared fixtures for the MCP tests: the real triage-mcp binary, fresh copies of the demo
store, and helpers that open a real MCP client session (the official Python SDK)."""

import asyncio
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("TRIAGE_BIN_DIR", ROOT / "target" / "debug"))
TRIAGE_MCP = BIN_DIR / "triage-mcp"
TRIAGE = BIN_DIR / "triage"

try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:  # pragma: no cover - the message is the point
    raise SystemExit(
        "the Python MCP SDK is missing: run the README's test command (bash tests/run-all.sh), "
        "or `pip install mcp pytest`"
    ) from e


def pytest_configure(config):
    for b in (TRIAGE_MCP, TRIAGE):
        if not b.is_file():
            raise pytest.UsageError(f"{b} not found: build first with `cargo build --workspace` (or set TRIAGE_BIN_DIR)")


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def demo(tmp_path):
    """A fresh copy of fixtures/demo."""
    dst = tmp_path / "store"
    shutil.copytree(ROOT / "fixtures" / "demo", dst)
    return dst


def snapshot(root: Path):
    """Every file under root with a digest of its bytes (the lock file excluded)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != ".lock":
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def server_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIAGE_", "TORC_"))}
    env["RUST_LOG"] = "warn"
    return env


@contextlib.asynccontextmanager
async def stdio_session(*args, client_name=None, env=None):
    """A session with a real triage-mcp over stdio; `client_name` is the clientInfo name the
    client announces (the SDK's own by default); `env` adds to the server's environment."""
    params = StdioServerParameters(command=str(TRIAGE_MCP), args=list(args), env={**server_env(), **(env or {})})
    info = None
    if client_name is not None:
        from mcp import types
        info = types.Implementation(name=client_name, version="1.0")
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, client_info=info) as session:
                init = await session.initialize()
                session.init_result = init
                yield session


def structured(result):
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None, "a successful result must carry structuredContent"
    return result.structured_content


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


def answer_bytes(result):
    """Bytes of the whole tool answer as it goes over the wire (content + structured)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def corpus_store(tmp_path, workflow=1):
    """A directory store with one pending_failed job per case of the labelled corpus
    (fixtures/corpus/dev.jsonl): its tail as the job's stderr, its exit code (1 when the
    source gives none) as the attempt's. Returns (store, cases by job id)."""
    import json
    cases = [json.loads(l) for l in (ROOT / "fixtures" / "corpus" / "dev.jsonl").read_text().splitlines() if l.strip()]
    wf = tmp_path / "corpus-store" / "workflows" / str(workflow)
    (wf / "logs").mkdir(parents=True)
    jobs = []
    for i, c in enumerate(cases, start=1):
        (wf / "logs" / f"{i}.err").write_text(c["stderr_tail"] + "\n")
        code = c["exit_code"] if c["exit_code"] is not None else 1
        jobs.append({"id": i, "name": c["id"], "command": "run.sh", "status": "pending_failed", "attempt_id": 1,
                     "resources": {"memory": "4g", "runtime": "PT1H"},
                     "attempts": [{"attempt_id": 1, "return_code": code, "stderr": f"logs/{i}.err"}]})
    (wf / "workflow.json").write_text(json.dumps({"format": 1, "id": workflow, "name": "corpus", "use_pending_failed": True, "jobs": jobs}))
    return tmp_path / "corpus-store", {i: c for i, c in enumerate(cases, start=1)}


def synth_store(tmp_path, jobs, causes=12, lines=41, workflow=1):
    dst = tmp_path / f"synth-{jobs}"
    subprocess.run(
        [str(TRIAGE), "synth", str(dst), "--jobs", str(jobs), "--causes", str(causes), "--lines", str(lines), "--workflow", str(workflow)],
        check=True,
        capture_output=True,
    )
    return dst


@contextlib.contextmanager
def http_server(store, *args, env=None):
    """triage-mcp over HTTP on a free loopback port; yields its /mcp URL."""
    proc = subprocess.Popen([str(TRIAGE_MCP), "--backend", f"dir:{store}", "--http", "127.0.0.1:0", *args],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env or server_env(), text=True)
    try:
        url = None
        for _ in range(50):
            m = re.search(r"listening on (http://\S+/mcp)", proc.stderr.readline())
            if m:
                url = m.group(1)
                break
        assert url, "triage-mcp did not report its address"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
