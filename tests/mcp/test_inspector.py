"""The MCP Inspector's CLI mode against triage-mcp: list the tools, call one."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TRIAGE, server_env

TOOLS = Path(os.environ.get("TRIAGE_TOOLS", Path.home() / ".cache" / "triage"))
INSPECTOR = TOOLS / "npm" / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture(scope="module")
def inspector():
    if not INSPECTOR.exists():
        pytest.fail(f"MCP Inspector not found at {INSPECTOR}: run the README's test command (bash tests/run-all.sh), "
                    f"or `npm install --prefix {TOOLS / 'npm'} @modelcontextprotocol/inspector`")
    return str(INSPECTOR)


def inspect(inspector, demo, *method):
    # The configuration `triage mcp-config --client claude` prints is what the Inspector reads.
    cfg = subprocess.run([str(TRIAGE), "mcp-config", "--client", "claude", "--backend", f"dir:{demo}"],
                         capture_output=True, text=True, check=True).stdout
    path = demo.parent / "mcp.json"
    path.write_text("\n".join(l for l in cfg.splitlines() if not l.startswith("#")))
    cmd = [inspector, "--cli", "--config", str(path), "--server", "triage", *method]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=server_env())
    assert p.returncode == 0, p.stderr + p.stdout
    return json.loads(p.stdout)


def test_inspector_lists_tools_and_calls_one(inspector, demo):
    tools = inspect(inspector, demo, "--method", "tools/list")
    names = {t["name"] for t in tools["tools"]}
    assert names == {"list_pending_failed_jobs", "tail_job_stderr", "get_pattern_hints", "classify_and_resolve_failures"}
    res = inspect(inspector, demo, "--method", "tools/call", "--tool-name", "tail_job_stderr",
                  "--tool-arg", "workflow_id=42", "--tool-arg", "job_id=7", "--tool-arg", "lines=1")
    assert not res.get("isError")
    assert "No module named 'seaborn'" in res["structuredContent"]["text"]
