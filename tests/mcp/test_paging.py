"""Paging through a large store: every job id reachable exactly once, every page bounded."""

from conftest import answer_bytes, run, stdio_session, structured, synth_store


def test_paging_reaches_every_job_once_within_budget(tmp_path):
    store = synth_store(tmp_path, jobs=3000, causes=12)

    async def go():
        async with stdio_session("--backend", f"dir:{store}") as s:
            seen = []
            cursor = None
            pages = 0
            first = None
            while True:
                args = {"workflow_id": 1, "limit": 8}
                if cursor:
                    args["cursor"] = cursor
                res = await s.call_tool("list_pending_failed_jobs", args)
                data = structured(res)
                assert answer_bytes(res) < 64 * 1024, f"page {pages} is {answer_bytes(res)} bytes"
                first = first or data
                for g in data["groups"]:
                    seen.extend(g["job_ids"])
                pages += 1
                cursor = data.get("next_cursor")
                if not cursor:
                    break
                assert pages < 200
            assert sorted(seen) == list(range(1, 3001)), "every job exactly once"
            assert first["total_groups"] == 12 and pages > 2
            # the default page shows every cause on page one
            res = await s.call_tool("list_pending_failed_jobs", {"workflow_id": 1})
            data = structured(res)
            assert answer_bytes(res) < 64 * 1024
            assert len({g["signature"] for g in data["groups"]}) == 12
            assert all(g.get("representative") for g in data["groups"])

    run(go())
