#!/usr/bin/env python3
"""Measure the embedding model's raw throughput on this machine, with ONNX Runtime in Python.

    bench.py DEST [--chunks 256] [--tokens 200] [--batch 32] [--threads 2] [--repeat 3]

DEST is fetch.sh's destination (DEST/all-minilm-l6-v2 and, if present, DEST/all-minilm-l6-v2-int8).
The snippets are real code: consecutive lines of the Python standard library's own sources,
cut into chunks of about --tokens tokens each (truncated at 256 as fastembed would be told to).
Tokenisation and pooling are included in the timing, as they are in fastembed's embed().
Each pass prints its wall and CPU time and the load average: on a shared machine the wall-clock
figure swings with whatever else runs, so compare the best pass, and the load beside it.

Also reports how far the INT8 model is from fp32 (cosine of the same snippet's two vectors) and
how much an INT8 vector depends on the batch it is computed in (dynamic quantisation scales
activations per batch tensor, padding included).
"""

import argparse
import os
import resource
import sys
import sysconfig
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_onnx import embed, encode, load_tokenizer, session  # noqa: E402


def snippets(tok, count, tokens):
    stdlib = sysconfig.get_paths()["stdlib"]
    files = []
    for root, dirs, names in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("test", "site-packages", "__pycache__",
                                                      "idlelib", "lib2to3", "tkinter"))
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".py")]
    out = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        cur, cur_tokens = [], 0
        for line in lines:
            if not line.strip():
                continue
            cur.append(line)
            cur_tokens += len(tok.encode(line, add_special_tokens=False).ids)
            if cur_tokens >= tokens:
                out.append("\n".join(cur))
                cur, cur_tokens = [], 0
                if len(out) == count:
                    return out
    return out


def run(sess, tok, texts, batch):
    vecs = []
    for i in range(0, len(texts), batch):
        vecs.append(embed(sess, tok, texts[i:i + batch]))
    return np.concatenate(vecs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dest")
    ap.add_argument("--chunks", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="timed passes over the snippets")
    args = ap.parse_args()

    fp32_dir = os.path.join(args.dest, "all-minilm-l6-v2")
    int8_dir = os.path.join(args.dest, "all-minilm-l6-v2-int8")
    tok = load_tokenizer(fp32_dir)
    texts = snippets(tok, args.chunks, args.tokens)
    ids, mask, _ = encode(tok, texts)
    lengths = mask.sum(1)
    print(f"{len(texts)} snippets of Python stdlib code, {lengths.mean():.0f} tokens on average "
          f"(min {lengths.min()}, max {lengths.max()}), batch {args.batch}, "
          f"{args.threads} intra-op threads, {os.cpu_count()} cores")

    results = {}
    for label, d in (("fp32", fp32_dir), ("int8", int8_dir)):
        path = os.path.join(d, "model.onnx")
        if not os.path.isfile(path):
            print(f"{label}: {path} missing, skipped")
            continue
        sess = session(path, args.threads)
        run(sess, tok, texts[:args.batch], args.batch)  # warm-up
        rates = []
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            vecs = run(sess, tok, texts, args.batch)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            rates.append(len(texts) / dt)
            print(f"{label}: {len(texts) / dt:.1f} chunks/s ({dt:.2f} s wall, {cpu:.2f} s CPU "
                  f"for {len(texts)}; load average {os.getloadavg()[0]:.1f})")
        results[label] = (sess, vecs)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rates.sort()
        print(f"{label}: best {rates[-1]:.1f}, median {rates[len(rates) // 2]:.1f} chunks/s over "
              f"{len(rates)} runs; peak RSS of this process so far {rss:.0f} MiB")

    if "fp32" in results and "int8" in results:
        a, b = results["fp32"][1], results["int8"][1]
        cos = (a * b).sum(1)
        print(f"int8 vs fp32, same snippet: cosine mean {cos.mean():.4f}, min {cos.min():.4f}")
        # The same 64 snippets embedded one at a time (no padding) against their vectors from
        # batches of --batch: fp32 is the control (padding is masked out, so ~1.0).
        for label, vecs in (("fp32", a), ("int8", b)):
            alone = run(results[label][0], tok, texts[:64], 1)
            cos1 = (alone * vecs[:64]).sum(1)
            print(f"{label} batch {args.batch} vs one at a time (first 64 snippets): cosine "
                  f"mean {cos1.mean():.4f}, min {cos1.min():.4f}")
        # nearest-neighbour agreement: each snippet's top-10 among the others
        def top10(v):
            sims = v @ v.T
            np.fill_diagonal(sims, -2)
            return np.argsort(-sims, axis=1)[:, :10]
        ta, tb = top10(a), top10(b)
        overlap = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(ta, tb)])
        print(f"int8 vs fp32: top-10 neighbour overlap {overlap:.3f}")


if __name__ == "__main__":
    main()
