#!/usr/bin/env python3
"""The pretraining benchmark: one training step of Raschka's GPT-2 (124M) on his chapter 5
shapes, its parts, and the whole training run's time, the library beside PyTorch.

    benchmarks/run/record_pretraining.py [--build build] [--install-peers] [--rounds 2]
        [--min-time 2.0] [--threads 1,2] [--cases train_step,...] [--sample-rounds 1]
        [--smoke] [--allow-dirty] [--note TEXT] [--out DIR] [--no-build]

Also `meson compile -C build run-pretraining-benchmark` (which passes --install-peers).
Cases (benchmarks/cpp/pretraining_benchmark.cpp and benchmarks/peers/torch_pretraining.py), each
on GPTModel(GPT_CONFIG_124M with context_length 256) after manual_seed(123), AdamW(lr=0.0004,
weight_decay=0.1), a batch of 2 x 256 token ids, at each thread count:
  train_step    one step of his train_model_simple: zero_grad, calc_loss_batch with dropout,
                backward, optimizer.step()
  forward       the training forward (what the backward needs kept)
  backward      the loss's and the model's backward
  optimizer     AdamW's step over the 163 million parameters
  eval_forward  calc_loss_batch in evaluation mode without a gradient
  sample        his generate_and_print_sample: 50 greedy tokens after "Every effort moves you"
                without a cache (forwards of 4 to 53 tokens at batch 1); minutes per run in
                PyTorch, so in the first --sample-rounds rounds only (default 1)
  part_head, part_projections, part_attention, part_feed_forward
                the library alone: a step's parts by kind of layer, each forward and backward on
                the step's shapes over all 12 blocks (the output head; W_query, W_key, W_value
                and out_proj; MultiHeadAttention whole, so that the attention core is its time
                less the projections'; FeedForward). `shares` gives each one's time over the
                library's train_step at the same thread count.
Sides, one process per run, the order rotating from round to round (interleaved):
  library          build/benchmarks/pretraining_benchmark (Google Benchmark: one warm-up call,
                   then iterations filling --min-time)
  pytorch-default  his own chapter 5 code (previous_chapters.py and his cells In [2], [3], [24],
                   [26]) on Debian's python3-torch 1.13, glibc's malloc: one warm-up call, then
                   calls filling --min-time, at most 3 (a training step takes seconds), the
                   fastest kept
  pytorch-reuse    the same with malloc keeping and reusing freed memory
PyTorch runs with torch.set_num_threads(threads) and OPENBLAS_NUM_THREADS = OMP_NUM_THREADS =
threads. The library's numbers are those of the exact arithmetic (every product in the
reference BLAS's order): its GFLOP/s are read against the machine's multiply-then-add limit,
PyTorch's (free to fuse) against the fused multiply-add limit, both measured in the same
recording (recording.py's Limits). Per case and thread count the summary keeps each side's
fastest round, its fraction of the limit, and `pytorch_over_library` (each PyTorch side's
time over the library's, and the best of the two's).

The whole run (`whole_run`): his In [27] trains for 10 epochs over the 9 training batches of
2 x 256 tokens (In [22]): 90 steps; it evaluates when global_step % 5 == 0 (steps 0, 5, ..., 85:
18 evaluations), each the loss of min(5, 9) training batches and min(5, 1) validation batch
(also 2 x 256): 6 eval forwards; after each epoch one sample. Projected per side and thread
count from the fastest runs:
    run = 90 x train_step + 108 x eval_forward + 10 x sample
(what it leaves out: building the model and the loaders, the first step's allocation of
AdamW's state, printing; each well under a training step). A side without one of the three
cases at a thread count gets no projection there.

Writes DIR/pretraining.json (default data/benchmarks/): machine, commit, versions, environment,
load average before, between rounds and after, this CPU's limits, every run, the summary, the
whole run. It builds the programs it runs (unless --no-build) and refuses to record from a tree
with uncommitted changes unless --allow-dirty (benchmarks/run/provenance.py). Chapter 26's
speed section is generated from it (benchmarks/pages/sections.py, `pretraining`). Not part of
the tests. About 35 minutes on a quiet 2-core machine (estimated from the CPU times of a smoke
run on a loaded one: the first round, with the sample, about 20 of them, PyTorch's sample and
training step most of that); --smoke about 20, --smoke --threads 2 about 8.
"""
import recording as rec
from recording import log

PARTS = ["part_head", "part_projections", "part_attention", "part_feed_forward"]
CASES = ["train_step", "forward", "backward", "optimizer", "eval_forward", "sample"] + PARTS
SIDES = ["library", "pytorch-default", "pytorch-reuse"]
# His run (ch05 In [20]-[27]): how many of each case it runs.
RUN = {"train_step": 90, "eval_forward": 18 * 6, "sample": 10}
RUN_MODEL = ("his In [27]: 10 epochs x 9 training batches of 2 x 256 tokens = 90 train_step; "
             "evaluations at global_step % 5 == 0 (0, 5, ..., 85) = 18, each calc_loss_loader over "
             "min(5, 9) training batches and min(5, 1) validation batch (2 x 256) = 108 eval_forward; "
             "one generate_and_print_sample per epoch = 10 sample (50 greedy tokens without a cache: "
             "forwards of 4 to 53 tokens at batch 1). run = 90 train_step + 108 eval_forward + "
             "10 sample, each side's fastest run; building the model and loaders, AdamW's first "
             "allocation of its state and the prints are left out")
PEER_ITERATIONS = 3  # PyTorch: at most this many timed calls after the warm-up


class Sides(rec.Sides):
    def __init__(self, exe):
        super().__init__()
        self.exe = exe

    def library(self, case, th, min_time):
        data = rec.gbench(self.exe, f"{case}/threads:{th}/real_time", min_time, (), self.env_library)
        b = data["benchmarks"][0]
        r = rec.gbench_record(b, "library", data)
        r["tokens_per_s"] = b.get("tokens_per_s")
        return r

    def torch(self, case, th, min_time, max_iterations, reuse):
        return self.run_torch("torch_pretraining.py", ["--case", case, "--min-time", min_time,
                                                       "--max-iterations", max_iterations], th, reuse)


def summarise(runs, limits):
    """Per case and thread count, each side's fastest run, its fraction of the limit that
    binds it, and PyTorch's times over the library's."""
    rows = []
    keys = sorted({(r["case"], r["threads_asked"]) for r in runs}, key=lambda k: (CASES.index(k[0]), k[1]))
    for case, th in keys:
        mine = [r for r in runs if (r["case"], r["threads_asked"]) == (case, th)]
        sides = rec.fastest(mine, "time_ms", extra=("tokens_per_s",))
        for side, s in sides.items():
            if s.get("GFLOPs"):
                s.update(limits.fraction(s, side, th))
        row = rec.ratios({"case": case, "threads": th, "sides": sides}, sides)
        row["pytorch_over_library"] = over_library(sides, lambda s: s["time_ms"])
        rows.append(row)
    return rows


def over_library(sides, value):
    """{peer side: its value over the library's, "best": the least peer's over the library's}."""
    if "library" not in sides:
        return {}
    lib = value(sides["library"])
    out = {p: value(sides[p]) / lib for p in rec.PEER_SIDES if p in sides}
    if out:
        out["best"] = min(out.values())
    return out


def whole_run(summary, threads):
    """His whole run projected per thread count and side from the summary's fastest runs."""
    rows = []
    for th in threads:
        pieces = {r["case"]: r["sides"] for r in summary if r["threads"] == th and r["case"] in RUN}
        sides = {}
        for side in SIDES:
            if all(side in pieces.get(case, {}) for case in RUN):
                parts = {case: n * pieces[case][side]["time_ms"] / 1e3 for case, n in RUN.items()}
                sides[side] = {**{f"{case}_s": v for case, v in parts.items()}, "total_s": sum(parts.values())}
        if sides:
            rows.append({"threads": th, "sides": sides,
                         "pytorch_over_library": over_library(sides, lambda s: s["total_s"])})
    return {"counts": RUN, "model": RUN_MODEL, "rows": rows}


def shares(summary, threads):
    """Per thread count, each part's time over the library's train_step (the attention core:
    part_attention less part_projections), where both were run."""
    rows = []
    for th in threads:
        lib = {r["case"]: r["sides"]["library"]["time_ms"] for r in summary
               if r["threads"] == th and "library" in r["sides"]}
        if "train_step" not in lib or not any(p in lib for p in PARTS):
            continue
        row = {"threads": th, "train_step_ms": lib["train_step"]}
        row.update({p[len("part_"):]: lib[p] / lib["train_step"] for p in PARTS if p in lib})
        if "part_attention" in lib and "part_projections" in lib:
            row["attention_core"] = (lib["part_attention"] - lib["part_projections"]) / lib["train_step"]
        rows.append(row)
    return rows


def main():
    p = rec.parser(__doc__, rounds=2, min_time=2.0)
    p.add_argument("--install-peers", action="store_true",
                   help="install python3-torch first (tools/install_missing.sh)")
    p.add_argument("--threads", default="1,2", help="thread counts")
    p.add_argument("--cases", default=",".join(CASES), help=f"some of {','.join(CASES)}")
    p.add_argument("--sample-rounds", type=int, default=1,
                   help="rounds that run the sample case (minutes per PyTorch run)")
    a = p.parse_args()
    rounds, min_time = rec.rounds_and_time(p, a)
    threads = rec.thread_counts(p, a.threads)
    cases = a.cases.split(",")
    if not cases or any(c not in CASES for c in cases):
        p.error(f"--cases takes some of {','.join(CASES)}")
    if a.sample_rounds < 0:
        p.error("--sample-rounds must be >= 0")
    peer_iterations = 1 if a.smoke else PEER_ITERATIONS
    rec.need_torch(a)
    exe, _ = rec.programs(a, ["pretraining_benchmark", "limits_benchmark"])
    sides = Sides(exe)
    recording = rec.Recording(
        a, "benchmarks/run/record_pretraining.py", rec.provenance.MEASURED["pretraining.json"],
        min_time, rounds, versions=rec.versions(exe, **rec.torch_versions()),
        threads=threads, cases=cases, sample_rounds=min(a.sample_rounds, rounds),
        peer_max_iterations=peer_iterations,
        shapes={"config": "GPT_CONFIG_124M, context_length 256", "batch": 2, "tokens": 256,
                "sample": "50 new tokens after 4, batch 1, no cache", "seed": 123,
                "optimizer": "AdamW(lr=0.0004, weight_decay=0.1)"},
        environment={"pytorch-default": "glibc's default malloc",
                     "pytorch-reuse": rec.REUSE_MALLOC, "pytorch_threads": rec.TORCH_THREADS,
                     "pytorch_openblas": sides.torch_env_note,
                     "pytorch_timing": f"one warm-up call, then calls filling min_time, at least 1, at most "
                                       f"{peer_iterations}; the fastest call",
                     "library": "default malloc, OpenMP threads = n; Google Benchmark: one warm-up call, "
                                "then iterations filling min_time, their mean"})

    recording.measure_limits(threads)
    runs = []
    for rnd in range(rounds):
        recording.round_starts()
        for case in cases:
            if case == "sample" and rnd >= a.sample_rounds:
                continue
            for th in threads:
                sides_run = ["library"] if case in PARTS else rec.interleaved(SIDES, rnd)
                for side in sides_run:
                    if side == "library":
                        r = sides.library(case, th, min_time)
                    else:
                        r = sides.torch(case, th, min_time, peer_iterations, side == "pytorch-reuse")
                    r.update(case=case, threads_asked=th, round=rnd)
                    runs.append(r)
                log(f"round {rnd} {case} threads={th}: " + "  ".join(
                    f"{r['side']} {r['time_ms']:.0f}" for r in runs[-len(sides_run):]) + " (ms)")
    recording.measure_limits(threads)

    summary = summarise(runs, recording.limits)
    run = whole_run(summary, threads)
    recording.write("pretraining.json", {"summary": summary, "whole_run": run,
                                         "shares": shares(summary, threads), "runs": runs})
    for row in summary:
        log(f"{row['case']} threads={row['threads']}: " + "  ".join(
            f"{k} {v['time_ms']:.0f} ms" + (f" ({100 * v['fraction']:.0f} % of {v['limit']})"
                                           if v.get("fraction") else "")
            for k, v in row["sides"].items()))
    for row in run["rows"]:
        log(f"whole run, threads={row['threads']}: " + "  ".join(
            f"{k} {v['total_s'] / 60:.1f} min" for k, v in row["sides"].items()))


if __name__ == "__main__":
    main()
