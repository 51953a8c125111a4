"""triage-mcp over streamable HTTP: bearer token, 401, Host checks, refusing unsafe binds."""

import subprocess
import urllib.error
import urllib.request

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import TRIAGE_MCP, http_server, run, server_env, structured

TOKEN = "test-token-0123456789abcdef0123456789"
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}'


@pytest.fixture
def server(demo):
    with http_server(demo, "--token-env", "TRIAGE_TEST_TOKEN", env=server_env() | {"TRIAGE_TEST_TOKEN": TOKEN}) as url:
        yield url


def post(url, headers):
    req = urllib.request.Request(url, data=INIT, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_no_or_wrong_token_gets_401(server):
    assert post(server, {}) == 401
    assert post(server, {"Authorization": "Bearer nope"}) == 401
    assert post(server, {"Authorization": f"Bearer {TOKEN}"}) == 200


def test_foreign_host_and_origin_are_refused(server):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert post(server, auth | {"Host": "evil.example.com"}) == 403
    assert post(server, auth | {"Origin": "http://evil.example.com"}) == 403


def test_tools_over_http_with_the_official_client(server):
    async def go():
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with client:
            async with streamable_http_client(server, http_client=client) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    names = {t.name for t in (await s.list_tools()).tools}
                    assert "classify_and_resolve_failures" in names
                    page = structured(await s.call_tool("list_pending_failed_jobs", {"workflow_id": 42}))
                    assert page["total_jobs"] == 9
                    bad = await s.call_tool("tail_job_stderr", {"workflow_id": 42, "job_id": 12345})
                    assert bad.is_error
                    again = structured(await s.call_tool("tail_job_stderr", {"workflow_id": 42, "job_id": 6, "lines": 1}))
                    assert "SyntaxError" in again["text"]

    run(go())


@pytest.mark.parametrize("addr", ["0.0.0.0:0", "192.0.2.1:0"])
def test_non_loopback_without_token_is_refused(demo, addr):
    p = subprocess.run([str(TRIAGE_MCP), "--backend", f"dir:{demo}", "--http", addr],
                       capture_output=True, text=True, env=server_env(), timeout=30)
    assert p.returncode == 1
    assert "needs a bearer token" in p.stderr and "--token-env" in p.stderr


def test_token_env_must_name_a_set_variable(demo):
    env = {k: v for k, v in server_env().items() if k != "NOT_SET_ANYWHERE"}
    p = subprocess.run([str(TRIAGE_MCP), "--backend", f"dir:{demo}", "--http", "127.0.0.1:0", "--token-env", "NOT_SET_ANYWHERE"],
                       capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 1 and "NOT_SET_ANYWHERE" in p.stderr


def get_metrics(url, token=None):
    """GET /metrics beside /mcp; (status, content type, body)."""
    req = urllib.request.Request(url.rsplit("/mcp", 1)[0] + "/metrics",
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def test_metrics_count_classified_jobs_and_pass_promtool(server):
    import shutil

    promtool = shutil.which("promtool")
    assert promtool, "promtool is not on PATH; install Debian's prometheus package (apt-get install prometheus)"
    assert get_metrics(server)[0] == 401, "/metrics is behind the same bearer token"

    async def go():
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with client:
            async with streamable_http_client(server, http_client=client) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    out = structured(await s.call_tool("classify_and_resolve_failures", {
                        "workflow_id": 42, "classifications": [
                            {"job_id": 2, "action": "retry", "reason": "network blip"},
                            {"job_id": 6, "action": "retry", "reason": "try again"}]}))
                    assert len(out["results"]) == 2

    run(go())
    status, ctype, body = get_metrics(server, TOKEN)
    assert status == 200 and "version=0.0.4" in ctype, (status, ctype)
    # A dry run: one would apply (transient, agreed), one is a conflict with the catalog.
    assert 'outcome="would_apply",validation="accepted",verdict="transient"} 1' in body, body
    assert 'validation="conflict",verdict="permanent"} 1' in body, body
    check = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
