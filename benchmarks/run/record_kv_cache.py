#!/usr/bin/env python3
"""Chapter 8's benchmark: time per generated token with and without the KV cache.

    benchmarks/run/record_kv_cache.py [--build build] [--smoke] [--allow-dirty] [--note TEXT]
        [--out DIR] [--no-build]

Also `meson compile -C build run-kv-benchmark`. Runs benchmarks/cpp/kv_cache_benchmark.cpp
(contexts 64 to 1024, E = 16 and 128, one thread) with 5 repetitions of every case, between two
measurements of this CPU's limits (recording.py): a token with the cache is read against the
read bandwidth (it reads the whole cache), one without against the no-FMA limit.

Writes DIR/kv_cache.json (default data/benchmarks/): Google Benchmark's JSON (the chapter's
figure reads its medians) with meta, limits and the summary; and kv_cache_summary.tsv: the
median time per generated token with and without the cache, per width and context, and their
ratio. --smoke: one repetition, contexts up to 256, marked as such. Refuses to record from a
tree with uncommitted changes unless --allow-dirty.
"""
import sys

import recording as rec


def summarise(data, limits):
    """Per (E, context): the median with and without the cache (microseconds), the speedup,
    and each side's fraction of the limit that binds it."""
    medians = {}
    aggregates = any(b.get("aggregate_name") == "median" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        if aggregates and b.get("aggregate_name") != "median":
            continue
        r = rec.gbench_record(b, b["label"], data)
        r["GFLOPs"], r["GBps"] = b.get("GFLOPs"), b.get("GBps")
        r.update(limits.fraction(r, "library", 1))
        medians[(b["label"], int(b["context"]), int(b["embed_dim"]))] = r
    rows = []
    for (label, context, E), w in sorted(medians.items(), key=lambda kv: (kv[0][2], kv[0][1])):
        wo = medians.get(("without_cache", context, E))
        if label != "with_cache" or wo is None:
            continue
        rows.append({"E": E, "context": context, "with_cache_us": w["time_ms"] * 1e3,
                     "without_cache_us": wo["time_ms"] * 1e3,
                     "speedup": wo["time_ms"] / w["time_ms"],
                     "with_cache": {k: w.get(k) for k in ("GBps", "bound", "limit", "fraction")},
                     "without_cache": {k: wo.get(k) for k in ("GFLOPs", "bound", "limit", "fraction")}})
    return rows


def main():
    p = rec.parser(__doc__, rounds=1, min_time=0.5, smoke_min_time=0.05)
    a = p.parse_args()
    _, min_time = rec.rounds_and_time(p, a)
    exe, _ = rec.programs(a, ["kv_cache_benchmark", "limits_benchmark"])
    recording = rec.Recording(
        a, "benchmarks/run/record_kv_cache.py", rec.provenance.MEASURED["kv_cache.json"],
        min_time, 1, versions=rec.versions(exe), threads=[1], repetitions=1 if a.smoke else 5,
        environment={"library": "one thread; OPENBLAS_NUM_THREADS=1"})
    env = dict(rec.clean_environ(), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    recording.measure_limits((1,))
    recording.round_starts()
    extra = [f"--benchmark_repetitions={recording.meta['repetitions']}",
             "--benchmark_report_aggregates_only=true",
             f"--benchmark_context=loadavg_before={' '.join(rec.loadavg())}"]
    if a.smoke:
        extra.append("--benchmark_filter=context:(64|128|256)/")
    data = rec.gbench(exe, None, min_time, extra, env)
    recording.measure_limits((1,))
    summary = summarise(data, recording.limits)
    path = recording.write("kv_cache.json", {**data, "summary": summary})
    head = [f"# Median time per generated token (microseconds), from {path.name}",
            f"# date {recording.meta['date']}, commit {recording.meta['commit']}"
            + (" (uncommitted changes)" if recording.meta["dirty"] else ""),
            "# columns: E, context, with_cache_us, without_cache_us, speedup (without / with)",
            "E\tcontext\twith_cache_us\twithout_cache_us\tspeedup"]
    rows = [f"{r['E']}\t{r['context']}\t{r['with_cache_us']:.3f}\t{r['without_cache_us']:.3f}\t"
            f"{r['speedup']:.1f}" for r in summary]
    (path.parent / "kv_cache_summary.tsv").write_text("\n".join(head + rows) + "\n")
    print("\n".join(head[-1:] + rows))


if __name__ == "__main__":
    sys.exit(main())
