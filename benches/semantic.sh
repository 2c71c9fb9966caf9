#!/usr/bin/env bash
# Measures semantic search on Django from PyPI against the goals of issue 19 (see
# benches/semantic_bench.py), for the default model and for fp32, in one run:
#   - the time to a complete index of each, and the whole sync's chunks/s against the
#     model's own rate;
#   - recall@10 and MRR of each ranking on both halves of benches/django_queries.yml;
#   - for the default model: resync after one changed file, query p50 in a warm server,
#     and the HNSW graph against the exact scan.
#
# Run:   bash benches/semantic.sh       (BENCH_WARM=1 keeps the indexes: no cold rebuild)
# Needs: cargo, python3, PyPI (Django's source, the models, the mcp client). The models are
#        installed with `code-intel model install` into caches under BENCH_DIR, as a user
#        would; no CODE_INTEL_* variable is used. Embedding all of Django (about 27,000
#        chunks) twice takes 15 minutes or more on two cores. BENCH_DIR caches the corpus,
#        the models and the indexes (default /tmp/code-intel-bench).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-/tmp/code-intel-bench}"
DJANGO_SPEC="${DJANGO_SPEC:-django==5.2.19}"
cd "$REPO"
cargo build --release --locked --quiet
BIN="$REPO/target/release/code-intel"
unset CODE_INTEL_ORT_DYLIB CODE_INTEL_EMBEDDING_MODEL_PATH
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
COLD=()
if [ -z "${BENCH_WARM:-}" ]; then COLD=(--cold); fi
export CODE_INTEL_LOG=warn

# fp32 first, in a copy of the corpus with a cache of its own (a cache has one active model).
FP32_CORPUS="$BENCH_DIR/semantic-django-fp32"
[ -d "$FP32_CORPUS" ] || cp -a "$CORPUS" "$FP32_CORPUS"
rm -rf "$FP32_CORPUS/.code-intel/semantic/sync.lock"
export CODE_INTEL_CACHE_DIR="$BENCH_DIR/models-fp32"
"$BIN" model install all-minilm-l6-v2 >&2
# A warm run first finishes whatever an interrupted sync left, untimed; a cold run rebuilds anyway.
[ -z "${BENCH_WARM:-}" ] || "$BIN" index --root "$FP32_CORPUS" >/dev/null
target/mcp-venv/bin/python benches/semantic_bench.py "$BIN" "$FP32_CORPUS" \
    benches/django_queries.yml "${COLD[@]}" --eval-only --label "fp32"

# The default: what `code-intel model install` gives a user.
export CODE_INTEL_CACHE_DIR="$BENCH_DIR/models-default"
"$BIN" model install >&2
[ -z "${BENCH_WARM:-}" ] || "$BIN" index --root "$CORPUS" >/dev/null
target/mcp-venv/bin/python benches/semantic_bench.py "$BIN" "$CORPUS" \
    benches/django_queries.yml "${COLD[@]}" --label "default"
