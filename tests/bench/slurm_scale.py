#!/usr/bin/env python3
"""The Slurm backend at scale, on a real Slurm cluster: a job array of N tasks (1,000 and
10,000 by default) whose tasks fail for real with 12 causes, then triage's three operations on
it, each measured: the first `list_pending_failed_jobs` through `triage-mcp --backend slurm:`
(the official Python MCP SDK over stdio), `triage run --workflow ID --dry-run --agent rules`
(the built-in catalog, no agent), and `triage apply --plan` of that plan. Prints a Markdown
table: wall time, the Slurm client commands each made (sacct / scontrol / squeue / sbatch /
scancel, counted by wrappers put first on PATH that log and exec the real command), the bytes
of the MCP answer (what the agent reads), the peak RSS of the triage process.

    cargo build --release -p triage -p triage-mcp
    TRIAGE_SLURM_CPUS=128 TRIAGE_SLURM_MEMORY=64000 TRIAGE_SLURM_MAX_ARRAY_SIZE=10001 \\
      TRIAGE_SLURM_MAX_JOB_COUNT=100000 bash tests/slurm/cluster.sh start ~/.cache/triage/slurm
    export SLURM_CONF=~/.cache/triage/slurm/etc/slurm.conf
    ~/.cache/triage/venv/bin/python tests/bench/slurm_scale.py      # --sizes 1000,10000
    bash tests/slurm/cluster.sh start ~/.cache/triage/slurm          # with the defaults again:
    #   TRIAGE_SLURM_CPUS=2 TRIAGE_SLURM_MEMORY=4000 TRIAGE_SLURM_MAX_ARRAY_SIZE=1001 TRIAGE_SLURM_MAX_JOB_COUNT=10000

The node is declared with more CPUs than the machine has (oversubscribed) so that many tiny
tasks run at once; they sleep or fail at once, so a 2-core machine keeps up.

The causes, by task index t (t % 20 below 11; the rest of the tasks complete):
 0 over --mem (cgroup OUT_OF_MEMORY)        6 segmentation fault (exit 139)
 1 over the time limit (TIMEOUT: the task   7 No space left on device (/dev/full)
   shortens its own limit, Slurm kills it)  8 missing input file (FileNotFoundError)
 2 Python SyntaxError                       9 command not found (exit 127)
 3 missing Python module                   10 an unknown failure (exit 3, no known text)
 4 connection reset by the peer            and the last 1% of the tasks are preempted (PREEMPTED)
 5 name resolution failure                     by a job in a higher-priority partition

Times are wall clock on whatever else the machine runs (the load average is printed). The
MCP server's peak RSS is its VmHWM after the call; the CLI's is its VmHWM sampled every 20 ms
(the Slurm commands it runs are not counted in it)."""

import argparse
import asyncio
import collections
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release"
COMMANDS = ("sacct", "scontrol", "squeue", "sbatch", "scancel")
NAME = "triage-scale"
LOG = "error"  # RUST_LOG of the triage processes (--log)

SCRIPT = r"""#!/bin/bash
#SBATCH --job-name={name}
#SBATCH --output={name}-%A_%a.out
#SBATCH --error={name}-%A_%a.err
#SBATCH --mem=100M
#SBATCH --time=10
t=$SLURM_ARRAY_TASK_ID
py=/usr/bin/python3
echo "task $t of array $SLURM_ARRAY_JOB_ID on $(hostname): loading inputs"
if [ "$t" -ge {preempt_from} ]; then
    echo "long simulation step, checkpoint every 10 min"
    sleep 600
    exit 0
fi
case $(( t % 20 )) in
  0) $py -S -c 'b = bytearray(400 * 1024 * 1024); print(len(b))' ;;
  1) echo "step 1 of 3: integrating"
     # EndTime may not be the start second: try until the controller takes it.
     sleep 1
     until scontrol update JobId=${{SLURM_ARRAY_JOB_ID}}_$t EndTime=now 2>/dev/null; do sleep 1; done
     sleep 300 ;;
  2) $py -S -c 'def load(path:
    return open(path).read()' ;;
  3) $py -S -c 'import numpy_financial_extras as nfe; nfe.irr([1, 2])' ;;
  4) $py -S -c 'raise ConnectionResetError(104, "Connection reset by peer")' ;;
  5) $py -S -c 'import socket; socket.getaddrinfo("db.cluster.invalid", 5432)' ;;
  6) $py -S -c 'import ctypes; ctypes.string_at(0)' ;;
  7) dd if=/dev/zero of=/dev/full bs=1M count=1 ;;
  8) $py -S -c 'open("/data/inputs/sample_%04d.csv" % '"$t"').read()' ;;
  9) run_model --config model.yaml --seed "$t" ;;
  10) echo "the frobnicator gave up after 3 tries (code 0x2f)" >&2; exit 3 ;;
  *) echo "done: wrote results/$t.json" ;;
esac
"""


def sh(*args, check=True, **kw):
    out = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def config(key):
    for line in sh("scontrol", "show", "config").splitlines():
        k, _, v = line.partition("=")
        if k.strip() == key:
            return v.strip()
    return ""


def check_cluster(sizes):
    if not os.environ.get("SLURM_CONF") or "UP" not in sh("scontrol", "ping", check=False):
        raise SystemExit("no Slurm cluster answers: start one with tests/slurm/cluster.sh (see this file's doc) "
                         "and export SLURM_CONF")
    need = max(sizes) + 1
    size = int(config("MaxArraySize") or 0)
    jobs = int(config("MaxJobCount") or 0)
    cpus = int(sh("sinfo", "-h", "-n", "localhost", "-o", "%c").split()[0])
    if size < need or jobs < 2 * need or cpus < 32:
        raise SystemExit(f"the cluster has MaxArraySize={size}, MaxJobCount={jobs}, {cpus} CPUs; this bench needs "
                         f"MaxArraySize>={need}, MaxJobCount>={2 * need} and an oversubscribed node: restart it with "
                         f"TRIAGE_SLURM_CPUS=128 TRIAGE_SLURM_MEMORY=64000 TRIAGE_SLURM_MAX_ARRAY_SIZE={max(need, 10001)} "
                         f"TRIAGE_SLURM_MAX_JOB_COUNT=100000 bash tests/slurm/cluster.sh start ROOT")


# ---------------------------------------------------------------- the array


def submit(n, work):
    preempt_from = n - max(12, n // 100)
    script = work / "array.sh"
    script.write_text(SCRIPT.format(name=NAME, preempt_from=preempt_from))
    job = sh("sbatch", "--parsable", f"--array=0-{n - 1}", "-D", str(work), str(script), cwd=work).strip()
    return int(job.split(";")[0]), preempt_from


def tasks_in_queue(job):
    out = sh("squeue", "-h", "-r", "-j", str(job), "-o", "%K|%T", check=False)
    rows = []
    for line in out.splitlines():
        k, _, st = line.partition("|")
        if k.strip().isdigit():
            rows.append((int(k), st.strip()))
    return rows


def wait_array(job, n, preempt_from):
    t0 = time.monotonic()
    preempted = False
    last = 0
    while True:
        rows = tasks_in_queue(job)
        if time.monotonic() - last > 30:
            states = collections.Counter(st for _, st in rows)
            log(f"array {job}: {dict(states)} in the queue after {time.monotonic() - t0:.0f} s")
            last = time.monotonic()
        if not preempted and rows and all(k >= preempt_from and st == "RUNNING" for k, st in rows) \
                and len(rows) == n - preempt_from:
            # Only the long tasks are left, all running: a job in the higher-tier partition
            # that needs the whole node preempts them.
            sh("sbatch", "--parsable", "-p", "urgent", "--exclusive", "-J", f"{NAME}-urgent", "-o", "/dev/null",
               "--wrap", "sleep 1")
            preempted = True
            log(f"array {job}: submitted the preempting job")
        if not rows and preempted:
            break
        if not rows and not preempted:
            raise SystemExit(f"array {job} ended before its last tasks could be preempted")
        time.sleep(2)
    # Wait for the accounting database to hold every task's final record.
    while True:
        out = sh("sacct", "-X", "-n", "-P", "-j", str(job), "-o", "JobID,State,JobName,WorkDir", check=False)
        rows = [l.split("|") for l in out.splitlines() if l.count("|") == 3]
        busy = [r for r in rows if r[1] in ("PENDING", "RUNNING", "COMPLETING", "REQUEUED") or r[2] == "allocation"
                or not r[3]]
        if len(rows) >= n and not busy:
            return time.monotonic() - t0, collections.Counter(r[1].split()[0] for r in rows)
        time.sleep(2)


# ---------------------------------------------------------------- counting


def wrappers(work):
    d = work / "bin"
    d.mkdir(exist_ok=True)
    for c in COMMANDS:
        real = shutil.which(c)
        if not real:
            raise SystemExit(f"{c} is not on PATH")
        p = d / c
        p.write_text(f'#!/bin/sh\nprintf "%s\\n" "{c} $*" >> "$TRIAGE_BENCH_CMDLOG"\nexec {real} "$@"\n')
        p.chmod(0o755)
    return d


def counted(logfile):
    counts = collections.Counter()
    lines = Path(logfile).read_text().splitlines() if Path(logfile).exists() else []
    for line in lines:
        counts[line.split(" ", 1)[0]] += 1
    return counts, lines


def env_for(work, state, logfile):
    env = dict(os.environ)
    env["PATH"] = f"{work / 'bin'}:{env.get('PATH', '')}"
    env["TRIAGE_STATE_DIR"] = str(state)
    env["TRIAGE_BENCH_CMDLOG"] = str(logfile)
    env["RUST_LOG"] = LOG
    return env


def hwm(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


async def mcp_list(job, env, work):
    pidfile = work / "mcp.pid"
    server = str(BIN / "triage-mcp")
    params = StdioServerParameters(command="sh", args=["-c", f'echo $$ > "{pidfile}"; exec "$@"', "sh", server,
                                                       "--backend", "slurm:"], env=env)
    with open(work / "mcp.stderr", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                t0 = time.perf_counter()
                result = await session.call_tool("list_pending_failed_jobs", {"workflow_id": job})
                wall = time.perf_counter() - t0
                peak = hwm(int(pidfile.read_text().strip()))
                size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
                sc = result.structured_content or {}
                if result.is_error:
                    raise SystemExit(f"list_pending_failed_jobs failed: {result.content}")
                note = f"{sc.get('total_groups')} groups of {sc.get('total_jobs')} jobs"
                return {"wall": wall, "rss": peak, "bytes": size, "note": note}


def run_cli(args, env, out_path):
    """Run the triage CLI; wall time, its own peak RSS (VmHWM sampled), exit status."""
    with open(out_path, "w") as out, open(str(out_path) + ".stderr", "w") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([str(BIN / "triage"), "--backend", "slurm:", *args], stdout=out,
                             stderr=err, env=env)
        peak = [0]

        def sample():
            while p.poll() is None:
                peak[0] = max(peak[0], hwm(p.pid))
                time.sleep(0.02)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        code = p.wait()
        wall = time.perf_counter() - t0
        th.join()
    return {"wall": wall, "rss": peak[0], "code": code}


def outcomes(plan_path):
    plan = json.loads(Path(plan_path).read_text())
    c = collections.Counter(j.get("outcome") for j in plan.get("jobs", []))
    actions = collections.Counter((j.get("proposed") or {}).get("action") for j in plan.get("jobs", [])
                                  if j.get("outcome") in ("would_apply", "applied"))
    return c, actions


# ---------------------------------------------------------------- one size


def ended_states(job):
    out = sh("sacct", "-X", "-n", "-P", "-j", str(job), "-o", "JobID,State")
    last = {}
    for line in out.splitlines():
        jid, _, st = line.partition("|")
        last[jid] = st.split()[0] if st else st
    return collections.Counter(last.values())


def measure_size(n, root, ops, reuse=None, tag=""):
    jobs_dir = root / f"n{n}"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    if reuse:
        job, took, states = reuse, 0.0, ended_states(reuse)
        log(f"measuring array {job}: {dict(states)}")
    else:
        log(f"submitting a {n}-task array in {jobs_dir}")
        job, preempt_from = submit(n, jobs_dir)
        took, states = wait_array(job, n, preempt_from)
        log(f"array {job} ended in {took:.0f} s: {dict(states)}")
    work = root / f"n{n}-{job}{tag}"
    work.mkdir(parents=True, exist_ok=True)
    wrappers(work)
    state = work / "state"
    rows = {}

    if "list" in ops:
        logf = work / "cmds-list.log"
        m = asyncio.run(mcp_list(job, env_for(work, state, logf), work))
        m["cmds"], m["lines"] = counted(logf)
        rows["list (MCP, first call)"] = m
        log(f"list: {m['wall']:.2f} s, {m['bytes']} bytes, {dict(m['cmds'])}, {m['note']}")

    plan = work / "plan.json"
    if "dry" in ops or "apply" in ops:
        logf = work / "cmds-dry.log"
        m = run_cli(["run", "--workflow", str(job), "--dry-run", "--agent", "rules", "--plan-out", str(plan)],
                    env_for(work, state, logf), work / "dry.out")
        m["cmds"], m["lines"] = counted(logf)
        oc, actions = outcomes(plan)
        m["note"] = f"exit {m['code']}; " + ", ".join(f"{v} {k}" for k, v in sorted(oc.items())) + \
            " (" + ", ".join(f"{v} {k}" for k, v in sorted(actions.items())) + ")"
        rows["run --dry-run (rules)"] = m
        log(f"dry run: {m['wall']:.2f} s, {dict(m['cmds'])}, {m['note']}")

    if "apply" in ops:
        logf = work / "cmds-apply.log"
        applied = work / "applied.json"
        m = run_cli(["apply", "--plan", str(plan), "--plan-out", str(applied)], env_for(work, state, logf),
                    work / "apply.out")
        m["cmds"], m["lines"] = counted(logf)
        oc, _ = outcomes(applied)
        m["note"] = f"exit {m['code']}; " + ", ".join(f"{v} {k}" for k, v in sorted(oc.items()))
        rows["apply --plan"] = m
        log(f"apply: {m['wall']:.2f} s, {dict(m['cmds'])}, {m['note']}")
        # What the moves submitted runs again and fails again: cancel it all.
        sh("scancel", "-n", NAME, check=False)
    return job, took, states, rows


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    mem = next((int(l.split()[1]) for l in Path("/proc/meminfo").read_text().splitlines()
                if l.startswith("MemTotal")), 0)
    return f"{os.cpu_count()} cores ({cpu}), {mem / 1024 / 1024:.0f} GiB RAM"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="array sizes, comma-separated")
    ap.add_argument("--work", help="folder for the jobs' files and triage's state (default: a new one in /tmp)")
    ap.add_argument("--ops", default="list,dry,apply", help="which operations to measure (apply implies dry)")
    ap.add_argument("--reuse", type=int, help="measure this ended array (of the one size given) instead of a new one")
    ap.add_argument("--tag", default="", help="suffix of the measurement folder (to measure one array twice)")
    ap.add_argument("--log", default="error",
                    help="RUST_LOG for triage (e.g. triage::backend::slurm=debug: each Slurm command's time and each "
                         "view build, in <work>/n<N>-<job>/*.stderr)")
    ap.add_argument("--bin-dir", help="where triage and triage-mcp are (default: $CARGO_TARGET_DIR/release)")
    args = ap.parse_args()
    global BIN, LOG
    if args.bin_dir:
        BIN = Path(args.bin_dir)
    LOG = args.log
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    ops = set(args.ops.split(","))
    if args.reuse and len(sizes) != 1:
        raise SystemExit("--reuse measures one array: give its size alone in --sizes")
    check_cluster(sizes)
    for b in ((["triage"] if ops & {"dry", "apply"} else []) + (["triage-mcp"] if "list" in ops else [])):
        if not (BIN / b).is_file():
            raise SystemExit(f"{BIN / b} is missing: cargo build --release -p triage -p triage-mcp")
    root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="triage-slurm-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    results = []
    for n in sizes:
        load_before = os.getloadavg()[0]
        results.append((n, load_before, *measure_size(n, root, ops, args.reuse, args.tag)))
    print(f"\nMachine: {machine()}; Slurm {sh('sinfo', '--version').split()[-1]}; work folder {root}\n")
    print("| tasks (failed) | operation | wall time | sacct / scontrol / squeue / sbatch / scancel | "
          "bytes to the agent | peak RSS | result |")
    print("|---|---|---:|---|---:|---:|---|")
    for n, load, job, took, states, rows in results:
        failed = sum(v for k, v in states.items() if k != "COMPLETED")
        for op, m in rows.items():
            cmds = " / ".join(str(m["cmds"].get(c, 0)) for c in COMMANDS)
            size = human(m["bytes"]) if "bytes" in m else ""
            print(f"| {n:,} ({failed:,}) | {op} | {m['wall']:.2f} s | {cmds} | {size} | {m['rss'] / 2**20:.0f} MiB "
                  f"| {m['note']} |")
        print(f"\narray {job}: {dict(states)}; ran in {took:.0f} s; load average {load:.1f} before")
    print("\nThe commands each operation ran are in <work>/n<N>/cmds-*.log.")


if __name__ == "__main__":
    main()
