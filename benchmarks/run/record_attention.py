#!/usr/bin/env python3
"""The attention benchmark: the library beside PyTorch and ONNX Runtime, one command.

    benchmarks/run/record_attention.py [--build build] [--install-peers] [--rounds 3]
        [--min-time 1.0] [--modules mha,gqa,...] [--sizes 256,1024,4096] [--threads 1,2]
        [--no-ort] [--no-pieces] [--no-profile] [--smoke] [--allow-dirty] [--note TEXT]
        [--out DIR] [--no-build]

Also `meson compile -C build run-attention-benchmark` (which passes --install-peers).
It builds the programs it runs (unless --no-build) and refuses to record from a tree with
uncommitted changes unless --allow-dirty (benchmarks/run/provenance.py).
For every entry of benchmarks/run/table.py (module and configuration), every size and
thread count, each round runs, one process per run and in an order that rotates from round
to round (interleaved):
  library           build/benchmarks/module_benchmark --module=KEY (the module's operator())
  library-fma       the same with --arithmetic=fma: every product by fused multiply-adds
                    (lib/attn/kernels/arithmetic.hpp), same bits at any thread count
  pytorch-default   benchmarks/peers/torch_side.py, Raschka's class, glibc's default malloc,
                    torch.set_num_threads(n) and OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = n
                    (Debian's OpenBLAS otherwise starts a thread per core of its own)
  pytorch-reuse     the same with malloc told to keep and reuse freed memory (MALLOC_MMAP_MAX_=0,
                    MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ large): PyTorch at its
                    best here, as it then takes no page faults for its [B, H, T, T] tensors
  ort-<variant>     benchmarks/peers/onnxruntime/run.mjs on the entry's ONNX models
                    (benchmarks/peers/onnx_models.py, built once into BUILD/benchmark-models)
and keeps each side's fastest round (min of wall time; CPU time, peak RSS and page faults are
recorded for every run). Before timing, each (entry, size) is checked: the library's (in
both arithmetics) and every ONNX model's output against PyTorch's, from the same seeded
weights and input, and the fma output against the exact one (largest difference, and in ulp
of the largest output); a model further than ORT_BOUND from PyTorch is refused. Then, unless
--no-pieces, MultiHeadAttention's forward and its pieces in both arithmetics
(benchmarks/cpp/attention_benchmark.cpp: mha_forward, mha_forward_fma, ...) and, unless
--no-profile, ONNX Runtime's own per-operator profile of its fused operators, for whoever
tunes the kernels.

Writes DIR/attention.json (default data/benchmarks/): the machine, commit, versions of every
peer, environment, load average before, between rounds and after, this CPU's limits measured
before the first round and after the last (recording.py), every run, the summary (each side's
fraction of the limit that binds it: the exact library's the separate multiply-and-add limit,
library-fma's and the peers' the fused multiply-add limit).
The book's benchmarks page and its plot are generated from it when the docs are built.
--smoke marks a short run (1 round, 0.3 s per run unless given) as such in the data.
Not part of the tests. The full default recording takes under an hour on a quiet 2-core
machine (most of it PyTorch at T = 4096 and the modules not yet on the fast path).
"""
import json
import subprocess
import sys
from pathlib import Path

import recording as rec
import table
from recording import PEERS, TORCH_PY, log

ORT_BOUND = 1e-5     # largest |ONNX Runtime - PyTorch| accepted (outputs are below 1.5)
FUSED = ("attention", "mha", "gqa")
PIECES = ("mha_forward", "mha_forward_fma", "mha_projections", "mha_scores", "mha_mask_softmax",
          "mha_weights_values", "mha_projections_fma", "mha_scores_fma", "mha_weights_values_fma")


class Sides(rec.Sides):
    """How to run each side; every run returns one record (a dict)."""

    def __init__(self, a, module_exe, pieces_exe):
        super().__init__()
        self.module_exe, self.pieces_exe = module_exe, pieces_exe
        self.models = Path(a.models_dir or Path(a.build) / "benchmark-models")
        self.env_ort = self.env_library

    def library(self, entry, T, th, min_time, output=None, fma=False):
        name = f"forward/{entry.key}/T:{T}/threads:{th}/real_time"
        extra = [f"--module={entry.key}", f"--T={T}", f"--threads={th}",
                 f"--arithmetic={'fma' if fma else 'exact'}"]
        if output:
            extra.append(f"--output={output}")
        data = rec.gbench(self.module_exe, None, min_time, extra, self.env_library)
        b = next(b for b in data["benchmarks"] if b["name"] == name)
        return rec.gbench_record(b, "library-fma" if fma else "library", data)

    def torch(self, entry, T, th, min_time, reuse, output=None):
        return self.run_torch("torch_side.py", ["--entry", entry.key, "--T", T,
                                                "--min-time", min_time], th, reuse, output)

    def model_dir(self, entry, T):
        return self.models / f"{entry.key}-T{T}"

    def build_models(self, entry, T):
        d = self.model_dir(entry, T)
        manifest = d / "manifest.json"
        if manifest.is_file() and json.loads(manifest.read_text())["variants"] == list(entry.ort) \
                and all((d / f"{v}.onnx").is_file() for v in entry.ort):
            return json.loads(manifest.read_text())
        log(f"building ONNX models for {entry.key} T={T} in {d}")
        return rec.last_json(rec.run_json([TORCH_PY, PEERS / "onnx_models.py", "--entry",
                                           entry.key, "--T", T, "--out", d], self.env_torch))

    def ort(self, entry, T, th, variant, min_time, profile=None):
        d = self.model_dir(entry, T)
        cmd = ["node", PEERS / "onnxruntime" / "run.mjs", "--model", d / f"{variant}.onnx",
               "--dir", d, "--threads", th, "--min-time", min_time]
        if profile:
            cmd += ["--profile", profile]
        r = rec.last_json(rec.run_json(cmd, self.env_ort))
        r["side"] = f"ort-{variant}"
        if not r["max_abs_diff"] <= ORT_BOUND:
            raise RuntimeError(f"ONNX Runtime's {variant} model of {entry.key} at T={T} is "
                               f"{r['max_abs_diff']:.3g} from PyTorch (bound {ORT_BOUND})")
        return r

    def piece(self, name, min_time):
        data = rec.gbench(self.pieces_exe, name, min_time, env=self.env_library)
        return rec.gbench_record(data["benchmarks"][0], "library", data)


def versions(sides):
    ort_pkg = PEERS / "onnxruntime" / "node_modules" / "onnxruntime-node" / "package.json"
    return rec.versions(
        sides.module_exe, **rec.torch_versions(), **{"python3-onnx": rec.dpkg("python3-onnx")},
        **{"onnxruntime-node": json.loads(ort_pkg.read_text())["version"] if ort_pkg.is_file() else None,
           "node": rec.shell("node --version")})


def summarise(runs, entries, sizes_of, threads, limits):
    rows = []
    for entry in entries:
        for T in sizes_of(entry):
            for th in threads:
                mine = [r for r in runs if r["entry"] == entry.key and r["T"] == T
                        and r["threads_asked"] == th]
                sides = rec.fastest(mine, "time_ms", extra=("max_abs_diff",))
                if "library" not in sides:
                    continue
                for side, s in sides.items():  # every side credited with the same count
                    s["GFLOPs"] = table.flops(entry, T) / s["time_ms"] / 1e6
                    s.update(limits.fraction(s, side, th))
                row = rec.ratios({"entry": entry.key, "T": T, "threads": th, "sides": sides}, sides)
                lib = sides["library"]["time_ms"]
                fma = sides.get("library-fma", {}).get("time_ms")
                if fma:
                    row["library_fma_over_library"] = fma / lib
                fused = [s for s in sides if s.startswith("ort-") and s[4:] in FUSED]
                if fused:
                    best = min(fused, key=lambda s: sides[s]["time_ms"])
                    row["ort_best_fused"] = best
                    row["library_over_ort_best_fused"] = lib / sides[best]["time_ms"]
                    if fma:
                        row["library_fma_over_ort_best_fused"] = fma / sides[best]["time_ms"]
                if "ort-exported" in sides:
                    row["library_over_ort_exported"] = lib / sides["ort-exported"]["time_ms"]
                rows.append(row)
    return rows


def ort_profile_summary(path):
    """ONNX Runtime's profile (Chrome trace JSON) of one session: per operator type, its
    share of the nodes' time (%) and how many of its runs used a second thread."""
    per_op, total = {}, 0.0
    for e in json.loads(Path(path).read_text()):
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        args = e.get("args", {})
        op = per_op.setdefault(args.get("op_name", "?"), {"us": 0.0, "runs": 0, "parallel": 0})
        op["us"] += e.get("dur", 0)
        op["runs"] += 1
        stats = args.get("thread_scheduling_stats") or {}  # "" when the op ran unthreaded
        subs = stats.get("sub_threads", {}) if isinstance(stats, dict) else {}
        op["parallel"] += any(int(t.get("num_run", 0)) > 0 for t in subs.values())
        total += e.get("dur", 0)
    return {name: {"share_percent": round(100 * op["us"] / total, 1), "runs": op["runs"],
                   "runs_on_two_or_more_threads": op["parallel"]}
            for name, op in sorted(per_op.items(), key=lambda kv: -kv[1]["us"])} if total else {}


# ----------------------------------------------------------------------------- main

def main():
    p = rec.parser(__doc__, rounds=3, min_time=1.0)
    p.add_argument("--install-peers", action="store_true",
                   help="run benchmarks/peers/install_peers.sh first")
    p.add_argument("--modules", help="entries of benchmarks/run/table.py (default: all)")
    p.add_argument("--sizes", help="token counts for every entry (default: each entry's own)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--no-pieces", action="store_true")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--models-dir")
    a = p.parse_args()
    rounds, min_time = rec.rounds_and_time(p, a)
    try:
        keys = a.modules.split(",") if a.modules else [e.key for e in table.ENTRIES]
        entries = [table.BY_KEY[k] for k in keys]
        sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else None
        threads = [int(t) for t in a.threads.split(",")]
    except (KeyError, ValueError) as e:
        p.error(f"bad --modules/--sizes/--threads ({e}); modules: {', '.join(table.BY_KEY)}")
    sizes_of = (lambda e: sizes) if sizes else (lambda e: list(e.sizes))

    if a.install_peers:
        subprocess.run([PEERS / "install_peers.sh"], check=True)
    module_exe, pieces_exe, _ = rec.programs(a, ["module_benchmark", "attention_benchmark",
                                                 "limits_benchmark"])
    sides = Sides(a, module_exe, pieces_exe)
    if subprocess.run([TORCH_PY, "-c", "import torch, onnx"], capture_output=True).returncode:
        sys.exit("PyTorch or ONNX missing: benchmarks/peers/install_peers.sh (or --install-peers)")
    use_ort = not a.no_ort
    if use_ort and subprocess.run(["node", "-e", "require('onnxruntime-node')"],
                                  cwd=PEERS / "onnxruntime", capture_output=True).returncode:
        sys.exit("onnxruntime-node missing: benchmarks/peers/install_peers.sh (or --no-ort)")
    log(f"PyTorch environment: {sides.torch_env_note}")

    recording = rec.Recording(
        a, "benchmarks/run/record_attention.py", rec.provenance.MEASURED["attention.json"],
        min_time, rounds, versions=versions(sides), threads=threads,
        environment={"pytorch-default": "glibc's default malloc",
                     "pytorch-reuse": rec.REUSE_MALLOC, "pytorch_openblas": sides.torch_env_note,
                     "pytorch_threads": rec.TORCH_THREADS,
                     "library": "default malloc, OpenMP threads = threads",
                     "onnxruntime": "default malloc, CPU arena, intra-op threads = threads, "
                                    "1 inter-op thread, all graph optimisations"},
        ort_bound=ORT_BOUND,
        flops="2 per multiply-add of the projections, plus scores and weights @ values on the "
              "visible query/key pairs only (table.flops); softmax not counted")

    # Correctness: the same function on every side (and the models built).
    checks = []
    work = Path(sides.models)
    work.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        for T in sizes_of(entry):
            ya, yb = work / f"check-{entry.key}-{T}-library.bin", work / f"check-{entry.key}-{T}-torch.bin"
            yf = work / f"check-{entry.key}-{T}-library-fma.bin"
            sides.library(entry, T, 1, 0.01, output=ya)
            sides.library(entry, T, 1, 0.01, output=yf, fma=True)
            sides.torch(entry, T, 1, 0.01, True, output=yb)  # reusing malloc: same result, sooner
            check = {"entry": entry.key, "T": T, "library_vs_pytorch": rec.max_abs_diff(ya, yb),
                     "library_fma_vs_pytorch": rec.max_abs_diff(yf, yb),
                     "library_fma_vs_library": rec.max_abs_diff(yf, ya),
                     "library_fma_vs_library_ulp": rec.ulps_of_largest(yf, ya),
                     "library_max_abs": rec.max_abs(ya)}
            if use_ort and entry.ort:
                check["models"] = sides.build_models(entry, T)
                check["ort_vs_pytorch"] = {v: sides.ort(entry, T, 1, v, 0.01)["max_abs_diff"]
                                           for v in entry.ort}
            checks.append(check)
            log(f"check {entry.key} T={T}: largest |difference| from PyTorch: library "
                f"{check['library_vs_pytorch']:.2g}, library-fma {check['library_fma_vs_pytorch']:.2g} "
                f"(from the exact library: {check['library_fma_vs_library_ulp']:.3g} ulp of the "
                f"largest output)" + "".join(
                    f", ort-{v} {d:.2g}" for v, d in check.get("ort_vs_pytorch", {}).items()))

    recording.measure_limits(threads)
    runs = []
    for rnd in range(rounds):
        recording.round_starts()
        for entry in entries:
            for T in sizes_of(entry):
                for th in threads:
                    order = ["library", "library-fma", "pytorch-default", "pytorch-reuse"]
                    if use_ort:
                        order += [f"ort-{v}" for v in entry.ort]
                    for side in rec.interleaved(order, rnd):
                        if side.startswith("library"):
                            r = sides.library(entry, T, th, min_time, fma=side == "library-fma")
                        elif side.startswith("pytorch"):
                            r = sides.torch(entry, T, th, min_time, side == "pytorch-reuse")
                        else:
                            r = sides.ort(entry, T, th, side[4:], min_time)
                        r.update(entry=entry.key, T=T, threads_asked=th, round=rnd)
                        runs.append(r)
                    line = "  ".join(f"{r['side']} {r['time_ms']:.1f}" for r in runs[-len(order):])
                    log(f"round {rnd} {entry.key} T={T} threads={th}: {line} (ms)")

    pieces, profiles = [], []
    if not a.no_pieces and "mha" in keys:
        for th in threads:
            for T in sizes_of(table.BY_KEY["mha"]):
                if T not in (256, 1024, 4096):
                    continue
                for name in PIECES:
                    r = sides.piece(f"{name}/T:{T}/threads:{th}/real_time", min(min_time, 0.5))
                    r.update(T=T, piece=name)
                    pieces.append(r)
            pieces.append(sides.piece(f"sgemm_1024/threads:{th}/real_time", 0.5))
            pieces.append(sides.piece(f"sgemm_1024_fma/threads:{th}/real_time", 0.5))
        pieces.append(sides.piece("blas_sgemm_1024/threads:1/real_time", 0.5))
    if use_ort and not a.no_profile and "mha" in keys:
        mha = table.BY_KEY["mha"]
        T = 1024 if 1024 in sizes_of(mha) else sizes_of(mha)[0]
        for th in threads:
            for v in ("exported",) + FUSED:
                path = work / f"profile-mha-{T}-{th}-{v}.json"
                r = sides.ort(mha, T, th, v, min(min_time, 0.5), profile=path)
                profiles.append({"entry": "mha", "T": T, "threads": th, "variant": v,
                                 "time_ms": r["time_ms"], "cpu_ms": r["cpu_ms"],
                                 "operators": ort_profile_summary(path)})
    recording.measure_limits(threads)
    for piece in pieces:
        side = "library-fma" if piece["name"].split("/")[0].endswith("_fma") else "library"
        piece.update(recording.limits.fraction(piece, side, int(piece.get("threads") or 1)))

    summary = summarise(runs, entries, sizes_of, threads, recording.limits)
    entries_info = [{"key": e.key, "title": e.title, "source": e.source, "notes": e.notes,
                     "torch_class": e.torch_class, "torch_args": e.torch_args,
                     "ort": list(e.ort)} for e in entries]
    recording.write("attention.json", {"entries": entries_info, "summary": summary,
                                       "checks": checks, "pieces": pieces,
                                       "ort_profiles": profiles, "runs": runs})
    for row in summary:
        s = row["sides"]
        log(f"{row['entry']:8s} T={row['T']:5d} threads={row['threads']}: " +
            "  ".join(f"{k} {v['time_ms']:.1f}" for k, v in s.items()))


if __name__ == "__main__":
    main()
