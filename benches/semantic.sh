#!/usr/bin/env bash
# Measures semantic search against the goals of issue 10 (see benches/semantic_bench.py):
# cold index throughput against the model's own, resync after one change, query latency in
# a warm server, and recall@10 / MRR of each ranking on benches/django_queries.yml, with the
# HNSW graph against the exact scan.
#
# Run:   bash benches/semantic.sh            (BENCH_COLD=1 also drops and rebuilds the index)
# Needs: cargo, python3, pip access to PyPI (Django's source, the model, the mcp client).
#        The first run embeds all of Django (about 27,000 chunks): 15 minutes or more on two
#        cores. BENCH_DIR caches the corpus and its index (default /tmp/code-intel-bench).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-/tmp/code-intel-bench}"
DJANGO_SPEC="${DJANGO_SPEC:-django==5.2.19}"
cd "$REPO"
cargo build --release --locked --quiet
bash tests/model/fetch.sh target/model
export CODE_INTEL_ORT_DYLIB="$REPO/target/model/libonnxruntime.so"
export CODE_INTEL_EMBEDDING_MODEL_PATH="$REPO/target/model/all-minilm-l6-v2"
if [ ! -x target/mcp-venv/bin/python ]; then
    python3 -m venv target/mcp-venv
    target/mcp-venv/bin/python -m pip install --quiet "mcp==2.3.0"
fi
CORPUS="$BENCH_DIR/semantic-django"
if [ ! -d "$CORPUS" ]; then
    mkdir -p "$BENCH_DIR/dl"
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$BENCH_DIR/dl" "$DJANGO_SPEC"
    tar -xzf "$BENCH_DIR"/dl/[Dd]jango-*.tar.gz -C "$BENCH_DIR"
    mv "$BENCH_DIR"/[Dd]jango-*/ "$CORPUS"
fi
# A first sync (or the rest of an interrupted one) before anything is timed.
target/release/code-intel index --root "$CORPUS" >/dev/null
COLD=()
if [ -n "${BENCH_COLD:-}" ]; then COLD=(--cold); fi
CODE_INTEL_LOG=warn target/mcp-venv/bin/python benches/semantic_bench.py \
    "$REPO/target/release/code-intel" "$CORPUS" benches/django_queries.yml "${COLD[@]}"
