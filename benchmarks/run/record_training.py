#!/usr/bin/env python3
"""The training benchmark (issues 20 and 23): the library's backward beside PyTorch's autograd.

    benchmarks/run/record_training.py [--build build] [--install-peers] [--rounds 3]
        [--min-time 2.0] [--threads 1,2] [--no-memory] [--smoke] [--note TEXT] [--out DIR]

Also `meson compile -C build run-training-benchmark` (which passes --install-peers).
Cases (benchmarks/cpp/training_benchmark.cpp and benchmarks/peers/torch_training.py):
  mha_train        MultiHeadAttention at GPT-2 sizes (B = 1, T = 1024, 768 wide, 12 heads,
                   causal): forward, loss = out.pow(2).mean(), backward; at each thread count
  induction_train  chapter 21's training run, its first 300 steps from the seed, 1 thread
Sides, one process per run, the order rotating from round to round (interleaved):
  library          build/benchmarks/training_benchmark (buffers reused from step to step)
  library-fresh    the same, with every buffer allocated afresh each step (mha_train only)
  pytorch-default  Raschka's class under autograd, glibc's default malloc
  pytorch-reuse    the same with malloc keeping and reusing freed memory (its best here)
PyTorch runs with torch.set_num_threads(threads) and OPENBLAS_NUM_THREADS = OMP_NUM_THREADS =
threads, so that "1 thread" is one core on every side (Debian's OpenBLAS otherwise starts a
thread per core of its own). Each side keeps its fastest round; CPU time, peak RSS and page
faults are recorded for every run. Before timing, the library's dL/dx is compared with
PyTorch's x.grad, and the induction run's last loss with PyTorch's.
Then, unless --no-memory, the attention core's forward + backward alone, once per process
(sdpa_backward/naive|tiled|fast at T = 1024, 4096 and, but for naive, 16384): peak RSS.

Writes DIR/training.json (default data/benchmarks/): machine, commit, versions, environment,
load average before, between rounds and after, every run, the summary. The book's training
page is generated from it. Not part of the tests. About 10 minutes on a quiet 2-core machine
(the naive backward at T = 4096 alone takes over a minute and 7.7 GB).
"""
import argparse
import datetime
import json
import shlex
import subprocess
import sys
from pathlib import Path

import record_attention as rab  # noqa: E402  (the attention benchmark's helpers)

ROOT, PEERS = rab.ROOT, rab.PEERS
T = 1024
STEPS = 300
MEMORY = [("naive", 1024), ("naive", 4096), ("tiled", 1024), ("tiled", 4096), ("tiled", 16384),
          ("fast", 1024), ("fast", 4096), ("fast", 16384)]
GRAD_BOUND = 1e-4  # largest |library dL/dx - PyTorch x.grad| accepted, over max |x.grad|


class Sides:
    def __init__(self, build):
        self.exe = Path(build) / "benchmarks" / "training_benchmark"
        base = rab.clean_environ()
        self.env_library = base
        self.env_torch, self.torch_env_note = rab.choose_torch_env(base)

    def library(self, name, min_time, output=None, side="library"):
        cmd = [self.exe, f"--benchmark_filter=^{name}/real_time$", "--benchmark_format=json",
               f"--benchmark_min_time={min_time}"]
        if output:
            cmd.append(f"--output={output}")
        data = json.loads(rab.run_json(cmd, self.env_library))
        if not data["benchmarks"]:
            raise RuntimeError(f"training_benchmark has no case {name}")
        b = data["benchmarks"][0]
        r = rab.gbench_record(b, side, data)
        for k in ("steps_per_s", "last_loss", "inputs_MB"):
            if k in b:
                r[k] = b[k]
        return r

    def torch(self, case, th, min_time, reuse, output=None):
        cmd = [rab.TORCH_PY, PEERS / "torch_training.py", "--case", case, "--threads", th,
               "--min-time", min_time, "--T", T, "--steps", STEPS]
        if output:
            cmd += ["--output", output]
        r = rab.last_json(rab.run_json(cmd, rab.torch_run_env(self.env_torch, th, reuse)))
        r["side"] = "pytorch-reuse" if reuse else "pytorch-default"
        return r


def case_name(case, th, side="library"):
    """The Google Benchmark case of `case` at `th` threads (library-fresh: mha_train_fresh)."""
    if case == "mha_train":
        return f"mha_train{'_fresh' if side == 'library-fresh' else ''}/T:{T}/threads:{th}"
    return f"induction_train/steps:{STEPS}/threads:{th}"


def summarise(runs):
    rows = []
    for key in sorted({(r["case"], r["threads_asked"]) for r in runs}):
        mine = [r for r in runs if (r["case"], r["threads_asked"]) == key]
        sides = {}
        for side in sorted({r["side"] for r in mine}):
            rs = [r for r in mine if r["side"] == side]
            best = min(rs, key=lambda r: r["time_ms"])
            sides[side] = {"time_ms": best["time_ms"], "cpu_ms": min(r["cpu_ms"] for r in rs),
                           "peak_rss_MB": best.get("peak_rss_MB"), "faults": best.get("faults"),
                           "runs": len(rs), "steps_per_s": best.get("steps_per_s"),
                           "last_loss": best.get("last_loss")}
        row = {"case": key[0], "threads": key[1], "sides": sides}
        lib = sides.get("library", {}).get("time_ms")
        torch_best = min((sides[s]["time_ms"] for s in ("pytorch-default", "pytorch-reuse")
                          if s in sides), default=None)
        if lib and torch_best:
            row["library_over_pytorch_best"] = lib / torch_best
        if lib and "pytorch-default" in sides:
            row["library_over_pytorch_default"] = lib / sides["pytorch-default"]["time_ms"]
        if "library-fresh" in sides and torch_best:
            row["library_fresh_over_pytorch_best"] = sides["library-fresh"]["time_ms"] / torch_best
        rows.append(row)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--install-peers", action="store_true",
                   help="install python3-torch first (tools/install_missing.sh)")
    p.add_argument("--rounds", type=int)
    p.add_argument("--min-time", type=float)
    p.add_argument("--threads", default="1,2", help="thread counts for mha_train")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--smoke", action="store_true", help="a short run, marked as such in the data")
    p.add_argument("--note", default="", help="said with the results")
    p.add_argument("--out", default=str(ROOT / "data" / "benchmarks"))
    a = p.parse_args()
    rounds = a.rounds or (1 if a.smoke else 3)
    min_time = a.min_time or (0.3 if a.smoke else 2.0)
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"bad --threads {a.threads!r}")
    if rounds < 1 or min_time <= 0 or not threads or min(threads) < 1:
        p.error("--rounds and --threads must be >= 1, --min-time > 0")
    if a.install_peers:
        subprocess.run([ROOT / "tools" / "install_missing.sh", "python3-torch", "python3-numpy"],
                       check=True)
    sides = Sides(a.build)
    if not sides.exe.exists():
        sys.exit(f"{sides.exe} not found: meson compile -C {a.build} benchmarks "
                 "(needs libbenchmark-dev)")
    if subprocess.run([rab.TORCH_PY, "-c", "import torch"], capture_output=True).returncode:
        sys.exit("PyTorch missing: apt-get install python3-torch (or --install-peers)")

    meta = {
        "kind": "smoke" if a.smoke else "recording", "note": a.note,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": rab.commit(), "machine": rab.machine(),
        "versions": {"compiler": rab.shell("c++ --version | head -n1"),
                     "google_benchmark": rab.shell("dpkg-query -W -f='${Version}' libbenchmark-dev"),
                     "python3-torch": rab.shell("dpkg-query -W -f='${Version}' python3-torch"),
                     "libopenblas0": rab.shell("dpkg-query -W -f='${Version}' libopenblas0-pthread"),
                     "python": rab.shell(f"{rab.TORCH_PY} --version")},
        "command": shlex.join(["benchmarks/run/record_training.py"] + rab.command_args(sys.argv[1:])),
        "rounds": rounds, "min_time_s": min_time, "threads": threads, "T": T, "steps": STEPS,
        "environment": {"pytorch-default": "glibc's default malloc",
                        "pytorch-reuse": rab.REUSE_MALLOC,
                        "pytorch_threads": rab.TORCH_THREADS,
                        "pytorch_openblas": sides.torch_env_note,
                        "library": "default malloc, OpenMP threads = n"},
        "loadavg_before": rab.loadavg(), "loadavg_rounds": [],
        "method": "one process per run; the sides of each case run one after the other, each "
                  "round starting with the next side; a run's time is its mean per call after "
                  "one warm-up call over at least min_time seconds; the summary keeps each "
                  "side's fastest round and its least CPU time",
    }

    work = Path(a.build) / "training-benchmark"
    work.mkdir(parents=True, exist_ok=True)
    mine, theirs = work / "dx-library.bin", work / "dx-torch.bin"
    sides.library(case_name("mha_train", 1), 0.01, output=mine)
    sides.torch("mha_train", 1, 0.01, True, output=theirs)
    lib_ind = sides.library(case_name("induction_train", 1), 0.01)
    torch_ind = sides.torch("induction_train", 1, 0.01, True)
    scale = max(map(abs, rab.read_floats(theirs)), default=0.0)
    checks = {"mha_train_grad_x_max_abs_diff": rab.max_abs_diff(mine, theirs),
              "mha_train_grad_x_max_abs": scale,
              "induction_last_loss": {"library": lib_ind["last_loss"],
                                      "pytorch": torch_ind["last_loss"], "steps": STEPS}}
    rab.log(f"check: |dL/dx - x.grad| <= {checks['mha_train_grad_x_max_abs_diff']:.3g} "
            f"(max |x.grad| {scale:.3g}); "
            f"induction loss after {STEPS} steps: library {lib_ind['last_loss']:.6f}, "
            f"PyTorch {torch_ind['last_loss']:.6f}")
    if not checks["mha_train_grad_x_max_abs_diff"] <= GRAD_BOUND * scale:
        sys.exit(f"the library's dL/dx is {checks['mha_train_grad_x_max_abs_diff']:.3g} from "
                 f"PyTorch's x.grad (bound {GRAD_BOUND} x {scale:.3g}): not the same function")

    cases = [("mha_train", th) for th in threads] + [("induction_train", 1)]
    runs = []
    for rnd in range(rounds):
        meta["loadavg_rounds"].append(rab.loadavg())
        for case, th in cases:
            order = ["library", "pytorch-default", "pytorch-reuse"]
            if case == "mha_train":
                order.insert(1, "library-fresh")
            k = rnd % len(order)
            for side in order[k:] + order[:k]:
                if side.startswith("library"):
                    r = sides.library(case_name(case, th, side), min_time, side=side)
                else:
                    r = sides.torch(case, th, min_time, side == "pytorch-reuse")
                r.update(case=case, threads_asked=th, round=rnd)
                runs.append(r)
            rab.log(f"round {rnd} {case} threads={th}: " + "  ".join(
                f"{r['side']} {r['time_ms']:.1f}" for r in runs[-len(order):]) + " (ms)")

    memory = []
    if not a.no_memory:
        for backend, n in MEMORY:
            r = sides.library(f"sdpa_backward/{backend}/T:{n}/iterations:1", min_time)
            r.update(backend=backend, T=n)
            memory.append(r)
            rab.log(f"sdpa_backward {backend} T={n}: {r['time_ms']:.0f} ms, "
                    f"peak RSS {r['peak_rss_MB']:.0f} MB")
    meta["loadavg_after"] = rab.loadavg()

    summary = summarise(runs)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "training.json").write_text(json.dumps(
        {"meta": meta, "checks": checks, "summary": summary, "memory": memory, "runs": runs},
        indent=1) + "\n")
    rab.log(f"wrote {out / 'training.json'}")
    for row in summary:
        rab.log(f"{row['case']} threads={row['threads']}: " + "  ".join(
            f"{k} {v['time_ms']:.1f}" for k, v in row["sides"].items()))


if __name__ == "__main__":
    main()
