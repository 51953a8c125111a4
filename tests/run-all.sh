#!/usr/bin/env bash
# The one test command (README, .ci/run): installs what the tests need on a fresh machine,
# then runs every check and every test. Safe to re-run; installs are cached under
# $TRIAGE_TOOLS (default ~/.cache/triage) and reused.
set -euo pipefail
cd "$(dirname "$0")/.."

export TRIAGE_TOOLS="${TRIAGE_TOOLS:-$HOME/.cache/triage}"
mkdir -p "$TRIAGE_TOOLS"
step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs" >&2; exit 1; }
cargo --version
command -v tail >/dev/null || { echo "GNU tail not found (coreutils): the tail tests compare against it" >&2; exit 1; }

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "Torc 1.0 (the real server the torc backend is tested against)"
TORC_ROOT="$TRIAGE_TOOLS/torc-1.0.0"
if [ ! -x "$TORC_ROOT/bin/torc-server" ] || [ ! -x "$TORC_ROOT/bin/torc" ]; then
  echo "installing Torc 1.0 into $TORC_ROOT (about 15 minutes on 2 cores, once)"
  SQLX_OFFLINE=true cargo install torc@1.0.0 --features server-bin,mcp-server --locked --root "$TORC_ROOT"
fi
export TORC_BIN_DIR="$TORC_ROOT/bin"
"$TORC_BIN_DIR/torc" --version

step "tests"
cargo test --workspace --locked

step "catalog figures on the dev corpus"
cargo test -p triage --locked --test catalog_corpus -- --nocapture 2>&1 | grep -E 'precision|coverage|test result'

step "all green"
