#!/usr/bin/env python3
"""The training benchmark: the library's backward beside PyTorch's autograd.

    benchmarks/run/record_training.py [--build build] [--install-peers] [--rounds 3]
        [--min-time 2.0] [--threads 1,2] [--no-memory] [--smoke] [--allow-dirty]
        [--note TEXT] [--out DIR] [--no-build]

Also `meson compile -C build run-training-benchmark` (which passes --install-peers).
Cases (benchmarks/cpp/training_benchmark.cpp and benchmarks/peers/torch_training.py):
  mha_train        MultiHeadAttention at GPT-2 sizes (B = 1, T = 1024, 768 wide, 12 heads,
                   causal): forward, loss = out.pow(2).mean(), backward; at each thread count
  induction_train  chapter 21's training run, its first 300 steps from the seed, 1 thread
Sides, one process per run, the order rotating from round to round (interleaved):
  library          build/benchmarks/training_benchmark (buffers reused from step to step)
  library-fresh    the same, with every buffer allocated afresh each step (mha_train only)
  library-fma      the same as library in Arithmetic::fma: every product of the forward and the
                   backward by fused multiply-adds (mha_train only; read against the fused
                   multiply-add limit)
  pytorch-default  Raschka's class under autograd, glibc's default malloc
  pytorch-reuse    the same with malloc keeping and reusing freed memory (its best here)
PyTorch runs with torch.set_num_threads(threads) and OPENBLAS_NUM_THREADS = OMP_NUM_THREADS =
threads, so that "1 thread" is one core on every side (Debian's OpenBLAS otherwise starts a
thread per core of its own). Each side keeps its fastest round; CPU time, peak RSS and page
faults are recorded for every run. Before timing, the library's dL/dx (in both arithmetics)
is compared with PyTorch's x.grad, and the induction run's last loss with PyTorch's.
Then, unless --no-memory, the attention core's forward + backward alone, once per process
(sdpa_backward/naive|tiled|fast at T = 1024, 4096 and, but for naive, 16384): peak RSS.

Writes DIR/training.json (default data/benchmarks/): machine, commit, versions, environment,
load average before, between rounds and after, this CPU's limits (recording.py), every run,
the summary (each side's fraction of the limit that binds it). It builds the programs it runs
(unless --no-build) and refuses to record from a tree with uncommitted changes unless
--allow-dirty (benchmarks/run/provenance.py). The book's training
page is generated from it. Not part of the tests. About 10 minutes on a quiet 2-core machine
(the naive backward at T = 4096 alone takes over a minute and 7.7 GB).
"""
import sys
from pathlib import Path

import recording as rec
from recording import log

T = 1024
STEPS = 300
MEMORY = [("naive", 1024), ("naive", 4096), ("tiled", 1024), ("tiled", 4096), ("tiled", 16384),
          ("fast", 1024), ("fast", 4096), ("fast", 16384)]
GRAD_BOUND = 1e-4  # largest |library dL/dx - PyTorch x.grad| accepted, over max |x.grad|


class Sides(rec.Sides):
    def __init__(self, exe):
        super().__init__()
        self.exe = exe

    def library(self, name, min_time, output=None, side="library"):
        extra = [f"--output={output}"] if output else []
        data = rec.gbench(self.exe, f"{name}/real_time", min_time, extra, self.env_library)
        b = data["benchmarks"][0]
        r = rec.gbench_record(b, side, data)
        for k in ("steps_per_s", "last_loss", "inputs_MB"):
            if k in b:
                r[k] = b[k]
        return r

    def torch(self, case, th, min_time, reuse, output=None):
        return self.run_torch("torch_training.py", ["--case", case, "--min-time", min_time,
                                                    "--T", T, "--steps", STEPS], th, reuse, output)


def case_name(case, th, side="library"):
    """The Google Benchmark case of `case` at `th` threads (library-fresh: mha_train_fresh,
    library-fma: mha_train_fma)."""
    if case == "mha_train":
        tail = {"library-fresh": "_fresh", "library-fma": "_fma"}.get(side, "")
        return f"mha_train{tail}/T:{T}/threads:{th}"
    return f"induction_train/steps:{STEPS}/threads:{th}"


def summarise(runs, limits, flops):
    """Per case and thread count, each side's fastest run; every side is credited with the
    library's flop count of its case (`flops`), so ratios of GFLOP/s are ratios of time."""
    rows = []
    for key in sorted({(r["case"], r["threads_asked"]) for r in runs}):
        mine = [r for r in runs if (r["case"], r["threads_asked"]) == key]
        sides = rec.fastest(mine, "time_ms", extra=("steps_per_s", "last_loss"))
        for side, s in sides.items():
            if flops.get(key[0]):
                s["GFLOPs"] = flops[key[0]] / s["time_ms"] / 1e6
            s.update(limits.fraction(s, side, key[1]))
        row = rec.ratios({"case": key[0], "threads": key[1], "sides": sides}, sides)
        if "library-fma" in sides and "library" in sides:
            row["library_fma_over_library"] = sides["library-fma"]["time_ms"] / sides["library"]["time_ms"]
        torch_best = min((sides[s]["time_ms"] for s in rec.PEER_SIDES if s in sides), default=None)
        if "library-fresh" in sides and torch_best:
            row["library_fresh_over_pytorch_best"] = sides["library-fresh"]["time_ms"] / torch_best
        rows.append(row)
    return rows


def main():
    p = rec.parser(__doc__, rounds=3, min_time=2.0)
    p.add_argument("--install-peers", action="store_true",
                   help="install python3-torch first (tools/install_missing.sh)")
    p.add_argument("--threads", default="1,2", help="thread counts for mha_train")
    p.add_argument("--no-memory", action="store_true")
    a = p.parse_args()
    rounds, min_time = rec.rounds_and_time(p, a)
    threads = rec.thread_counts(p, a.threads)
    rec.need_torch(a)
    exe, _ = rec.programs(a, ["training_benchmark", "limits_benchmark"])
    sides = Sides(exe)
    recording = rec.Recording(
        a, "benchmarks/run/record_training.py", rec.provenance.MEASURED["training.json"],
        min_time, rounds, versions=rec.versions(exe, **rec.torch_versions()),
        threads=threads, T=T, steps=STEPS,
        environment={"pytorch-default": "glibc's default malloc",
                     "pytorch-reuse": rec.REUSE_MALLOC, "pytorch_threads": rec.TORCH_THREADS,
                     "pytorch_openblas": sides.torch_env_note,
                     "library": "default malloc, OpenMP threads = n"},
        flops="the library's count for every side: three times the forward's products "
              "(the backward computes two per forward product), causal pairs only")

    work = Path(a.build) / "training-benchmark"
    work.mkdir(parents=True, exist_ok=True)
    mine, theirs = work / "dx-library.bin", work / "dx-torch.bin"
    fused = work / "dx-library-fma.bin"
    lib_mha = sides.library(case_name("mha_train", 1), 0.01, output=mine)
    sides.library(case_name("mha_train", 1, "library-fma"), 0.01, output=fused, side="library-fma")
    sides.torch("mha_train", 1, 0.01, True, output=theirs)
    lib_ind = sides.library(case_name("induction_train", 1), 0.01)
    torch_ind = sides.torch("induction_train", 1, 0.01, True)
    scale = max(map(abs, rec.read_floats(theirs)), default=0.0)
    checks = {"mha_train_grad_x_max_abs_diff": rec.max_abs_diff(mine, theirs),
              "mha_train_grad_x_max_abs": scale,
              "mha_train_fma_grad_x_max_abs_diff": rec.max_abs_diff(fused, theirs),
              "mha_train_fma_vs_exact_grad_x_ulp": rec.ulps_of_largest(fused, mine),
              "induction_last_loss": {"library": lib_ind["last_loss"],
                                      "pytorch": torch_ind["last_loss"], "steps": STEPS}}
    log(f"check: |dL/dx - x.grad| <= {checks['mha_train_grad_x_max_abs_diff']:.3g} "
        f"(max |x.grad| {scale:.3g}); "
        f"induction loss after {STEPS} steps: library {lib_ind['last_loss']:.6f}, "
        f"PyTorch {torch_ind['last_loss']:.6f}")
    if not checks["mha_train_fma_grad_x_max_abs_diff"] <= GRAD_BOUND * scale:
        sys.exit(f"the library's dL/dx in fma is {checks['mha_train_fma_grad_x_max_abs_diff']:.3g} "
                 f"from PyTorch's x.grad (bound {GRAD_BOUND} x {scale:.3g}): not the same function")
    if not checks["mha_train_grad_x_max_abs_diff"] <= GRAD_BOUND * scale:
        sys.exit(f"the library's dL/dx is {checks['mha_train_grad_x_max_abs_diff']:.3g} from "
                 f"PyTorch's x.grad (bound {GRAD_BOUND} x {scale:.3g}): not the same function")
    # The library's flop count per call (the rate times the time), credited to every side.
    flops = {case: r["GFLOPs"] * r["time_ms"] * 1e6 for case, r in
             (("mha_train", lib_mha), ("induction_train", lib_ind)) if r.get("GFLOPs")}

    recording.measure_limits(threads)
    cases = [("mha_train", th) for th in threads] + [("induction_train", 1)]
    runs = []
    for rnd in range(rounds):
        recording.round_starts()
        for case, th in cases:
            order = ["library", "pytorch-default", "pytorch-reuse"]
            if case == "mha_train":
                order[1:1] = ["library-fresh", "library-fma"]
            for side in rec.interleaved(order, rnd):
                if side.startswith("library"):
                    r = sides.library(case_name(case, th, side), min_time, side=side)
                else:
                    r = sides.torch(case, th, min_time, side == "pytorch-reuse")
                r.update(case=case, threads_asked=th, round=rnd)
                runs.append(r)
            log(f"round {rnd} {case} threads={th}: " + "  ".join(
                f"{r['side']} {r['time_ms']:.1f}" for r in runs[-len(order):]) + " (ms)")

    memory = []
    if not a.no_memory:
        for backend, n in MEMORY:
            if a.smoke and n > 1024:  # a smoke run proves each case runs, at the smallest size
                continue
            r = sides.library(f"sdpa_backward/{backend}/T:{n}/iterations:1", min_time)
            r.update(backend=backend, T=n)
            memory.append(r)
            log(f"sdpa_backward {backend} T={n}: {r['time_ms']:.0f} ms, "
                f"peak RSS {r['peak_rss_MB']:.0f} MB")
    recording.measure_limits(threads)
    for r in memory:
        r.update(recording.limits.fraction(r, "library", 1))

    summary = summarise(runs, recording.limits, flops)
    recording.write("training.json", {"checks": checks, "summary": summary, "memory": memory,
                                      "runs": runs})
    for row in summary:
        log(f"{row['case']} threads={row['threads']}: " + "  ".join(
            f"{k} {v['time_ms']:.1f}" for k, v in row["sides"].items()))


if __name__ == "__main__":
    main()
