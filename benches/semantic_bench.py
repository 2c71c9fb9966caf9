"""Measures semantic search on a real corpus against the goals of issues 10 and 19.

Usage: semantic_bench.py BINARY CORPUS QUERIES.yml [--cold] [--label NAME] [--eval-only]

CORPUS is a directory (Django's source, as benches/semantic.sh prepares it); the model is
the one `code-intel model status` names there (benches/semantic.sh points CODE_INTEL_CACHE_DIR
at a cache holding it). Every line starts with NAME (default: the model's name). Prints:
  cold      with --cold: the semantic index dropped and built again: the time to a complete
            index (goal: 5 minutes for Django on two cores), and chunks per second of the
            whole sync against the model's own rate in the same run (the time spent inside
            the model, tokenising included): goal >= 0.9x
  (with --eval-only, only cold and eval)
  resync    one file changed, `code-intel index`: the semantic sync's time: goal < 1 s
  query     semantic_search round trips in a warm MCP server (embedding the query
            included), p50 over the eval queries, and the number of chunks: goal < 50 ms
  eval      recall@10 and MRR of the word, vector and fused rankings on QUERIES.yml, and
            the HNSW graph against the exact scan (recall@10: goal >= 0.95)
"""

import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import AsyncExitStack

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def run_json(binary, corpus, *args):
    out = subprocess.run([binary, *args, "--json"], cwd=corpus, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def queries_of(path):
    # The eval file is YAML; its query lines are `  - query: TEXT`.
    with open(path) as f:
        return [line.split("query:", 1)[1].strip() for line in f if line.strip().startswith("- query:")]


async def query_latency(binary, corpus, queries):
    params = StdioServerParameters(command=binary, args=["serve", "--root", corpus], env=dict(os.environ))
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        first = await session.call_tool("semantic_search", {"query": queries[0], "collection": "forest"})
        body = first.structured_content or json.loads(first.content[0].text)
        samples = []
        for _ in range(3):
            for q in queries:
                start = time.perf_counter()
                r = await session.call_tool("semantic_search", {"query": q, "collection": "forest"})
                samples.append((time.perf_counter() - start) * 1000)
                if r.is_error:
                    sys.exit(f"semantic_search failed: {r.content[0].text}")
        samples.sort()
        return samples[len(samples) // 2], samples[int(len(samples) * 0.9)], body["vector"]


LABEL = ""


def line(what, measured, goal=""):
    print(f"{LABEL:<22} {what:<8} {measured:<72} {goal}", flush=True)


def main():
    global LABEL
    binary, corpus, queries_file = sys.argv[1:4]
    flags = sys.argv[4:]
    cold = "--cold" in flags
    eval_only = "--eval-only" in flags
    status = run_json(binary, corpus, "model", "status")
    LABEL = flags[flags.index("--label") + 1] if "--label" in flags else str(status.get("model", "?"))
    line("what", "measured", "goal")
    line("model", json.dumps(status, separators=(",", ":"))[:160])
    if cold:
        report = run_json(binary, corpus, "index", "--rebuild")["semantic"]
        whole = report["embedded"] / (report["elapsed_ms"] / 1000)
        model = report["embedded"] / (report["embed_ms"] / 1000)
        line("cold", f"complete index in {report['elapsed_ms'] / 1000:.0f} s: {report['chunks']} chunks, "
                     f"{whole:.1f}/s whole sync vs {model:.1f}/s in the model: {whole / model:.2f}x",
             "<= 300 s, >= 0.9x")
    if eval_only:
        evaluate(binary, corpus, queries_file)
        return
    files = sorted(
        os.path.join(d, n) for d, _, ns in os.walk(os.path.join(corpus, "django", "contrib", "auth")) for n in ns
        if n.endswith(".py"))
    target = files[len(files) // 2]
    with open(target, "a") as f:
        f.write(f"\n# touched by semantic_bench at {time.time()}\n")
    report = run_json(binary, corpus, "index")["semantic"]
    line("resync", f"{report['elapsed_ms']} ms: {report['chunked']} file re-chunked, "
                   f"{report['embedded']} chunks embedded", "< 1000 ms")
    queries = queries_of(queries_file)
    p50, p90, vector = asyncio.run(query_latency(binary, corpus, queries))
    line("query", f"p50 {p50:.1f} ms, p90 {p90:.1f} ms over {vector['chunks']} chunks "
                  f"({vector['embedded']} embedded)", "< 50 ms")
    evaluate(binary, corpus, queries_file)


def evaluate(binary, corpus, queries_file):
    out = subprocess.run([binary, "semantic-eval", os.path.abspath(queries_file), "--hnsw", "--json"],
                         cwd=corpus, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"semantic-eval failed: {out.stderr[-2000:]}")
    v = json.loads(out.stdout)
    for s in v["rankings"]:
        line("eval", f"{s['ranking']}: recall@10 {s['recall']:.3f}, MRR {s['mrr']:.3f} over {s['queries']} queries")
        for label, half in (("tuned", (s.get("halves") or {}).get("tune")),
                            ("held out", (s.get("halves") or {}).get("held_out"))):
            if half:
                line("", f"  {label}: recall@10 {half['recall']:.3f}, MRR {half['mrr']:.3f} "
                         f"over {half['queries']} queries")
    g = v["hnsw"]
    if g:
        line("hnsw", f"recall@10 vs exact {g['recall']:.3f} over {g['vectors']} vectors; built in {g['build_ms']} ms; "
                     f"p50 {g['graph_p50_us']} us (exact {g['exact_p50_us']} us)", ">= 0.95")


if __name__ == "__main__":
    main()
