#!/usr/bin/env bash
# Measures the MCP server against the goals of issue 7 (see benches/server_bench.py):
# a complete default session, the get_session_status round trip, warm find_definitions on
# Django's source, and the write hook as a cold process.
#
# Run:   bash benches/server.sh
# Needs: cargo, python3 (a venv with the `mcp` client is made under target/), pip access to
#        PyPI for Django. BENCH_DIR caches the corpus (default /tmp/code-intel-bench).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-/tmp/code-intel-bench}"
DJANGO_SPEC="${DJANGO_SPEC:-django==5.2.19}"
cd "$REPO"
cargo build --release --locked --quiet
if [ ! -x target/mcp-venv/bin/python ]; then
    python3 -m venv target/mcp-venv
    target/mcp-venv/bin/python -m pip install --quiet "mcp==2.3.0"
fi
if [ ! -d "$BENCH_DIR/django" ]; then
    mkdir -p "$BENCH_DIR/dl"
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$BENCH_DIR/dl" "$DJANGO_SPEC"
    tar -xzf "$BENCH_DIR"/dl/[Dd]jango-*.tar.gz -C "$BENCH_DIR"
    mv "$BENCH_DIR"/[Dd]jango-*/ "$BENCH_DIR/django"
fi
# The server keeps its index under the corpus; a fresh copy would measure a cold build.
export CODE_INTEL_STATE_DIR="$BENCH_DIR/state"
export CODE_INTEL_LOG=warn
target/mcp-venv/bin/python benches/server_bench.py "$REPO/target/release/code-intel" \
    tests/mcp/scenarios/implement_default.json "$BENCH_DIR/django"
