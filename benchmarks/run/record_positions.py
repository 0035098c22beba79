#!/usr/bin/env python3
"""Chapter 24's speed: grouped-query attention with RoPE in C++ beside PyTorch running Raschka's
Llama 3 GroupedQueryAttention.

    benchmarks/run/record_positions.py [--build build] [--rounds 3] [--T 1024] [--smoke]
        [--allow-dirty] [--note TEXT] [--out DIR] [--no-build] [--install-peers]

Also `meson compile -C build run-positions-benchmark`. Each round runs every case of
benchmarks/cpp/positions_benchmark.cpp (GQA without positions, with RoPE, with ALiBi, at B = 1,
T, d = 768, 12 heads, 4 key/value heads, one thread; and the attention core with ALiBi as its
slopes option against a dense [H, T, T] bias) in a process of its own, then PyTorch
(benchmarks/peers/torch_positions.py, one thread): interleaved, and the summary keeps each
implementation's fastest run (min of rounds, each round itself the min of 3 forwards). The load
average before each run is recorded beside it; record on a quiet machine. This CPU's limits are
measured before the first round and after the last (recording.py).

Writes DIR/positions.json (default data/benchmarks/): meta, limits, every C++ run (Google
Benchmark JSON, `cpp`), every PyTorch line (`torch`, one list per round), the summary.
--smoke: one round at T = 256, marked as such. Refuses to record from a tree with uncommitted
changes unless --allow-dirty.
"""
import json
import sys

import recording as rec
from recording import PEERS, TORCH_PY, log


def summarise(cpp, torch, T, limits):
    rows = []
    best = {}
    for run in cpp:
        for b in run["benchmarks"]:
            best.setdefault(b["label"], []).append(rec.gbench_record(b, "library", run))
    for label, rs in best.items():
        s = rec.fastest(rs, "time_ms")["library"]
        s.update(limits.fraction(s, "library", 1))
        rows.append({"impl": label, "side": "C++", "T": T, **s})
    for run in torch:
        load = next((line["loadavg_before"] for line in run if "loadavg_before" in line), None)
        for line in run:
            if "impl" not in line:
                continue
            ms = min(line["ms"])
            row = next((r for r in rows if r["impl"] == line["impl"] and r["side"] == "PyTorch"), None)
            if row is None:
                row = {"impl": line["impl"], "side": "PyTorch", "T": T, "time_ms": ms, "runs": 0,
                       "loadavg_before": load}
                rows.append(row)
            if ms < row["time_ms"]:
                row["time_ms"], row["loadavg_before"] = ms, load
            row["runs"] += len(line["ms"])
    return sorted(rows, key=lambda r: (r["side"], r["time_ms"]))


def main():
    p = rec.parser(__doc__, rounds=3, min_time=1.0)
    p.add_argument("--T", type=int, help="tokens (default 1024; 256 with --smoke)")
    p.add_argument("--install-peers", action="store_true", help="install python3-torch first")
    a = p.parse_args()
    rounds, _ = rec.rounds_and_time(p, a)
    T = a.T or (256 if a.smoke else 1024)
    rec.need_torch(a)
    exe, _ = rec.programs(a, ["positions_benchmark", "limits_benchmark"])
    recording = rec.Recording(
        a, "benchmarks/run/record_positions.py", rec.provenance.MEASURED["positions.json"],
        1.0, rounds, versions=rec.versions(exe, **rec.torch_versions()), threads=[1], T=T,
        environment={"library": "one thread (OpenMP), POSITIONS_T = T",
                     "pytorch": "torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1"})
    env = dict(rec.clean_environ(), POSITIONS_T=str(T), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    names = rec.run_json([exe, "--benchmark_list_tests=true"], env).split()
    recording.measure_limits((1,))
    torch = []

    def peers(rnd):
        lines = [{"loadavg_before": " ".join(rec.loadavg()), "round": rnd}]
        out = rec.run_json([TORCH_PY, PEERS / "torch_positions.py", "--T", T], env)
        torch.append(lines + [json.loads(line) for line in out.splitlines() if line.strip()])
        log(f"round {rnd}: PyTorch done")

    cpp = recording.gbench_rounds(exe, names, 1 if a.smoke else rounds, env, peers)
    recording.measure_limits((1,))
    summary = summarise(cpp, torch, T, recording.limits)
    recording.write("positions.json", {"commit": recording.short_commit, "cpp": cpp, "torch": torch,
                                       "summary": summary})
    for r in summary:
        print(f"{r['side']:8s} {r['impl']:48s} T={r['T']:5d} {r['time_ms']:9.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
