"""A real Torc 1.0 server for the Python tests and the benchmark: `torc-server` on a free
loopback port with a fresh SQLite file, Torc's own runner (`torc run`), and a small client
for its REST API (the standard library's urllib, so nothing else to install).

The binaries come from TORC_BIN_DIR, else $TRIAGE_TOOLS/torc-1.0.0/bin (default
~/.cache/triage); tests/run-all.sh installs them there."""

import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

INSTALL = (
    "SQLX_OFFLINE=true cargo install torc@1.0.0 --features server-bin,mcp-server --locked "
    "--root ~/.cache/triage/torc-1.0.0"
)


def bin_dir() -> Path:
    if os.environ.get("TORC_BIN_DIR"):
        return Path(os.environ["TORC_BIN_DIR"])
    tools = Path(os.environ.get("TRIAGE_TOOLS", Path.home() / ".cache" / "triage"))
    return tools / "torc-1.0.0" / "bin"


def torc_bin(name: str) -> Path:
    p = bin_dir() / name
    if not p.is_file():
        raise RuntimeError(
            f"{p} not found: these tests need Torc 1.0. Install it with\n  {INSTALL}\n"
            "(or run tests/run-all.sh, which does), or point TORC_BIN_DIR at a folder holding torc and torc-server"
        )
    return p


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIAGE_", "TORC_"))}
    env.update(extra)
    return env


class TorcServer:
    """`torc-server run -H 127.0.0.1 --port P --database FILE -c 0.1`; stop() kills it."""

    def __init__(self, db: Path, threads: int = 1):
        self.port = free_port()
        self.db = db
        self.log = db.with_suffix(f".server-{self.port}.log")
        self.proc = subprocess.Popen(
            [str(torc_bin("torc-server")), "run", "-H", "127.0.0.1", "--port", str(self.port),
             "--database", str(db), "--completion-check-interval-secs", "0.1", "--threads", str(threads)],
            stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, env=clean_env(),
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                api(self.url, "GET", "/ping")
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"torc-server did not start; its log:\n{self.log.read_text()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/torc-service/v1"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def api(url: str, method: str, path: str, body=None, **query):
    q = "&".join(f"{k}={v}" for k, v in query.items() if v is not None)
    full = f"{url}{path}" + (f"?{q}" if q else "")
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(full, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")


def items(url: str, path: str, **query):
    return api(url, "GET", path, limit=100000, **query)["items"]


def jobs_by_name(url: str, wf: int):
    return {j["name"]: j for j in items(url, "/jobs", workflow_id=wf)}


# Seven jobs: a connection reset by the peer (transient; a bare refused connection would be
# ambiguous to the catalog), SyntaxError, exit 137, flaky (fails on attempt 1,
# succeeds on attempt 2 through a marker file), unknown, success, one downstream of SyntaxError.
E2E_JOBS = [
    {"name": "conn_reset", "command": "python3 -c \"raise ConnectionResetError(104, 'Connection reset by peer')\""},
    {"name": "syntax", "command": "python3 -c 'def broken(:'"},
    {"name": "killed", "command": "sh -c 'echo \"Out of memory: Killed process $$ (sh)\" >&2; kill -9 $$'; exit $?"},
    {"name": "flaky", "command": "if [ -f \"$TORC_OUTPUT_DIR/flaky.marker\" ]; then echo recovered; else touch \"$TORC_OUTPUT_DIR/flaky.marker\"; "
                                 "echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 1; fi"},
    {"name": "unknown", "command": "echo 'frobnicator wobbled: quux level 7' >&2; exit 3"},
    {"name": "ok", "command": "echo fine"},
    {"name": "after_syntax", "command": "echo downstream", "depends_on": ["syntax"]},
]


def run_spec(url: str, folder: Path, jobs=E2E_JOBS):
    """Write a spec (use_pending_failed, a runner that exits 1 s after running out of jobs) and
    run it with Torc's runner; returns (workflow id, output dir)."""
    spec = folder / "spec.json"
    spec.write_text(json.dumps({"name": "triage_e2e", "use_pending_failed": True,
                                "compute_node_wait_for_new_jobs_seconds": 1, "jobs": jobs}))
    out = folder / "torc_output"
    r = subprocess.run([str(torc_bin("torc")), "run", str(spec), "-o", str(out), "-p", "1"],
                       capture_output=True, text=True, env=clean_env(TORC_API_URL=url), check=True)
    m = re.search(r"Created workflow (\d+)", r.stdout + r.stderr)
    assert m, r.stderr
    return int(m.group(1)), out
