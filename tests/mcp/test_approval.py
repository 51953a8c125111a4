"""The person approves in their own client: `classify_and_resolve_failures` with dry_run false
asks through MCP elicitation (`elicitation/create` under 2025-11-25, an `input_required`
round trip under 2026-07-28), applies only what the person approved, re-checked, and records
them as approver. The official Python SDK is the client; its elicitation callback plays the
person. The demo store is checked after each call."""

import json
import os
import subprocess

import pytest
from mcp import Client, StdioServerParameters, types

from conftest import TRIAGE, TRIAGE_MCP, run, server_env, snapshot, structured, text_of

MODES = ["legacy", "2026-07-28"]

# Job 5: CUDA OOM at 32g (retry with more memory), job 6: a SyntaxError (fail; cancels 12),
# job 7: ModuleNotFoundError proposed as a retry (the catalog says permanent: conflict).
CALL = {
    "workflow_id": 42,
    "dry_run": False,
    "classifications": [
        {"job_id": 5, "action": "retry", "memory": "48g", "reason": "CUDA OOM at 32g; retry with 48g", "confidence": 0.8},
        {"job_id": 6, "action": "fail", "reason": "SyntaxError: '{' was never closed", "confidence": 0.99},
        {"job_id": 7, "action": "retry", "reason": "maybe seaborn appears", "confidence": 0.9},
    ],
}


def jobs(store):
    return {j["id"]: j for j in json.loads((store / "workflows" / "42" / "workflow.json").read_text())["jobs"]}


def events(store):
    path = store / "workflows" / "42" / "events.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []


def client(store, *flags, mode, person=None, name="approval-test-client", env=None):
    params = StdioServerParameters(command=str(TRIAGE_MCP), args=["--backend", f"dir:{store}", *flags],
                                   env={**server_env(), **(env or {})})
    return Client(params, mode=mode, elicitation_callback=person,
                  client_info=types.Implementation(name=name, version="1.0"))


class Person:
    """Answers every elicitation with `answer(params)` and remembers what it was shown."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []

    async def __call__(self, context, params):
        self.asked.append(params)
        return self.answer(params)


def tick(*titles_containing):
    """Accept, ticking the items whose title contains one of the strings."""
    def answer(params):
        props = params.requested_schema["properties"]
        return types.ElicitResult(action="accept", content={
            k: any(s in p["title"] for s in titles_containing) for k, p in props.items()})
    return answer


def call(store, *flags, mode, person, arguments=CALL, env=None):
    async def go():
        async with client(store, *flags, mode=mode, person=person, env=env) as c:
            return await c.call_tool("classify_and_resolve_failures", arguments)
    return run(go())


@pytest.mark.parametrize("mode", MODES)
def test_accept_applies_only_what_the_person_ticked_and_records_them(demo, mode):
    person = Person(tick("Fail job 6"))
    before = jobs(demo)
    res = structured(call(demo, mode=mode, person=person))

    # Asked once, about the two moves validation allows; the conflict (job 7) is never offered.
    assert len(person.asked) == 1
    props = person.asked[0].requested_schema["properties"]
    titles = sorted(p["title"] for p in props.values())
    assert titles == ["Fail job 6", "Retry job 5 with memory 32g -> 48g"], titles
    assert all(p["type"] == "boolean" and p["default"] is False for p in props.values())
    assert "review" in person.asked[0].message and "workflow 42" in person.asked[0].message

    a = res["approval"]
    assert (a["asked"], a["answer"], a["policy"]) == (True, "accept", "elicit")
    assert a["channel"] == ("input_required" if mode != "legacy" else "elicitation/create")
    out = {r["job_id"]: r for r in res["results"]}
    assert out[6]["outcome"] == "applied" and out[6]["canceled"] == [12]
    assert out[5]["outcome"] == "would_apply" and "not approved" in " ".join(out[5]["notes"])
    assert out[7]["outcome"] == "needs_review"
    assert out[6]["approved_by"]["by"] == "person" and out[6]["approved_by"]["client"] == "approval-test-client"

    after = jobs(demo)
    assert {i for i in before if before[i] != after[i]} == {6, 12}
    assert after[6]["status"] == "failed" and after[12]["status"] == "canceled"
    fail = next(e for e in events(demo) if e["job_id"] == 6)
    # The proposer and the approver are both in the record, apart.
    assert fail["details"]["source"] == "approval-test-client" and fail["details"]["authority"] == "agent"
    assert fail["details"]["approved_by"]["by"] == "person"
    assert fail["details"]["approved_by"]["channel"] == a["channel"]
    assert "approved by a person via approval-test-client" in fail["who"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer,expected", [
    (lambda p: types.ElicitResult(action="decline"), "decline"),
    (lambda p: types.ElicitResult(action="cancel"), "cancel"),
    # A malformed answer: a value that is not a boolean, a field the form did not ask.
    (lambda p: types.ElicitResult(action="accept", content={k: "yes" for k in p.requested_schema["properties"]}), "malformed"),
    (lambda p: types.ElicitResult(action="accept", content={"move_99": True}), "malformed"),
])
def test_decline_cancel_and_malformed_answers_change_nothing(demo, mode, answer, expected):
    person = Person(answer)
    before = snapshot(demo)
    r = call(demo, mode=mode, person=person)
    res = structured(r)
    assert len(person.asked) == 1
    assert res["approval"]["answer"] == expected
    assert res["approval"]["approved"] == []
    assert "nothing changed" in res["approval"]["message"] and "nothing changed" in text_of(r)
    assert all(x["outcome"] in ("would_apply", "needs_review") for x in res["results"])
    assert res["dry_run"] is True
    assert snapshot(demo) == before


@pytest.mark.parametrize("mode", MODES)
def test_approved_moves_are_rechecked_when_the_person_answers(demo, mode):
    """While the person reads the form, job 6 moves on (someone else retried it): approving
    it then changes nothing for it; job 5 is applied."""
    wf = demo / "workflows" / "42" / "workflow.json"

    def answer(params):
        doc = json.loads(wf.read_text())
        for j in doc["jobs"]:
            if j["id"] == 6:
                j["status"], j["attempt_id"] = "ready", j["attempt_id"] + 1
        wf.write_text(json.dumps(doc))
        return tick("job 6", "job 5")(params)

    res = structured(call(demo, mode=mode, person=Person(answer)))
    out = {r["job_id"]: r for r in res["results"]}
    assert out[5]["outcome"] == "applied"
    assert out[6]["outcome"] == "skipped" and "moved on" in " ".join(out[6]["notes"])
    after = jobs(demo)
    assert after[6]["status"] == "ready" and after[12]["status"] != "canceled"
    assert [e["job_id"] for e in events(demo)] == [5]


def test_required_without_elicitation_applies_nothing_and_writes_a_plan_the_person_applies(demo, tmp_path):
    state = tmp_path / "state"
    before = snapshot(demo)
    res = structured(call(demo, "--confirm", "required", mode="legacy", person=None,
                          env={"TRIAGE_STATE_DIR": str(state)}))
    a = res["approval"]
    assert (a["asked"], a["answer"]) == (False, "unavailable")
    assert "triage apply --plan" in a["message"] and a["plan"]
    assert snapshot(demo) == before

    # The person's own path: triage apply of the plan the server wrote.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIAGE_")} | {"TRIAGE_STATE_DIR": str(state)}
    p = subprocess.run([str(TRIAGE), "apply", "--backend", f"dir:{demo}", "--plan", a["plan"], "--json"],
                       capture_output=True, text=True, env=env)
    assert p.returncode in (0, 2), p.stderr
    applied = {j["job_id"] for j in json.loads(p.stdout)["jobs"] if j["outcome"] == "applied"}
    assert applied == {5, 6}
    after = jobs(demo)
    assert after[5]["status"] == "ready" and after[6]["status"] == "failed"


def test_elicit_with_a_client_that_cannot_be_asked_lets_validation_decide(demo):
    res = structured(call(demo, mode="legacy", person=None))
    assert res["approval"]["answer"] == "not_asked" and res["approval"]["asked"] is False
    out = {r["job_id"]: r["outcome"] for r in res["results"]}
    assert out == {5: "applied", 6: "applied", 7: "needs_review"}


def test_never_does_not_ask_even_a_client_that_could(demo):
    person = Person(tick())
    res = structured(call(demo, "--confirm", "never", mode="legacy", person=person))
    assert person.asked == [] and res["approval"]["answer"] == "not_asked"
    assert {r["job_id"]: r["outcome"] for r in res["results"]}[6] == "applied"


def test_nothing_to_approve_asks_nobody(demo):
    person = Person(tick("job"))
    arguments = {"workflow_id": 42, "dry_run": False,
                 "classifications": [{"job_id": 7, "action": "retry", "reason": "maybe", "confidence": 0.9}]}
    before = snapshot(demo)
    res = structured(call(demo, mode="legacy", person=person, arguments=arguments))
    assert person.asked == [] and res["approval"]["answer"] == "not_needed"
    assert snapshot(demo) == before


def test_round_trip_state_is_answered_once_and_bound_to_the_call(demo):
    """2026-07-28 driven by hand: the requestState is an opaque handle; a forged one, a second
    answer with the same one, or different arguments apply nothing."""
    async def go():
        async with client(demo, mode="2026-07-28", person=Person(tick("job"))) as c:
            first = await c.session.call_tool("classify_and_resolve_failures", CALL, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult), first
            request = first.input_requests["approval"]
            assert request.method == "elicitation/create"
            handle = first.request_state
            props = request.params.requested_schema["properties"]
            yes = {"approval": types.ElicitResult(action="accept", content={k: True for k in props}).model_dump(by_alias=True, exclude_none=True)}

            forged = await c.session.call_tool("classify_and_resolve_failures", CALL, allow_input_required=True,
                                               input_responses=yes, request_state="0" * 32)
            assert forged.is_error and "unknown" in text_of(forged)
            other = dict(CALL, classifications=CALL["classifications"][:1])
            changed = await c.session.call_tool("classify_and_resolve_failures", other, allow_input_required=True,
                                                input_responses=yes, request_state=handle)
            assert changed.is_error and "arguments differ" in text_of(changed)
            # The handle was spent by the mismatched call: the genuine answer now finds nothing.
            late = await c.session.call_tool("classify_and_resolve_failures", CALL, allow_input_required=True,
                                             input_responses=yes, request_state=handle)
            assert late.is_error and "already answered" in text_of(late)

    before = snapshot(demo)
    run(go())
    assert snapshot(demo) == before


def test_approval_over_a_real_torc_server(tmp_path):
    """Under 2026-07-28, against Torc with Torc's own runner: the person approves the retry and
    leaves the fail unticked; Torc shows exactly that, and Torc's event log names the approver."""
    from torc import TorcServer, items, jobs_by_name, run_spec

    server = TorcServer(tmp_path / "torc.db")
    try:
        url = server.url
        wf, out = run_spec(url, tmp_path)
        ids = {name: j["id"] for name, j in jobs_by_name(url, wf).items()}
        arguments = {"workflow_id": wf, "dry_run": False, "classifications": [
            {"job_id": ids["conn_reset"], "action": "retry", "reason": "the peer reset the connection; transient", "confidence": 0.8},
            {"job_id": ids["syntax"], "action": "fail", "reason": "SyntaxError: the code does not parse", "confidence": 0.95},
        ]}
        person = Person(tick("Retry"))

        async def go():
            params = StdioServerParameters(command=str(TRIAGE_MCP), env=server_env(),
                                           args=["--backend", f"torc:{url}", "--torc-output-dir", str(out)])
            async with Client(params, mode="2026-07-28", elicitation_callback=person,
                              client_info=types.Implementation(name="vscode-like", version="1")) as c:
                return structured(await c.call_tool("classify_and_resolve_failures", arguments))

        res = run(go())
        assert res["approval"]["answer"] == "accept" and len(person.asked) == 1
        assert {r["job_id"]: r["outcome"] for r in res["results"]} == {ids["conn_reset"]: "applied", ids["syntax"]: "would_apply"}
        after = jobs_by_name(url, wf)
        assert (after["conn_reset"]["status"], after["conn_reset"]["attempt_id"]) == ("ready", 2)
        assert after["syntax"]["status"] == "pending_failed"
        audit = [e["data"] for e in items(url, "/events", workflow_id=wf) if e["data"].get("category") == "triage"]
        assert [e["action"] for e in audit] == ["retry"], audit
        assert "approved by a person via vscode-like" in audit[0]["who"]
        assert '"approved_by"' in json.dumps(audit[0]) and '"input_required"' in json.dumps(audit[0])
    finally:
        server.stop()


@pytest.mark.parametrize("mode", MODES)
def test_approval_over_streamable_http(demo, mode):
    """The same flow over `--http`: under 2026-07-28 the two rounds are separate HTTP requests,
    and the server keeps the judged call between them."""
    from conftest import http_server

    person = Person(tick("Retry job 5"))
    with http_server(demo) as url:
        async def go():
            async with Client(url, mode=mode, elicitation_callback=person,
                              client_info=types.Implementation(name="http-client", version="1")) as c:
                return structured(await c.call_tool("classify_and_resolve_failures", CALL))
        res = run(go())
    assert len(person.asked) == 1 and res["approval"]["answer"] == "accept"
    assert {r["job_id"]: r["outcome"] for r in res["results"]} == {5: "applied", 6: "would_apply", 7: "needs_review"}
    after = jobs(demo)
    assert (after[5]["status"], after[5]["resources"]["memory"]) == ("ready", "48g")
    assert after[6]["status"] == "pending_failed"


def test_a_form_too_long_to_read_is_refused_and_changes_nothing(tmp_path):
    """More distinct moves than one form holds: a tool error that says how to split, no move."""
    from conftest import synth_store

    store = synth_store(tmp_path, 120, workflow=1)
    person = Person(tick("Retry"))
    arguments = {"workflow_id": 1, "classifications": [
        {"job_id": i, "action": "retry", "reason": f"reason {i}", "confidence": 0.9} for i in range(1, 121)]}

    async def go():
        async with client(store, mode="legacy", person=person) as c:
            dry = structured(await c.call_tool("classify_and_resolve_failures", arguments))
            assert dry["summary"]["would_apply"] > 40, dry["summary"]
            return await c.call_tool("classify_and_resolve_failures", dict(arguments, dry_run=False))

    before = snapshot(store)
    r = run(go())
    assert r.is_error and "at most 40" in text_of(r) and "Nothing changed" in text_of(r)
    assert person.asked == []
    assert snapshot(store) == before
