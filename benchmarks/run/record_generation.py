#!/usr/bin/env python3
"""The generation benchmark: Raschka's GPT (124M) generating text, the library beside PyTorch.

    benchmarks/run/record_generation.py [--build build] [--install-peers] [--rounds 3]
        [--min-time 2.0] [--threads 1,2] [--no-uncached] [--smoke] [--allow-dirty]
        [--note TEXT] [--out DIR] [--no-build]

Also `meson compile -C build run-generation-benchmark` (which passes --install-peers).
Cases (benchmarks/cpp/generation_benchmark.cpp and benchmarks/peers/torch_generation.py), every
one at each thread count:
  generate           200 tokens from "Hello, I am" with the KV cache (his gpt_with_kv_cache.py)
  decode/C           one decode step with C tokens cached, C = 16, 64, 256, 1023
  prefill/T          a forward of T tokens without the cache, T = 16, 64, 256, 1024
  generate_no_cache  200 tokens without the cache (his gpt_ch04.py): minutes per run, so one
                     round only (--no-uncached skips it)
Sides, one process per run, the order rotating from round to round (interleaved):
  library          build/benchmarks/generation_benchmark
  library-fma      the same in Arithmetic::fma (decode_fma, prefill_fma): every product by fused
                   multiply-adds; decode and prefill only
  pytorch-default  his script's classes (tools/oracle/reference/kv_cache.py), glibc's malloc
  pytorch-reuse    the same with malloc keeping and reusing freed memory
PyTorch runs with torch.set_num_threads(threads) and OPENBLAS_NUM_THREADS = OMP_NUM_THREADS =
threads. Before timing, the library's 204 ids are compared with PyTorch's (they must be equal).

A decode step reads every weight of the model once but the two embedding tables (one row of
each): `weights_read_MB`. Its tokens per second are therefore bound by this machine's read
bandwidth, measured in the same recording (limits_benchmark's `read`, recording.py):
bound = read GB/s / weights_read_MB; a decode step at context C reads its cache's keys and values
too (`cache_read_MB`, 2 x 12 layers x (C + 1) tokens x 768 floats), and its bound counts them:
read GB/s / (weights_read_MB + cache_read_MB). The summary gives each side's generation as a fraction of
that bound, and of the bound the whole model's size sets (652 MB, 163,009,536 float32). A
prefill is bound by the products instead: the library's against the multiply-then-add limit,
library-fma's against the fused multiply-add limit (recording.py's Limits).

Writes DIR/generation.json (default data/benchmarks/): machine, commit, versions, environment,
load average before, between rounds and after, this CPU's limits, every run, the summary. It
builds the programs it runs (unless --no-build) and refuses to record from a tree with
uncommitted changes unless --allow-dirty (benchmarks/run/provenance.py). Chapter 23's figure
and speed section are generated from it. Not part of the tests. About 55 minutes on a quiet
2-core machine (the generation without the cache about 20 of them; --rounds 2 --no-uncached 25).
"""
import sys
from pathlib import Path

import recording as rec
from recording import log

TOKENS = 200
CONTEXTS = [16, 64, 256, 1023]
PREFILL = [16, 64, 256, 1024]
MODEL_MB = 163009536 * 4 / 1e6  # every parameter of GPT_CONFIG_124M, float32


class Sides(rec.Sides):
    def __init__(self, exe):
        super().__init__()
        self.exe = exe

    def library(self, name, min_time, output=None, side="library"):
        extra = [f"--output={output}"] if output else []
        data = rec.gbench(self.exe, f"{name}/real_time", min_time, extra, self.env_library)
        b = data["benchmarks"][0]
        r = rec.gbench_record(b, side, data)
        for k in ("new_tokens_per_s", "weights_read_MB", "cache_read_MB"):
            if k in b:
                r[k] = b[k]
        return r

    def torch(self, case, arg, th, min_time, reuse, output=None):
        args = ["--case", case, "--min-time", min_time]
        if case.startswith("generate"):
            args += ["--tokens", TOKENS]
        elif case == "decode":
            args += ["--context", arg]
        else:
            args += ["--T", arg]
        return self.run_torch("torch_generation.py", args, th, reuse, output)


def case_name(case, arg, th, side="library"):
    """The Google Benchmark case of `case` (with its context or T) at `th` threads (library-fma:
    decode_fma, prefill_fma)."""
    if case == "generate_no_cache":  # one iteration: minutes per run
        return f"{case}/tokens:{TOKENS}/threads:{th}/iterations:1"
    if case.startswith("generate"):
        return f"{case}/tokens:{TOKENS}/threads:{th}"
    tail = "_fma" if side == "library-fma" else ""
    return f"{case}{tail}/{'context' if case == 'decode' else 'T'}:{arg}/threads:{th}"


def summarise(runs, limits, weights_mb):
    """Per case, argument and thread count, each side's fastest run, its tokens per second
    where it generates, and those as a fraction of the read-bandwidth bounds."""
    rows = []
    for key in sorted({(r["case"], r["arg"], r["threads_asked"]) for r in runs}, key=str):
        case, arg, th = key
        mine = [r for r in runs if (r["case"], r["arg"], r["threads_asked"]) == key]
        sides = rec.fastest(mine, "time_ms", extra=("new_tokens_per_s",))
        read = limits.peak.get(rec.limit_key("read", limits.library_isa, th))
        # a decode step also reads its cache's keys and values (the library's counter)
        cache_mb = next((r["cache_read_MB"] for r in mine if r.get("cache_read_MB")), 0.0)
        for side, s in sides.items():
            if case in ("generate", "decode") and read:
                per_s = s["new_tokens_per_s"] if case == "generate" else 1e3 / s["time_ms"]
                s["tokens_per_s"] = per_s
                if case == "decode":
                    s["cache_read_MB"] = cache_mb
                s["bound_tokens_per_s"] = read["value"] * 1e3 / (weights_mb + (cache_mb if case == "decode" else 0.0))
                s["fraction_of_bound"] = per_s / s["bound_tokens_per_s"]
                s["fraction_of_model_size_bound"] = per_s / (read["value"] * 1e3 / MODEL_MB)
                s["bound_limit"] = rec.limit_key("read", limits.library_isa, th)
            elif s.get("GFLOPs"):
                s.update(limits.fraction(s, side, th))
        row = rec.ratios({"case": case, "arg": arg, "threads": th, "sides": sides}, sides)
        if "library-fma" in sides and "library" in sides:
            row["library_fma_over_library"] = sides["library-fma"]["time_ms"] / sides["library"]["time_ms"]
        rows.append(row)
    return rows


def main():
    p = rec.parser(__doc__, rounds=3, min_time=2.0)
    p.add_argument("--install-peers", action="store_true",
                   help="install python3-torch first (tools/install_missing.sh)")
    p.add_argument("--threads", default="1,2", help="thread counts")
    p.add_argument("--no-uncached", action="store_true", help="skip the 200 tokens without the cache")
    a = p.parse_args()
    rounds, min_time = rec.rounds_and_time(p, a)
    threads = rec.thread_counts(p, a.threads)
    rec.need_torch(a)
    exe, _ = rec.programs(a, ["generation_benchmark", "limits_benchmark"])
    sides = Sides(exe)
    recording = rec.Recording(
        a, "benchmarks/run/record_generation.py", rec.provenance.MEASURED["generation.json"],
        min_time, rounds, versions=rec.versions(exe, **rec.torch_versions()),
        threads=threads, tokens=TOKENS, contexts=CONTEXTS, prefill=PREFILL, model_MB=MODEL_MB,
        environment={"pytorch-default": "glibc's default malloc",
                     "pytorch-reuse": rec.REUSE_MALLOC, "pytorch_threads": rec.TORCH_THREADS,
                     "pytorch_openblas": sides.torch_env_note,
                     "library": "default malloc, OpenMP threads = n"},
        bound="a decode step reads every weight once but the embedding tables, and its cache: tokens/s <= read "
              "bandwidth / (weights_read_MB + cache_read_MB) (and <= read bandwidth / model_MB, the model's size)")

    work = Path(a.build) / "generation-benchmark"
    work.mkdir(parents=True, exist_ok=True)
    mine, theirs = work / "ids-library.bin", work / "ids-torch.bin"
    lib = sides.library(case_name("generate", 0, 1), 0.01, output=mine)
    sides.torch("generate", 0, 1, 0.01, True, output=theirs)
    same = mine.read_bytes() == theirs.read_bytes()
    log(f"check: the library's {TOKENS + 4} ids {'equal' if same else 'DIFFER from'} PyTorch's")
    if not same:
        sys.exit("the library's generated ids differ from PyTorch's: not the same model")
    weights_mb = lib["weights_read_MB"]

    recording.measure_limits(threads)
    cases = [("generate", 0, th) for th in threads]
    cases += [("decode", c, th) for c in CONTEXTS for th in threads]
    cases += [("prefill", t, th) for t in PREFILL for th in threads]
    if a.smoke:  # a smoke run proves each kind of case runs, at the smallest size
        cases = [c for c in cases if c[0] == "generate" or c[1] in (CONTEXTS[0], PREFILL[0])]
    runs = []
    for rnd in range(rounds):
        recording.round_starts()
        for case, arg, th in cases:
            order = ["library", "pytorch-default", "pytorch-reuse"]
            if case in ("decode", "prefill"):
                order[1:1] = ["library-fma"]
            for side in rec.interleaved(order, rnd):
                if side.startswith("library"):
                    r = sides.library(case_name(case, arg, th, side), min_time, side=side)
                else:
                    r = sides.torch(case, arg, th, min_time, side == "pytorch-reuse")
                r.update(case=case, arg=arg, threads_asked=th, round=rnd)
                runs.append(r)
            log(f"round {rnd} {case} {arg or ''} threads={th}: " + "  ".join(
                f"{r['side']} {r['time_ms']:.1f}" for r in runs[-len(order):]) + " (ms)")
    if not a.no_uncached and not a.smoke:
        recording.round_starts()
        for th in threads:
            for side in ["library", "pytorch-default", "pytorch-reuse"]:
                r = (sides.library(case_name("generate_no_cache", 0, th), min_time) if side == "library"
                     else sides.torch("generate_no_cache", 0, th, 0.01, side == "pytorch-reuse"))
                r.update(case="generate_no_cache", arg=0, threads_asked=th, round=rounds)
                runs.append(r)
                log(f"generate_no_cache threads={th}: {side} {r['time_ms'] / 1e3:.1f} s")
    recording.measure_limits(threads)

    summary = summarise(runs, recording.limits, weights_mb)
    recording.write("generation.json", {"checks": {"ids_equal": same, "weights_read_MB": weights_mb},
                                        "summary": summary, "runs": runs})
    for row in summary:
        log(f"{row['case']} {row['arg'] or ''} threads={row['threads']}: " + "  ".join(
            f"{k} {v['time_ms']:.1f} ms" + (f" ({100 * v['fraction_of_bound']:.0f} % of the bound)"
                                            if v.get("fraction_of_bound") else "")
            for k, v in row["sides"].items()))


if __name__ == "__main__":
    main()
