"""Authority cannot be claimed over MCP: a client that calls itself `review` (or `rules`) is an
agent like any other, and gets no catalog-permanent job retried, whatever its classifications
say (override, full confidence)."""

import json

import pytest

from conftest import corpus_store, run, stdio_session, structured


@pytest.mark.parametrize("name", ["review", "rules"])
def test_a_client_named_like_a_person_retries_no_permanent_failure(tmp_path, name):
    store, cases = corpus_store(tmp_path)

    async def go():
        async with stdio_session("--backend", f"dir:{store}", client_name=name) as s:
            return structured(await s.call_tool("classify_and_resolve_failures", {
                "workflow_id": 1, "dry_run": False,
                "classifications": [{"job_id": j, "action": "retry", "confidence": 1.0, "override": True,
                                     "reason": "a person reviewed this: retry"} for j in cases],
            }))

    res = run(go())
    results = {r["job_id"]: r for r in res["results"]}
    assert len(results) == len(cases)
    on_disk = {j["id"]: j for j in json.loads((store / "workflows" / "1" / "workflow.json").read_text())["jobs"]}
    permanent = [j for j, r in results.items() if r["catalog"]["verdict"] == "permanent"]
    transient = [j for j, r in results.items() if r["catalog"]["verdict"] == "transient"]
    assert len(permanent) >= 10 and len(transient) >= 10, (len(permanent), len(transient))
    for j in permanent:
        r = results[j]
        assert r["proposed"]["authority"] == "agent" and r["proposed"]["source"] == name, r["proposed"]
        assert r["validation"]["status"] == "conflict" and r["outcome"] == "needs_review", (j, r)
        assert (on_disk[j]["status"], on_disk[j]["attempt_id"]) == ("pending_failed", 1), (j, cases[j]["id"])
    # The apply path was live: what the catalog agrees with was retried.
    applied = [j for j in transient if results[j]["outcome"] == "applied"]
    assert applied and all(on_disk[j]["status"] == "ready" for j in applied), applied
