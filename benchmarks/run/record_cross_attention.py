#!/usr/bin/env python3
"""Chapter 25's speed: torch.nn.MultiheadAttention as cross-attention, the library beside PyTorch's own.

    benchmarks/run/record_cross_attention.py [--build build] [--rounds 3] [--T 1024] [--S 1024]
        [--threads 1] [--smoke] [--allow-dirty] [--note TEXT] [--out DIR] [--no-build]
        [--install-peers]

Also `meson compile -C build run-cross-benchmark`. Each round runs every case of
benchmarks/cpp/cross_attention_benchmark.cpp (the forward with and without the weights, and one
decoding step with and without the cross-attention cache; E = 768, 12 heads, batch 1, T queries
against S source tokens) in a process of its own, and PyTorch's module
(benchmarks/peers/torch_cross_attention.py) in another, the two sides alternating which runs
first from round to round (interleaved); the summary keeps each side's fastest round (the min
over rounds, the machine's least disturbed one), and the load average before each round is
recorded with it. This CPU's limits are measured before the first round and after the last
(recording.py).

Writes DIR/cross_attention.json (default data/benchmarks/): meta, limits, every C++ run
(Google Benchmark JSON, `cpp`), every PyTorch line (`torch`, one list per round), the summary
(one row per case: impl, T, S, and per side its fastest time and least CPU time, and the
library's time over PyTorch's). --smoke: one short round at T = S = 256, marked as such.
Refuses to record from a tree with uncommitted changes unless --allow-dirty. Record on a quiet
machine: a recording made under load says so (its load averages), but its ratios mean little.
"""
import json
import sys

import recording as rec
from recording import PEERS, TORCH_PY, log

E = 768


def flops(T, S, project_memory=True):
    """The products credited to one call on either side (the C++ program's count)."""
    return 4 * T * E * E + (4 * S * E * E if project_memory else 0) + 4 * T * S * E


def summarise(cpp, torch, T, S, limits, threads):
    rows = {}
    for run in cpp:
        for b in run["benchmarks"]:
            rows.setdefault(b["label"], []).append(rec.gbench_record(b, "library", run))
    for rnd in torch:
        for line in rnd:
            if "impl" in line:
                rows.setdefault(line["impl"], []).append(
                    {"side": "pytorch", "time_ms": min(line["ms"]), "cpu_ms": min(line["cpu_ms"]),
                     "runs": len(line["ms"])})
    out = []
    for impl, runs in rows.items():
        sides = {}
        for side in ("library", "pytorch"):
            rs = [r for r in runs if r["side"] == side]
            if rs:
                best = min(rs, key=lambda r: r["time_ms"])
                sides[side] = {"time_ms": best["time_ms"], "cpu_ms": min(r["cpu_ms"] for r in rs),
                               "rounds": len(rs)}
        decode = impl.startswith("decode")
        t = 1 if decode else T
        for side, s in sides.items():
            s["GFLOPs"] = flops(t, S, "cached" not in impl) / s["time_ms"] / 1e6
            s.update(limits.fraction(s, side, threads))
        row = {"impl": impl, "T": t, "S": S, "sides": sides}
        if "library" in sides and "pytorch" in sides:
            row["library_over_pytorch"] = sides["library"]["time_ms"] / sides["pytorch"]["time_ms"]
        out.append(row)
    return out


def main():
    p = rec.parser(__doc__, rounds=3, min_time=1.0)
    p.add_argument("--T", type=int, help="queries (default 1024; 256 with --smoke)")
    p.add_argument("--S", type=int, help="source tokens (default 1024; 256 with --smoke)")
    p.add_argument("--threads", type=int, default=1, help="threads on both sides (default 1)")
    p.add_argument("--install-peers", action="store_true", help="install python3-torch first")
    a = p.parse_args()
    rounds, min_time = rec.rounds_and_time(p, a)
    T, S = a.T or (256 if a.smoke else 1024), a.S or (256 if a.smoke else 1024)
    rec.need_torch(a)
    exe, _ = rec.programs(a, ["cross_attention_benchmark", "limits_benchmark"])
    recording = rec.Recording(
        a, "benchmarks/run/record_cross_attention.py", rec.provenance.MEASURED["cross_attention.json"],
        min_time, rounds, versions=rec.versions(exe, **rec.torch_versions()), threads=[a.threads], T=T, S=S,
        environment={"library": f"{a.threads} OpenMP thread(s), CROSS_T = T, CROSS_S = S",
                     "pytorch": rec.TORCH_THREADS.replace("n", str(a.threads))},
        flops="both sides credited with the same count: the four projections (2 T E^2 each for "
              "queries and out_proj, 2 S E^2 each for keys and values, none for a cached memory) "
              "and the two attention products (2 T S E each)")
    n = str(a.threads)
    env = dict(rec.clean_environ(), CROSS_T=str(T), CROSS_S=str(S), OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n)
    names = rec.case_names(exe)
    recording.measure_limits((a.threads,))
    cpp, torch = [], []
    for rnd in range(1, rounds + 1):
        recording.round_starts()
        for side in rec.interleaved(["library", "pytorch"], rnd):
            load = " ".join(rec.loadavg())
            if side == "library":
                for name in names:
                    cpp.append(rec.gbench(exe, name, min_time, [
                        f"--benchmark_context=commit={recording.short_commit}",
                        f"--benchmark_context=loadavg_before={load}", f"--benchmark_context=round={rnd}"], env))
            else:
                out = rec.run_json([TORCH_PY, PEERS / "torch_cross_attention.py", "--T", T, "--S", S,
                                    "--threads", a.threads, "--min-time", min_time], env)
                torch.append([{"loadavg_before": load, "round": rnd}] +
                             [json.loads(line) for line in out.splitlines() if line.strip()])
            log(f"round {rnd}: {side} done (load before: {load})")
    recording.measure_limits((a.threads,))
    summary = summarise(cpp, torch, T, S, recording.limits, a.threads)
    recording.write("cross_attention.json", {"commit": recording.short_commit, "cpp": cpp, "torch": torch,
                                             "summary": summary})
    for row in summary:
        sides = row["sides"]
        print(f"{row['impl']:40s} T={row['T']:5d} S={row['S']:5d}  " + "  ".join(
            f"{side} {s['time_ms']:9.3f} ms" for side, s in sides.items()) +
            (f"  library/pytorch {row['library_over_pytorch']:.2f}" if "library_over_pytorch" in row else ""))


if __name__ == "__main__":
    sys.exit(main())
