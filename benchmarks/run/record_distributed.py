#!/usr/bin/env python3
"""Part VI's benchmark (chapters 28 and 29): attention across MPI processes on this machine.

    benchmarks/run/record_distributed.py [--build build] [--ranks 1,2,4] [--rounds 1]
        [--smoke] [--allow-dirty] [--note TEXT] [--out DIR] [--no-build]

Runs build/benchmarks/distributed_benchmark under Open MPI's mpirun (oversubscribed, one
OpenMP thread per rank, shared memory without single copy, as the chapters run), one case per
process, at each rank count P:
  one_process   one process's fast kernel over the whole causal sequence (T = 4096, 16384;
                at P = 1 only)
  ring          ring attention, zig-zag split, causal, its sends overlapped with the compute or
                in turn; the slowest rank's compute and wait seconds per call
  ulysses       DeepSpeed-Ulysses: two all-to-alls around the core on H / P heads
  transfer      one ring shift of a block of keys and values of c tokens (c = 1024, 8192): the
                rate B, bytes a rank sends per second
  ring_memory   one ring forward with c tokens per rank (T = P c; c = 2048, 4096, 8192), each
                rank drawing only its own tokens: the largest peak RSS over the ranks
From these, per P > 1: the rate F of a rank's attention (its share of the causal flops over
its compute seconds, ring in turn at T = 16384) and the paper's condition for hiding a block's
transfer behind its compute, c >= 2 F / B tokens per block (float32: 8 c d bytes against
4 c^2 d flops per head); and for the memory: the peak RSS per rank at each c and P, and under a
cap (the one-rank peak at the largest c) the longest context that fits at each P.

Writes DIR/distributed.json (default data/benchmarks/): meta (commit, machine, load), this
CPU's limits, every run, the summary. Chapter 28's section `distributed` is generated from it
(benchmarks/pages/sections.py). Refuses a tree with uncommitted changes unless --allow-dirty.
Not part of the tests. About 5 minutes on a quiet 2-core machine; --smoke: T = 4096, c <= 4096.
"""
import json
import os
import subprocess
import sys

import recording as rec
from recording import log

MEASURED = rec.provenance.MEASURED["distributed.json"]


def mpi_env():
    """The environment the chapters give mpirun (lib/textbook/ranks.cpp)."""
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_orte_execute_quiet="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_NUM_THREADS="1")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def run_case(exe, ranks, name, context):
    """One case (an exact Google Benchmark name) on `ranks` processes: its result, with the
    counters, as rank 0 reported it."""
    cmd = ["mpirun", "-np", str(ranks), str(exe), "--benchmark_format=json",
           f"--benchmark_filter=^{name}$"] + [f"--benchmark_context={k}={v}" for k, v in context.items()]
    out = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout[out.stdout.index("{"):])
    if not data["benchmarks"]:
        raise RuntimeError(f"distributed_benchmark has no case {name}")
    b = data["benchmarks"][0]
    keep = ("bytes_per_rank", "peak_rss_mb", "compute_s", "wait_s", "GFLOP", "GBps", "rss_inputs_mb")
    return {"name": name, "ranks": ranks, "label": b.get("label"), "iterations": b["iterations"],
            "time_s": b["real_time"] / {"ms": 1e3, "us": 1e6, "ns": 1e9, "s": 1.0}[b["time_unit"]],
            **{k: b[k] for k in keep if k in b}}


def cases(smoke):
    Ts = [4096] if smoke else [4096, 16384]
    cs = [2048, 4096] if smoke else [2048, 4096, 8192]
    names = [f"BM_one_process/T:{T}/iterations:2/manual_time" for T in Ts]
    names += [f"BM_ring/T:{T}/overlap:{o}/iterations:2/manual_time" for T in Ts for o in (1, 0)]
    names += [f"BM_ulysses/T:{T}/iterations:2/manual_time" for T in Ts]
    names += [f"BM_transfer/c:{c}/iterations:20/manual_time" for c in (1024, 8192)]
    names += [f"BM_ring_memory/c:{c}/iterations:1/manual_time" for c in cs]
    return names, Ts, cs


def summarise(runs, Ts, cs, ranks):
    """The overlap condition per P and the memory table (see the module's comment)."""
    def one(prefix, P):
        found = [r for r in runs if r["name"].startswith(prefix) and r["ranks"] == P]
        return min(found, key=lambda r: r["time_s"]) if found else None

    overlap = []
    T = Ts[-1]
    for P in ranks:
        if P == 1:
            continue
        ring = one(f"BM_ring/T:{T}/overlap:0", P)
        shift = one("BM_transfer/c:8192", P)
        if not ring or not shift or not ring.get("compute_s"):
            continue
        F = ring["GFLOP"] * 1e9 / P / ring["compute_s"]  # a rank's share of the work per compute second
        B = shift["GBps"] * 1e9
        on = one(f"BM_ring/T:{T}/overlap:1", P)
        overlap.append({"ranks": P, "T": T, "c": T // P, "flops_per_s": F, "bytes_per_s": B,
                        "c_min": 2 * F / B, "in_turn_s": ring["time_s"], "in_turn_wait_s": ring.get("wait_s"),
                        "overlapped_s": on["time_s"] if on else None,
                        "overlapped_wait_s": on.get("wait_s") if on else None})
    memory = {"rows": [], "cap_mb": None, "longest": []}
    for c in cs:
        row = {"c": c}
        for P in ranks:
            r = one(f"BM_ring_memory/c:{c}/", P)
            if r:
                row[str(P)] = r["peak_rss_mb"]
        memory["rows"].append(row)
    cap_row = memory["rows"][-1] if memory["rows"] else {}
    if "1" in cap_row:
        cap = cap_row["1"] * 1.05  # the one-rank peak at the largest c, and 5 % for noise
        memory["cap_mb"] = cap
        for P in ranks:
            fits = [row["c"] for row in memory["rows"] if row.get(str(P)) is not None and row[str(P)] <= cap]
            memory["longest"].append({"ranks": P, "T": P * max(fits) if fits else None})
    return {"overlap": overlap, "memory": memory}


def main():
    p = rec.parser(__doc__, rounds=1, min_time=0.5)
    p.add_argument("--ranks", default="1,2,4", help="rank counts")
    a = p.parse_args()
    rounds, min_time = rec.rounds_and_time(p, a)
    try:
        ranks = [int(r) for r in a.ranks.split(",")]
    except ValueError:
        p.error(f"bad --ranks {a.ranks!r}")
    if not ranks or min(ranks) < 1:
        p.error("--ranks must be >= 1")
    exe, _ = rec.programs(a, ["distributed_benchmark", "limits_benchmark"])
    names, Ts, cs = cases(a.smoke)
    recording = rec.Recording(a, "benchmarks/run/record_distributed.py", MEASURED, min_time, rounds,
                              versions=rec.versions(exe, openmpi=rec.dpkg("openmpi-bin")),
                              ranks=ranks, shapes={"batch": 1, "heads": 8, "head_dim": 64, "T": Ts,
                                                   "tokens_per_rank_memory": cs, "split": "zigzag",
                                                   "causal": True},
                              environment={"mpirun": "oversubscribed; OMP_NUM_THREADS=1; "
                                                     "btl_vader_single_copy_mechanism=none"})
    recording.measure_limits((1,))
    runs = []
    for rnd in range(rounds):
        recording.round_starts()
        for P in ranks:
            for name in names:
                if name.startswith("BM_one_process") and P != 1:
                    continue  # one process is one process: measured once
                context = {"commit": recording.short_commit, "loadavg_before": " ".join(rec.loadavg()),
                           "round": rnd}
                r = run_case(exe, P, name, context)
                r["round"] = rnd
                runs.append(r)
                log(f"P={P} {name}: {r['time_s']:.3f} s" +
                    (f", {r['peak_rss_mb']:.0f} MB peak per rank" if "peak_rss_mb" in r else ""))
    summary = summarise(runs, Ts, cs, ranks)
    recording.write("distributed.json", {"summary": summary, "runs": runs})
    for o in summary["overlap"]:
        log(f"P={o['ranks']}: F {o['flops_per_s'] / 1e9:.1f} GFLOP/s per rank, B {o['bytes_per_s'] / 1e9:.2f} GB/s, "
            f"c >= {o['c_min']:.0f} tokens (c = {o['c']})")


if __name__ == "__main__":
    sys.exit(main())
