"""`triage-mcp --max-answer-bytes`: the cap triage puts on tool answers for Copilot CLI, which
hides any answer over about 20 KiB (text and structured content together) from its model. The
list pages smaller (every job still reachable through the cursor), the tail keeps its end; and
a client's own `max_bytes` is a real bound on the whole answer, not only on the stderr tails."""

import asyncio
import contextlib
import json
import os

from conftest import INJECTION, TRIAGE_MCP, inject

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


@contextlib.asynccontextmanager
async def session(*args):
    params = StdioServerParameters(command=str(TRIAGE_MCP), args=list(map(str, args)), env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield s


def size(result):
    """What a client that shows both to its model passes on: the text and the structured content."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    return len(text.encode()) + len(json.dumps(result.structured_content, separators=(",", ":")).encode())


async def pages(s, **extra):
    out, cursor = [], None
    while True:
        r = await s.call_tool("list_pending_failed_jobs", {"workflow_id": 42, **extra, **({"cursor": cursor} if cursor else {})})
        assert not r.is_error, r.content
        out.append(r)
        cursor = r.structured_content.get("next_cursor")
        if not cursor:
            return out


def test_list_pages_fit_the_servers_cap_and_cover_every_job(demo):
    async def go():
        async with session("--backend", f"dir:{demo}", "--max-answer-bytes", 16384) as s:
            ps = await pages(s)
            assert len(ps) >= 2, "the demo's 9 groups do not fit 16 KiB in one page"
            for p in ps:
                assert size(p) <= 16384, size(p)
            ids = sorted(j for p in ps for g in p.structured_content["groups"] for j in g["job_ids"])
            assert ids == [2, 3, 4, 5, 6, 7, 9, 10, 11]
            # A client asking for more gets no more than the cap.
            big = await pages(s, max_bytes=65536)
            assert [size(p) <= 16384 for p in big] == [True] * len(big)
        async with session("--backend", f"dir:{demo}") as s:
            assert len(await pages(s)) == 1, "without a cap the demo fits the default 64 KiB page"
            # The client's own max_bytes bounds the whole answer (headers included).
            for p in await pages(s, max_bytes=12000):
                assert size(p) <= 12000, size(p)

    asyncio.run(go())


def test_tail_keeps_the_end_under_the_cap(demo):
    inject(demo, (6,))
    log = demo / "workflows/42/job_stdio/job_wf42_j6_r1_a1.e"
    log.write_text(("noise line " * 20 + "\n") * 400 + log.read_text())  # 400 lines of 220 bytes, then the error

    async def go():
        async with session("--backend", f"dir:{demo}", "--max-answer-bytes", 16384) as s:
            r = await s.call_tool("tail_job_stderr", {"workflow_id": 42, "job_id": 6, "lines": 400})
            assert not r.is_error
            assert size(r) <= 16384, size(r)
            text = r.structured_content["text"]
            assert text.rstrip().endswith("SyntaxError: '{' was never closed") and INJECTION in text
        async with session("--backend", f"dir:{demo}") as s:
            r = await s.call_tool("tail_job_stderr", {"workflow_id": 42, "job_id": 6, "lines": 400})
            assert size(r) > 16384, "without a cap the 400 lines come whole"

    asyncio.run(go())
