#!/usr/bin/env python3
"""Summarises data/benchmarks/kv_cache.json (Google Benchmark JSON written by
benchmarks/run/record_kv_cache.sh) into a TSV and a Markdown table: the median time per generated token
with and without the KV cache, for each context length and width, and their ratio.

Usage: summarise_kv_cache.py kv_cache.json kv_cache_summary.tsv
Python 3 standard library only.
"""
import json
import sys


def main(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as f:
        data = json.load(f)
    medians = {}  # (label, context, E) -> microseconds
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b["time_unit"]]
        key = (b["label"], int(b["context"]), int(b["embed_dim"]))
        medians[key] = b["real_time"] * unit
    rows = []
    for (label, context, E) in sorted(k for k in medians if k[0] == "with_cache"):
        with_us = medians[(label, context, E)]
        without_us = medians.get(("without_cache", context, E))
        if without_us is None:
            continue
        rows.append((E, context, with_us, without_us, without_us / with_us))
    rows.sort()
    ctx = data["context"]
    header = [
        f"# Median time per generated token (microseconds), from {src.split('/')[-1]}",
        f"# date {ctx.get('date')}, host {ctx.get('host_name')}, {ctx.get('num_cpus')} CPUs at "
        f"{ctx.get('mhz_per_cpu')} MHz, Google Benchmark library built as {ctx.get('library_build_type')} (this project: release), commit {ctx.get('commit')}",
        "# columns: E, context, with_cache_us, without_cache_us, speedup (without / with)",
    ]
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(header) + "\n")
        f.write("E\tcontext\twith_cache_us\twithout_cache_us\tspeedup\n")
        for E, context, w, wo, r in rows:
            f.write(f"{E}\t{context}\t{w:.3f}\t{wo:.3f}\t{r:.1f}\n")
    print("| E | context | with cache (µs/token) | without cache (µs/token) | speedup |")
    print("|---|---|---|---|---|")
    for E, context, w, wo, r in rows:
        print(f"| {E} | {context} | {w:.1f} | {wo:.1f} | {r:.1f}x |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
