"""Resources (a job attempt's stderr/stdout, a plan the server wrote) read through the official
Python SDK, under both protocol revisions, and progress notifications on a 10,000-job listing."""

import json

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

from conftest import TRIAGE_MCP, run, server_env, structured, synth_store

MODES = ["legacy", "2026-07-28"]


def client(store, *flags, mode, env=None):
    params = StdioServerParameters(command=str(TRIAGE_MCP), args=["--backend", f"dir:{store}", *flags],
                                   env={**server_env(), **(env or {})})
    return Client(params, mode=mode)


def text(result):
    (content,) = result.contents
    return content.text


@pytest.mark.parametrize("mode", MODES)
def test_log_resources_are_the_attempts_logs(demo, mode):
    wf = demo / "workflows" / "42"
    doc = json.loads((wf / "workflow.json").read_text())
    job5 = next(j for j in doc["jobs"] if j["id"] == 5)
    attempt = job5["attempts"][-1]

    async def go():
        async with client(demo, mode=mode) as c:
            templates = await c.list_resource_templates()
            shapes = sorted(t.uri_template for t in templates.resource_templates)
            assert shapes == [
                "triage://plans/{name}",
                "triage://workflows/{workflow_id}/jobs/{job_id}/attempts/{attempt_id}/stderr",
                "triage://workflows/{workflow_id}/jobs/{job_id}/attempts/{attempt_id}/stdout",
            ]
            uri = f"triage://workflows/42/jobs/5/attempts/{attempt['attempt_id']}/stderr"
            stderr = text(await c.read_resource(uri))
            assert stderr == (wf / attempt["stderr"]).read_text(), "a small log comes whole"
            if attempt.get("stdout"):
                stdout = text(await c.read_resource(uri.replace("/stderr", "/stdout")))
                assert stdout == (wf / attempt["stdout"]).read_text()
            for bad, why in [
                ("triage://workflows/42/jobs/5/attempts/1/stdin", "unknown resource"),
                ("triage://workflows/42/jobs/999/attempts/1/stderr", "999"),
                ("triage://plans/../workflow.json", "does not name a plan"),
            ]:
                with pytest.raises(MCPError) as e:
                    await c.read_resource(bad)
                assert why in str(e.value), (bad, str(e.value))

    run(go())


def test_a_big_log_is_read_from_its_end(demo):
    wf = demo / "workflows" / "42"
    doc = json.loads((wf / "workflow.json").read_text())
    job5 = next(j for j in doc["jobs"] if j["id"] == 5)
    path = wf / job5["attempts"][-1]["stderr"]
    path.write_text("noise line\n" * 200_000 + "the last line\n")

    async def go():
        async with client(demo, mode="legacy") as c:
            return text(await c.read_resource(f"triage://workflows/42/jobs/5/attempts/{job5['attempt_id']}/stderr"))

    body = run(go())
    assert body.endswith("the last line\n") and len(body.encode()) <= 256 * 1024


@pytest.mark.parametrize("mode", MODES)
def test_a_plan_the_server_wrote_is_a_resource(demo, tmp_path, mode):
    env = {"TRIAGE_STATE_DIR": str(tmp_path / "state")}
    call = {"workflow_id": 42, "dry_run": False, "classifications": [
        {"job_id": 6, "action": "fail", "reason": "SyntaxError: '{' was never closed", "confidence": 0.99}]}

    async def go():
        async with client(demo, "--confirm", "required", mode=mode, env=env) as c:
            res = structured(await c.call_tool("classify_and_resolve_failures", call))
            plan_path = res["approval"]["plan"]
            listed = (await c.list_resources()).resources
            assert [r.name for r in listed] == [plan_path.rsplit("/", 1)[1]]
            plan = json.loads(text(await c.read_resource(listed[0].uri)))
            assert plan["workflow_id"] == 42 and [j["job_id"] for j in plan["jobs"]] == [6]
            assert plan["jobs"][0]["outcome"] == "would_apply"

    run(go())


@pytest.mark.parametrize("mode", MODES)
def test_progress_on_a_10000_job_listing(tmp_path, mode):
    store = synth_store(tmp_path, 10_000)
    seen = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    async def go():
        async with client(store, mode=mode) as c:
            return structured(await c.call_tool("list_pending_failed_jobs", {"workflow_id": 1},
                                                progress_callback=progress))

    res = run(go())
    assert res["total_jobs"] == 10_000
    assert len(seen) >= 10, seen
    assert seen[0][:2] == (0, 10_000) and "listed 10000" in seen[0][2]
    assert seen[-1][:2] == (10_000, 10_000)
    dones = [d for d, _, _ in seen]
    assert dones == sorted(dones), "progress only grows"
    assert all(t == 10_000 for _, t, _ in seen)
