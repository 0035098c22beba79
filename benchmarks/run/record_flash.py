#!/usr/bin/env python3
"""Chapter 12's benchmark: naive against tiled causal attention, time and peak memory.

    benchmarks/run/record_flash.py [--build build] [--rounds 3] [--smoke] [--allow-dirty]
        [--note TEXT] [--out DIR] [--no-build]

Also `meson compile -C build run-flash-benchmark`. Each round runs every case of
benchmarks/cpp/flash_benchmark.cpp (q, k, v [1, 12, T, 64], T = 1024, 4096, 16384; naive
not at 16384) in a process of its own, so that each peak RSS belongs to one case; the cases
alternate (naive, tiled, ...) and the summary keeps each one's fastest run. This CPU's limits
are measured before the first round and after the last (recording.py), and each case's GFLOP/s
is read against the limit that binds it.

Writes DIR/flash.json (default data/benchmarks/): meta, limits, every run (Google Benchmark
JSON, `runs`), the summary; and flash_summary.tsv (path, T, min_ms, min_cpu_ms, peak_rss_MiB,
runs). --smoke: one round at T = 1024 only, marked as such. Refuses to record from a tree with
uncommitted changes unless --allow-dirty.
"""
import sys

import recording as rec


def main():
    p = rec.parser(__doc__, rounds=3, min_time=1.0)
    a = p.parse_args()
    rounds, _ = rec.rounds_and_time(p, a)
    exe, _ = rec.programs(a, ["flash_benchmark", "limits_benchmark"])
    recording = rec.Recording(
        a, "benchmarks/run/record_flash.py", rec.provenance.MEASURED["flash.json"], 1.0, rounds,
        versions=rec.versions(exe), threads=[1],
        flops="scores and weights @ values on the visible (causal) pairs only, for both paths")
    names = rec.case_names(exe, "/T:1024/" if a.smoke else None)
    recording.measure_limits((1,))
    runs = recording.gbench_rounds(exe, names, rounds)
    recording.measure_limits((1,))
    summary = []
    for name in names:
        rs = [rec.gbench_record(b, "library", run) for run in runs for b in run["benchmarks"]
              if b["name"] == name]
        s = rec.fastest(rs, "time_ms")["library"]
        b = next(b for run in runs for b in run["benchmarks"] if b["name"] == name)
        s.update(recording.limits.fraction(s, "library", 1))
        summary.append({"path": b["label"], "T": int(b["T"]), "name": name, **s,
                        "peak_rss_MiB": max(b2["peak_rss_bytes"] for run in runs
                                            for b2 in run["benchmarks"] if b2["name"] == name) / 2**20})
    summary.sort(key=lambda r: (r["T"], r["path"]))
    path = recording.write("flash.json", {"runs": runs, "summary": summary})
    tsv = ["path\tT\tmin_ms\tmin_cpu_ms\tpeak_rss_MiB\truns"] + [
        f"{r['path']}\t{r['T']}\t{r['time_ms']:.1f}\t{r['cpu_ms']:.1f}\t{r['peak_rss_MiB']:.1f}\t{r['runs']}"
        for r in summary]
    (path.parent / "flash_summary.tsv").write_text("\n".join(tsv) + "\n")
    print("\n".join(tsv))


if __name__ == "__main__":
    sys.exit(main())
