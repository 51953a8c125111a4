"""triage-mcp over a real Torc 1.0 server, driven by the official Python MCP SDK: jobs that
really failed under Torc's runner are listed, read and classified (dry run, then applied),
and every effect is checked through Torc's REST API."""

import time

import pytest

from conftest import answer_bytes, run, stdio_session, structured, text_of
from torc import TorcServer, api, items, jobs_by_name, run_spec


@pytest.fixture
def torc(tmp_path):
    server = TorcServer(tmp_path / "torc.db")
    try:
        wf, out = run_spec(server.url, tmp_path)
        yield server.url, wf, out
    finally:
        server.stop()


def test_list_tail_and_classify_over_torc(torc):
    url, wf, out = torc
    jobs = jobs_by_name(url, wf)
    ids = {name: j["id"] for name, j in jobs.items()}
    pending = sorted(ids[n] for n in ("conn_reset", "syntax", "killed", "flaky", "unknown"))

    async def go():
        async with stdio_session("--backend", f"torc:{url}", "--torc-output-dir", str(out)) as s:
            res = await s.call_tool("list_pending_failed_jobs", {"workflow_id": wf})
            data = structured(res)
            assert data["use_pending_failed"] is True and data["total_jobs"] == 5
            assert sorted(i for g in data["groups"] for i in g["job_ids"]) == pending
            syntax = next(g for g in data["groups"] if ids["syntax"] in g["job_ids"])
            assert syntax["hints"]["verdict"] == "permanent"
            assert "SyntaxError" in syntax["representative"]["stderr_tail"]
            assert "BEGIN UNTRUSTED STDERR" in text_of(res) and answer_bytes(res) < 64 * 1024

            t = structured(await s.call_tool("tail_job_stderr", {"workflow_id": wf, "job_id": ids["conn_reset"], "lines": 1}))
            assert t["text"].startswith("ConnectionResetError") and t["attempt_id"] == 1
            assert t["path"].endswith(f"job_wf{wf}_j{ids['conn_reset']}_r1_a1.e")

            classes = [
                {"job_id": ids["conn_reset"], "action": "retry", "reason": "the peer reset the connection; transient", "confidence": 0.8},
                {"signature": syntax["signature"], "action": "fail", "reason": "SyntaxError: the code does not parse", "confidence": 0.95},
            ]
            dry = structured(await s.call_tool("classify_and_resolve_failures", {"workflow_id": wf, "classifications": classes}))
            assert dry["dry_run"] is True
            assert {r["job_id"]: r["outcome"] for r in dry["results"]} == {ids["conn_reset"]: "would_apply", ids["syntax"]: "would_apply"}
            assert {n: j["status"] for n, j in jobs_by_name(url, wf).items()} == {n: j["status"] for n, j in jobs.items()}, "a dry run changes nothing"

            applied = structured(await s.call_tool("classify_and_resolve_failures", {"workflow_id": wf, "classifications": classes, "dry_run": False}))
            assert {r["job_id"]: r["outcome"] for r in applied["results"]} == {ids["conn_reset"]: "applied", ids["syntax"]: "applied"}
            again = structured(await s.call_tool("classify_and_resolve_failures", {"workflow_id": wf, "classifications": classes[:1], "dry_run": False}))
            assert again["results"][0]["outcome"] == "skipped", again

            left = structured(await s.call_tool("list_pending_failed_jobs", {"workflow_id": wf}))
            assert left["total_jobs"] == 3

    run(go())
    after = jobs_by_name(url, wf)
    assert (after["conn_reset"]["status"], after["conn_reset"]["attempt_id"]) == ("ready", 2)
    assert (after["syntax"]["status"], after["syntax"]["attempt_id"]) == ("failed", 1)
    assert after["unknown"]["status"] == "pending_failed"
    deadline = time.time() + 20
    while jobs_by_name(url, wf)["after_syntax"]["status"] != "canceled":
        assert time.time() < deadline, "Torc's cascade did not cancel after_syntax"
        time.sleep(0.1)
    retried = [e["data"] for e in items(url, "/events", workflow_id=wf) if e["data"].get("event_type") == "job_retried"]
    assert [e["job_id"] for e in retried] == [ids["conn_reset"]], "one retry, once"
    audit = [e["data"] for e in items(url, "/events", workflow_id=wf) if e["data"].get("category") == "triage"]
    assert sorted(e["action"] for e in audit) == ["fail", "retry"]
    assert all("triage-mcp" in e["who"] for e in audit), audit
    assert api(url, "GET", "/results", workflow_id=wf, job_id=ids["syntax"])["items"][0]["status"] == "failed"
