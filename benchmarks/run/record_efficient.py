#!/usr/bin/env python3
"""Chapter 11's speed table: every layout in C++ beside PyTorch's implementations.

    benchmarks/run/record_efficient.py [--build build] [--rounds 2] [--T 1024] [--smoke]
        [--allow-dirty] [--note TEXT] [--out DIR] [--no-build] [--install-peers]

Also `meson compile -C build run-efficient-benchmark`. Each round runs every case of
benchmarks/cpp/efficient_benchmark.cpp (one forward of each layout at B = 8, T, d = 768, 12
heads, causal, one thread) in a process of its own, then PyTorch's implementations
(benchmarks/peers/torch_efficient.py, one thread); the summary keeps each implementation's
fastest run. This CPU's limits are measured before the first round and after the last
(recording.py), and each entry's GFLOP/s is read against the limit that binds it.

Writes DIR/efficient.json (default data/benchmarks/): meta, limits, every C++ run (Google
Benchmark JSON, `cpp`), every PyTorch line (`torch`, one list per round), the summary; and
efficient_summary.tsv (impl, side, T, min_ms, runs). --smoke: one round at T = 256, marked as
such. Refuses to record from a tree with uncommitted changes unless --allow-dirty.
"""
import json
import sys

import recording as rec
from recording import PEERS, TORCH_PY, log

B, D, H = 8, 768, 12


def flops(T, projections=4):
    """The products credited to one forward of every layout (the C++ program's count)."""
    hd = D // H
    return B * (projections * 2 * T * D * D + 2 * H * 2 * hd * T * (T + 1) / 2)


def summarise(cpp, torch, T, limits):
    rows = []
    best = {}
    for run in cpp:
        for b in run["benchmarks"]:
            best.setdefault(b["label"], []).append(rec.gbench_record(b, "library", run))
    for label, rs in best.items():
        s = rec.fastest(rs, "time_ms")["library"]
        s["peak_rss_MB"] = max(r.get("peak_rss_MB") or 0 for r in rs) or None
        s.update(limits.fraction(s, "library", 1))
        rows.append({"impl": label, "side": "C++", "T": T, **s})
    for run in torch:
        for line in run:
            if "impl" not in line:
                continue
            ms = min(line["ms"])
            row = next((r for r in rows if r["impl"] == line["impl"] and r["side"] == "PyTorch"), None)
            if row is None:
                row = {"impl": line["impl"], "side": "PyTorch", "T": T, "time_ms": ms, "runs": 0}
                rows.append(row)
            row["time_ms"] = min(row["time_ms"], ms)
            row["runs"] += len(line["ms"])
    for row in rows:
        if row["side"] == "PyTorch":
            wrapper = row["impl"].endswith("wrapper")
            row["GFLOPs"] = flops(T, 3 if wrapper else 4) / row["time_ms"] / 1e6
            row.update(limits.fraction(row, "pytorch", 1))
    return sorted(rows, key=lambda r: r["time_ms"])


def main():
    p = rec.parser(__doc__, rounds=2, min_time=1.0)
    p.add_argument("--T", type=int, help="tokens (default 1024; 256 with --smoke)")
    p.add_argument("--install-peers", action="store_true", help="install python3-torch first")
    a = p.parse_args()
    rounds, _ = rec.rounds_and_time(p, a)
    T = a.T or (256 if a.smoke else 1024)
    rec.need_torch(a)
    exe, _ = rec.programs(a, ["efficient_benchmark", "limits_benchmark"])
    recording = rec.Recording(
        a, "benchmarks/run/record_efficient.py", rec.provenance.MEASURED["efficient.json"],
        1.0, rounds, versions=rec.versions(exe, **rec.torch_versions()), threads=[1], T=T,
        environment={"library": "one thread (OpenMP), EFFICIENT_T = T",
                     "pytorch": "torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1"},
        flops="every implementation credited with the same count: 4 products [T, d] x [d, d] "
              "(3 for the wrapper) and the causal products on the visible pairs, B = 8")
    env = dict(rec.clean_environ(), EFFICIENT_T=str(T), OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1")
    names = rec.run_json([exe, "--benchmark_list_tests=true"], env).split()
    recording.measure_limits((1,))
    torch = []

    def peers(rnd):
        lines = [{"loadavg_before": " ".join(rec.loadavg()), "round": rnd}]
        out = rec.run_json([TORCH_PY, PEERS / "torch_efficient.py", "--T", T], env)
        torch.append(lines + [json.loads(line) for line in out.splitlines() if line.strip()])
        log(f"round {rnd}: PyTorch done")

    cpp = recording.gbench_rounds(exe, names, rounds, env, peers)
    recording.measure_limits((1,))
    summary = summarise(cpp, torch, T, recording.limits)
    path = recording.write("efficient.json", {"commit": recording.short_commit, "cpp": cpp, "torch": torch,
                                              "summary": summary})
    tsv = ["impl\tside\tT\tmin_ms\truns"] + [
        f"{r['impl']}\t{r['side']}\t{r['T']}\t{r['time_ms']:.1f}\t{r['runs']}" for r in summary]
    (path.parent / "efficient_summary.tsv").write_text("\n".join(tsv) + "\n")
    print("\n".join(tsv))


if __name__ == "__main__":
    sys.exit(main())
