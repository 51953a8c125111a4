#!/usr/bin/env python3
"""list_pending_failed_jobs: Torc's own MCP server against triage-mcp, on one real Torc 1.0
server, through the same MCP client (the official Python SDK), at 100, 1,000 and 10,000
pending_failed jobs from 12 causes (41 stderr lines each), plus one job whose stderr is
500 MB. Prints a Markdown table: wall time of the call, HTTP requests the MCP server made to
Torc, peak memory of the MCP server, bytes of the answer (what the agent has to read).

    cargo build --release -p triage -p triage-mcp
    ~/.cache/triage/venv/bin/python tests/bench/torc_vs_triage.py [--sizes 100,1000,10000] [--big-mb 500]

The jobs and their results are created through Torc's API in bulk, as Torc's own tests do
(POST /bulk_jobs, a compute node, POST /workflows/{id}/batch_complete_jobs 1,000 at a time,
status pending_failed), and their stderr files are written in the job_stdio layout Torc's
runner uses, with the texts of `triage synth` (12 causes, per-job noise). Wall time and memory
come from a run straight to torc-server; requests are counted in a second run through a
loopback counting proxy (so the proxy's cost never shows in the times). Peak memory is the MCP
server's VmHWM (/proc/PID/status) after the call; the answer's bytes are the whole tool result
as it goes over the wire (content + structured content).

Each server is measured `--runs` times (default 3), alternating between the two so that a
change in the machine's load falls on both, and the median wall time and the median peak
memory are reported. The client imports `jsonschema` before any timed call: the SDK imports it
lazily the first time it validates a tool's structured output against the tool's output schema,
a one-time cost of the client process that would otherwise land on whichever server declares an
output schema first (triage-mcp does, Torc's server does not). The session lists the tools
before the timed call, as a client does to learn them (the SDK would otherwise list them inside
the first call). The client's validation of the answer against the output schema stays in the
timed window (compiling the schema's validator on the first call, then checking): an agent's
client pays it too."""

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "mcp"))

import jsonschema  # noqa: E402,F401  (see the docstring: a one-time import of the client, not timed)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from torc import TorcServer, api, clean_env, torc_bin  # noqa: E402

BIN = Path(os.environ.get("TRIAGE_BIN_DIR", ROOT / "target" / "release"))


# ---------------------------------------------------------------- counting proxy

class CountingProxy:
    """HTTP/1.1 keep-alive relay on loopback that counts requests."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.count = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/torc-service/v1"

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, client):
        up = socket.create_connection(("127.0.0.1", self.upstream))
        for s in (client, up):  # no Nagle: a relay that waits for ACKs adds 40 ms a request
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cr, ur = client.makefile("rb"), up.makefile("rb")
        try:
            while True:
                head, length, _ = read_head(cr)
                if head is None:
                    return
                body = cr.read(length) if length else b""
                with self.lock:
                    self.count += 1
                up.sendall(head + body)
                rhead, rlength, chunked = read_head(ur)
                if rhead is None:
                    return
                parts = [rhead]
                if chunked:
                    while True:
                        size_line = ur.readline()
                        size = int(size_line.split(b";")[0].strip() or b"0", 16)
                        parts += [size_line, ur.read(size + 2)]
                        if size == 0:
                            break
                elif rlength:
                    parts.append(ur.read(rlength))
                client.sendall(b"".join(parts))
        except OSError:
            return
        finally:
            client.close()
            up.close()

    def close(self):
        self.sock.close()


def read_head(f):
    lines = []
    length, chunked = 0, False
    while True:
        line = f.readline()
        if not line:
            return None, 0, False
        lines.append(line)
        low = line.lower()
        if low.startswith(b"content-length:"):
            length = int(low.split(b":", 1)[1].strip())
        if low.startswith(b"transfer-encoding:") and b"chunked" in low:
            chunked = True
        if line in (b"\r\n", b"\n"):
            return b"".join(lines), length, chunked


# ---------------------------------------------------------------- workloads

def make_workflow(url, out_dir, n, work, big_mb=0):
    """A workflow of n pending_failed jobs (12 causes) with stderr files; returns its id."""
    wf = api(url, "POST", "/workflows", {"name": f"bench-{n}", "user": "bench", "use_pending_failed": True})["id"]
    jobs = [{"workflow_id": wf, "name": f"job_{i + 1}", "command": f"./run.sh {i + 1}"} for i in range(n)]
    created = api(url, "POST", "/bulk_jobs", {"jobs": jobs})["jobs"]
    api(url, "POST", f"/workflows/{wf}/reset_status")
    api(url, "POST", f"/workflows/{wf}/initialize_jobs", only_uninitialized="false", clear_ephemeral_user_data="false")
    run_id = api(url, "GET", f"/workflows/{wf}")["run_id"]
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    node = api(url, "POST", "/compute_nodes", {
        "workflow_id": wf, "hostname": "bench", "pid": os.getpid(), "start_time": now, "num_cpus": 2,
        "memory_gb": 4.0, "num_gpus": 0, "num_nodes": 1, "compute_node_type": "local"})["id"]
    entries = []
    for i, job in enumerate(created):
        rc = 137 if i % 12 == 3 else 1
        entries.append({"job_id": job["id"], "status": "pending_failed", "run_id": run_id, "result": {
            "job_id": job["id"], "workflow_id": wf, "run_id": run_id, "attempt_id": 1, "compute_node_id": node,
            "return_code": rc, "exec_time_minutes": 0.5, "completion_time": now, "status": "pending_failed"}})
    for k in range(0, len(entries), 1000):
        r = api(url, "POST", f"/workflows/{wf}/batch_complete_jobs", {"completions": entries[k:k + 1000]})
        assert not r["errors"], r["errors"][:3]
    synth = work / f"synth-{wf}"
    subprocess.run([str(BIN / "triage"), "synth", str(synth), "--jobs", str(n), "--causes", "12", "--lines", "41",
                    "--workflow", "1"], check=True, capture_output=True)
    stdio = out_dir / "job_stdio"
    stdio.mkdir(parents=True, exist_ok=True)
    for i, job in enumerate(created):
        src = synth / "workflows" / "1" / "job_stdio" / f"job_wf1_j{i + 1}_r1_a1.e"
        dst = stdio / f"job_wf{wf}_j{job['id']}_r{run_id}_a1.e"
        if big_mb:
            tail = src.read_bytes()
            line = b"2026-11-20 02:00:00 INFO step of a long job: progress, checkpoint written, all fine\n"
            block = line * ((1 << 20) // len(line) + 1)
            with open(dst, "wb") as f:
                written = 0
                while written < big_mb << 20:
                    f.write(block)
                    written += len(block)
                f.write(tail)
        else:
            shutil.move(src, dst)
    shutil.rmtree(synth)
    return wf


# ---------------------------------------------------------------- one measurement

async def measure(command, args, wf, pidfile):
    wrapped = ["sh", "-c", f'echo $$ > "{pidfile}"; exec "$@"', "sh", command, *args]
    params = StdioServerParameters(command=wrapped[0], args=wrapped[1:], env=clean_env(RUST_LOG="error"))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                # A client lists the tools before it calls one (that is how it knows them); the
                # SDK would otherwise do it inside the first call, in the timed window.
                await session.list_tools()
                t0 = time.perf_counter()
                result = await session.call_tool("list_pending_failed_jobs", {"workflow_id": wf})
                wall = time.perf_counter() - t0
                pid = int(Path(pidfile).read_text().strip())
                status = {}
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    key, _, value = line.partition(":")
                    if key in ("VmHWM", "RssAnon", "RssFile"):
                        status[key] = int(value.split()[0]) * 1024
                hwm = status.get("VmHWM", 0)
                size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
                extra = ""
                if result.structured_content and "total_groups" in result.structured_content:
                    sc = result.structured_content
                    extra = f"{sc.get('total_groups')} groups, {sc.get('total_jobs')} jobs"
                # What the resident memory is made of after the call (the peak is the sum's
                # highest point): the process's own pages (heap, stacks) and mapped files (its
                # code). Printed to stderr with each run, not in the table.
                parts = {"anon": status.get("RssAnon", 0), "file": status.get("RssFile", 0)}
                return {"wall": wall, "hwm": hwm, "bytes": size, "error": result.is_error, "note": extra, **parts}


def servers(url, out_dir):
    return {
        "torc-mcp-server": (str(torc_bin("torc-mcp-server")), ["--api-url", url, "--output-dir", str(out_dir)]),
        "triage-mcp": (str(BIN / "triage-mcp"), ["--backend", f"torc:{url}", "--torc-output-dir", str(out_dir)]),
    }


def run_one(name, server_url, proxy, out_dir, wf, work):
    """One timed run straight to torc-server; with `proxy`, also one counted run through it."""
    cmd, args = servers(server_url, out_dir)[name]
    m = asyncio.run(measure(cmd, args, wf, work / "pid"))
    if proxy is None:
        return m
    pcmd, pargs = servers(proxy.url, out_dir)[name]
    before = proxy.count
    asyncio.run(measure(pcmd, pargs, wf, work / "pid"))
    m["requests"] = proxy.count - before
    return m


def median_run(runs):
    """The first run's counts and answer, with the median wall time and peak memory of all runs."""
    m = dict(runs[0])
    m["wall"] = statistics.median(r["wall"] for r in runs)
    for key in ("hwm", "anon", "file"):
        m[key] = statistics.median(r[key] for r in runs)
    m["error"] = any(r["error"] for r in runs)
    m["runs"] = len(runs)
    return m


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def times(a, b):
    """How many times `a` is `b`, readable for ratios below 1 too."""
    r = a / b if b else float("inf")
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    mem = next((int(l.split()[1]) for l in Path("/proc/meminfo").read_text().splitlines()
                if l.startswith("MemTotal")), 0)
    return f"{os.cpu_count()} cores ({cpu}), {mem / 1024 / 1024:.0f} GiB RAM, {platform.system()} {platform.release()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--big-mb", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per server and size (median reported)")
    args = ap.parse_args()
    for b in ("triage", "triage-mcp"):
        if not (BIN / b).is_file():
            sys.exit(f"{BIN / b} not found: run `cargo build --release -p triage -p triage-mcp` (or set TRIAGE_BIN_DIR)")
    with tempfile.TemporaryDirectory(prefix="torc-bench-") as tmp:
        work = Path(tmp)
        server = TorcServer(work / "torc.db")
        proxy = CountingProxy(server.port)
        out_dir = work / "torc_output"
        rows = []
        try:
            loads = [(int(s), 0) for s in args.sizes.split(",") if s]
            if args.big_mb:
                loads.append((1, args.big_mb))
            for n, big in loads:
                t0 = time.perf_counter()
                wf = make_workflow(server.url, out_dir, n, work, big)
                label = f"1 job, {big} MB stderr" if big else f"{n:,} jobs"
                print(f"# {label}: workflow {wf} ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
                names = ("torc-mcp-server", "triage-mcp")
                runs = {name: [] for name in names}
                for i in range(max(1, args.runs)):
                    for name in names:
                        # Requests are counted once, on the first round.
                        runs[name].append(run_one(name, server.url, proxy if i == 0 else None, out_dir, wf, work))
                res = {name: median_run(r) for name, r in runs.items()}
                rows.append((label, res))
                for name, m in res.items():
                    print(f"#   {name}: {m}", file=sys.stderr, flush=True)
        finally:
            proxy.close()
            server.stop()
    print(f"Machine: {machine()}; Torc 1.0.0 (torc-server, 1 thread, SQLite); triage {BIN}; "
          f"median of {max(1, args.runs)} runs per server; load average {os.getloadavg()[0]:.1f}.\n")
    print("| pending_failed jobs | server | wall time | HTTP requests to Torc | peak memory (RSS) | answer to the agent |")
    print("|---|---|---:|---:|---:|---:|")
    for label, res in rows:
        for name, m in res.items():
            err = " (error)" if m["error"] else ""
            print(f"| {label} | {name}{err} | {m['wall']:.2f} s | {m['requests']:,} | {human(m['hwm'])} | {human(m['bytes'])} |")
        t, o = res["torc-mcp-server"], res["triage-mcp"]
        print(f"| | torc ÷ triage | {times(t['wall'], o['wall'])} | {times(t['requests'], o['requests'])} "
              f"| {times(t['hwm'], o['hwm'])} | {times(t['bytes'], o['bytes'])} |")


if __name__ == "__main__":
    main()
