#!/usr/bin/env python3
"""The attention benchmark: the library beside PyTorch and ONNX Runtime, one command.

    benchmarks/run/record_attention.py [--build build] [--install-peers] [--rounds 3]
        [--min-time 1.0] [--modules mha,gqa,...] [--sizes 256,1024,4096] [--threads 1,2]
        [--no-ort] [--no-pieces] [--no-profile] [--smoke] [--note TEXT] [--out DIR]

Also `meson compile -C build run-attention-benchmark` (which passes --install-peers).
For every entry of benchmarks/run/table.py (module and configuration), every size and
thread count, each round runs, one process per run and in an order that rotates from round
to round (interleaved):
  library           build/benchmarks/module_benchmark --module=KEY (the module's operator())
  pytorch-default   benchmarks/peers/torch_side.py, Raschka's class, glibc's default malloc,
                    torch.set_num_threads(n) and OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = n
                    (Debian's OpenBLAS otherwise starts a thread per core of its own)
  pytorch-reuse     the same with malloc told to keep and reuse freed memory (MALLOC_MMAP_MAX_=0,
                    MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ large): PyTorch at its
                    best here, as it then takes no page faults for its [B, H, T, T] tensors
  ort-<variant>     benchmarks/peers/onnxruntime/run.mjs on the entry's ONNX models
                    (benchmarks/peers/onnx_models.py, built once into BUILD/benchmark-models)
and keeps each side's fastest round (min of wall time; CPU time, peak RSS and page faults are
recorded for every run). Before timing, each (entry, size) is checked: the library's and
every ONNX model's output against PyTorch's, from the same seeded weights and input; a model
further than ORT_BOUND from PyTorch is refused. Then, unless --no-pieces, the fast path's
pieces (benchmarks/cpp/attention_benchmark.cpp) and, unless --no-profile, ONNX Runtime's own
per-operator profile of its fused operators, for whoever tunes the kernels.

Writes DIR/attention.json (default data/benchmarks/): the machine, commit, versions of every
peer, environment, load average before, between rounds and after, every run, the summary.
The book's benchmarks page and its plot are generated from it when the docs are built.
--smoke marks a short run (1 round, 0.3 s per run unless given) as such in the data.
Not part of the tests. The full default recording takes under an hour on a quiet 2-core
machine (most of it PyTorch at T = 4096 and the modules not yet on the fast path).
"""
import argparse
import array
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "benchmarks" / "peers"
import table  # noqa: E402  (beside this file)

TORCH_PY = "/usr/bin/python3"  # Debian's python3-torch and python3-onnx live here
# malloc reusing memory: no mmap for large blocks, no trimming of the heap. All three matter
# (PyTorch 1.13, MultiHeadAttention, T = 1024, page faults per forward: about 40000 by
# default, 18000 with MALLOC_MMAP_MAX_=0 and the trim threshold alone, 384 with all three).
REUSE_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_MMAP_THRESHOLD_": "4294967296",
                "MALLOC_TRIM_THRESHOLD_": "100000000000"}
MALLOC_VARS = ("MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
               "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# "n threads" is n cores on every side: Debian's OpenBLAS otherwise starts a thread per core.
TORCH_THREADS = "torch.set_num_threads(n), OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n"
ORT_BOUND = 1e-5     # largest |ONNX Runtime - PyTorch| accepted (outputs are below 1.5)
FUSED = ("attention", "mha", "gqa")
PIECES = ("mha_projections", "mha_scores", "mha_mask_softmax", "mha_weights_values")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def shell(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def loadavg():
    return Path("/proc/loadavg").read_text().split()[:3]


def run_json(cmd, env, timeout=3600):
    out = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True,
                         timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n"
                           f"{out.stderr[-3000:]}")
    return out.stdout


def command_args(argv):
    """The arguments as given, without --note's text (recorded on its own)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--note":
            skip = True
        elif not arg.startswith("--note="):
            out.append(arg)
    return out


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- the sides

def clean_environ():
    """This process's environment without the malloc and thread-count variables the drivers
    set per run."""
    return {k: v for k, v in os.environ.items() if k not in MALLOC_VARS + THREAD_VARS}


def torch_run_env(env_torch, threads, reuse):
    """PyTorch's environment for one run: `threads` cores (TORCH_THREADS), malloc reusing
    memory when `reuse`."""
    env = dict(env_torch, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    if reuse:
        env.update(REUSE_MALLOC)
    return env


def choose_torch_env(base):
    """OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set on some machines for old OpenBLAS
    builds) unset for PyTorch when its 1024^3 product then still agrees with float64."""
    names = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    if not any(n in base for n in names):
        return base, "no OPENBLAS_* variables set"
    trial = {k: v for k, v in base.items() if k not in names}
    check = ("import torch; torch.manual_seed(0); a, b = torch.rand(1024, 1024), "
             "torch.rand(1024, 1024); print(((a @ b).double() - a.double() @ b.double())"
             ".abs().max().item())")
    try:
        if float(run_json([TORCH_PY, "-c", check], trial)) < 1e-3:
            return trial, "OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset (OpenBLAS computes right without them)"
    except (RuntimeError, ValueError):
        pass
    return base, "OPENBLAS_* kept (OpenBLAS failed without them)"


class Sides:
    """How to run each side; every run returns one record (a dict)."""

    def __init__(self, a, build):
        self.a, self.build = a, Path(build)
        self.module_exe = self.build / "benchmarks" / "module_benchmark"
        self.pieces_exe = self.build / "benchmarks" / "attention_benchmark"
        self.models = Path(a.models_dir or self.build / "benchmark-models")
        base = clean_environ()
        self.env_library = base
        self.env_ort = base
        self.env_torch, self.torch_env_note = choose_torch_env(base)

    def library(self, entry, T, th, min_time, output=None):
        name = f"forward/{entry.key}/T:{T}/threads:{th}/real_time"
        cmd = [self.module_exe, f"--module={entry.key}", f"--T={T}", f"--threads={th}",
               "--benchmark_format=json", f"--benchmark_min_time={min_time}"]
        if output:
            cmd.append(f"--output={output}")
        data = json.loads(run_json(cmd, self.env_library))
        b = next(b for b in data["benchmarks"] if b["name"] == name)
        return gbench_record(b, "library", data)

    def torch(self, entry, T, th, min_time, reuse, output=None):
        cmd = [TORCH_PY, PEERS / "torch_side.py", "--entry", entry.key, "--T", T,
               "--threads", th, "--min-time", min_time]
        if output:
            cmd += ["--output", output]
        r = last_json(run_json(cmd, torch_run_env(self.env_torch, th, reuse)))
        r["side"] = "pytorch-reuse" if reuse else "pytorch-default"
        return r

    def model_dir(self, entry, T):
        return self.models / f"{entry.key}-T{T}"

    def build_models(self, entry, T):
        d = self.model_dir(entry, T)
        manifest = d / "manifest.json"
        if manifest.is_file() and json.loads(manifest.read_text())["variants"] == list(entry.ort) \
                and all((d / f"{v}.onnx").is_file() for v in entry.ort):
            return json.loads(manifest.read_text())
        log(f"building ONNX models for {entry.key} T={T} in {d}")
        return last_json(run_json([TORCH_PY, PEERS / "onnx_models.py", "--entry", entry.key,
                                   "--T", T, "--out", d], self.env_torch))

    def ort(self, entry, T, th, variant, min_time, profile=None):
        d = self.model_dir(entry, T)
        cmd = ["node", PEERS / "onnxruntime" / "run.mjs", "--model", d / f"{variant}.onnx",
               "--dir", d, "--threads", th, "--min-time", min_time]
        if profile:
            cmd += ["--profile", profile]
        r = last_json(run_json(cmd, self.env_ort))
        r["side"] = f"ort-{variant}"
        if not r["max_abs_diff"] <= ORT_BOUND:
            raise RuntimeError(f"ONNX Runtime's {variant} model of {entry.key} at T={T} is "
                               f"{r['max_abs_diff']:.3g} from PyTorch (bound {ORT_BOUND})")
        return r

    def piece(self, name, min_time):
        data = json.loads(run_json([self.pieces_exe, f"--benchmark_filter=^{name}$",
                                    "--benchmark_format=json",
                                    f"--benchmark_min_time={min_time}"], self.env_library))
        if not data["benchmarks"]:
            raise RuntimeError(f"attention_benchmark has no case {name}")
        return gbench_record(data["benchmarks"][0], "library", data)


def gbench_record(b, side, data):
    factor = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
    return {"side": side, "name": b["name"], "iterations": b["iterations"],
            "time_ms": b["real_time"] * factor, "cpu_ms": b["cpu_time"] * factor,
            "peak_rss_MB": b.get("peak_rss_MB"), "rss_before_MB": b.get("rss_before_MB"),
            "faults": b.get("faults"), "threads": b.get("threads"), "label": b.get("label"),
            "GFLOPs": b.get("GFLOPs"), "library_context": data.get("context", {})}


def read_floats(path):
    """A raw float32 file (what the sides' --output writes) as an array."""
    values = array.array("f")
    values.frombytes(Path(path).read_bytes())
    return values


def max_abs_diff(path_a, path_b):
    a, b = read_floats(path_a), read_floats(path_b)
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


# ----------------------------------------------------------------------------- the record

def versions(sides):
    ort_pkg = PEERS / "onnxruntime" / "node_modules" / "onnxruntime-node" / "package.json"
    dpkg = lambda p: shell(f"dpkg-query -W -f='${{Version}}' {p} 2>/dev/null")
    return {
        "compiler": shell("c++ --version | head -n1"),
        "library_blas": shell(f"ldd {sides.module_exe} | grep -oE '/[^ ]*lib(open)?blas[^ ]*' | head -n1"),
        "google_benchmark": dpkg("libbenchmark-dev"),
        "python3-torch": dpkg("python3-torch"), "python3-onnx": dpkg("python3-onnx"),
        "libopenblas0": dpkg("libopenblas0-pthread") or dpkg("libopenblas0"),
        "onnxruntime-node": json.loads(ort_pkg.read_text())["version"] if ort_pkg.is_file() else None,
        "node": shell("node --version"), "python": shell(f"{TORCH_PY} --version"),
    }


def machine():
    flags = set(shell("grep -m1 '^flags' /proc/cpuinfo").split())
    return {"cpu": shell("lscpu | sed -n 's/^Model name: *//p'"), "cores": os.cpu_count(),
            "isa": [f for f in ("avx512f", "avx2", "fma") if f in flags],
            "memory_GB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1),
            "kernel": platform.release(), "hypervisor": shell("systemd-detect-virt 2>/dev/null")}


def commit():
    c = shell(f"git -C {ROOT} rev-parse HEAD")
    if shell(f"git -C {ROOT} status --porcelain -- lib benchmarks tools"):
        c += "+uncommitted"
    return c


def summarise(runs, entries, sizes_of, threads):
    rows = []
    for entry in entries:
        for T in sizes_of(entry):
            for th in threads:
                mine = [r for r in runs if r["entry"] == entry.key and r["T"] == T
                        and r["threads_asked"] == th]
                sides = {}
                for side in sorted({r["side"] for r in mine}):
                    rs = [r for r in mine if r["side"] == side]
                    best = min(rs, key=lambda r: r["time_ms"])
                    sides[side] = {
                        "time_ms": best["time_ms"], "cpu_ms": min(r["cpu_ms"] for r in rs),
                        "GFLOPs": table.flops(entry, T) / best["time_ms"] / 1e6,
                        "peak_rss_MB": best.get("peak_rss_MB"), "faults": best.get("faults"),
                        "runs": len(rs), "max_abs_diff": best.get("max_abs_diff")}
                if "library" not in sides:
                    continue
                lib = sides["library"]["time_ms"]
                row = {"entry": entry.key, "T": T, "threads": th, "sides": sides}
                torch_sides = [s for s in ("pytorch-default", "pytorch-reuse") if s in sides]
                if torch_sides:
                    best_torch = min(sides[s]["time_ms"] for s in torch_sides)
                    row["library_over_pytorch_best"] = lib / best_torch
                if "pytorch-default" in sides:
                    row["library_over_pytorch_default"] = lib / sides["pytorch-default"]["time_ms"]
                fused = [s for s in sides if s.startswith("ort-") and s[4:] in FUSED]
                if fused:
                    best = min(fused, key=lambda s: sides[s]["time_ms"])
                    row["ort_best_fused"] = best
                    row["library_over_ort_best_fused"] = lib / sides[best]["time_ms"]
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
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--install-peers", action="store_true",
                   help="run benchmarks/peers/install_peers.sh first")
    p.add_argument("--rounds", type=int)
    p.add_argument("--min-time", type=float)
    p.add_argument("--modules", help="entries of benchmarks/run/table.py (default: all)")
    p.add_argument("--sizes", help="token counts for every entry (default: each entry's own)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--no-pieces", action="store_true")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--smoke", action="store_true", help="a short run, marked as such in the data")
    p.add_argument("--note", default="", help="said with the results (e.g. the machine was shared)")
    p.add_argument("--models-dir")
    p.add_argument("--out", default=str(ROOT / "data" / "benchmarks"))
    a = p.parse_args()
    rounds = a.rounds or (1 if a.smoke else 3)
    min_time = a.min_time or (0.3 if a.smoke else 1.0)
    if rounds < 1 or min_time <= 0:
        p.error("--rounds must be >= 1 and --min-time > 0")
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
    sides = Sides(a, a.build)
    for exe in (sides.module_exe, sides.pieces_exe):
        if not exe.exists():
            sys.exit(f"{exe} not found: build with libbenchmark-dev installed (meson compile -C {a.build})")
    if subprocess.run([TORCH_PY, "-c", "import torch, onnx"], capture_output=True).returncode:
        sys.exit("PyTorch or ONNX missing: benchmarks/peers/install_peers.sh (or --install-peers)")
    use_ort = not a.no_ort
    if use_ort and subprocess.run(["node", "-e", "require('onnxruntime-node')"],
                                  cwd=PEERS / "onnxruntime", capture_output=True).returncode:
        sys.exit("onnxruntime-node missing: benchmarks/peers/install_peers.sh (or --no-ort)")
    log(f"PyTorch environment: {sides.torch_env_note}")

    meta = {
        "kind": "smoke" if a.smoke else "recording", "note": a.note,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(), "machine": machine(), "versions": versions(sides),
        "command": shlex.join(["benchmarks/run/record_attention.py"] + command_args(sys.argv[1:])),
        "rounds": rounds, "min_time_s": min_time, "threads": threads,
        "environment": {"pytorch-default": "glibc's default malloc",
                        "pytorch-reuse": REUSE_MALLOC, "pytorch_openblas": sides.torch_env_note,
                        "pytorch_threads": TORCH_THREADS,
                        "library": "default malloc, OpenMP threads = threads",
                        "onnxruntime": "default malloc, CPU arena, intra-op threads = threads, "
                                       "1 inter-op thread, all graph optimisations"},
        "ort_bound": ORT_BOUND, "loadavg_before": loadavg(), "loadavg_rounds": [],
        "method": "one process per run; the sides of each (entry, T, threads) run one after "
                  "the other, starting each round with the next side; each run's time is its "
                  "mean per call after one warm-up call, over at least --min-time seconds; the "
                  "summary keeps each side's fastest round and its least CPU time",
        "flops": "2 per multiply-add of the projections, plus scores and weights @ values on "
                 "the visible query/key pairs only (table.flops); softmax not counted",
    }

    # Correctness: the same function on every side (and the models built).
    checks = []
    work = Path(sides.models)
    work.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        for T in sizes_of(entry):
            ya, yb = work / f"check-{entry.key}-{T}-library.bin", work / f"check-{entry.key}-{T}-torch.bin"
            sides.library(entry, T, 1, 0.01, output=ya)
            sides.torch(entry, T, 1, 0.01, True, output=yb)  # reusing malloc: same result, sooner
            check = {"entry": entry.key, "T": T, "library_vs_pytorch": max_abs_diff(ya, yb)}
            if use_ort and entry.ort:
                check["models"] = sides.build_models(entry, T)
                check["ort_vs_pytorch"] = {v: sides.ort(entry, T, 1, v, 0.01)["max_abs_diff"]
                                           for v in entry.ort}
            checks.append(check)
            log(f"check {entry.key} T={T}: largest |difference| from PyTorch: library "
                f"{check['library_vs_pytorch']:.2g}" + "".join(
                    f", ort-{v} {d:.2g}" for v, d in check.get("ort_vs_pytorch", {}).items()))

    runs = []
    for rnd in range(rounds):
        meta["loadavg_rounds"].append(loadavg())
        for entry in entries:
            for T in sizes_of(entry):
                for th in threads:
                    order = ["library", "pytorch-default", "pytorch-reuse"]
                    if use_ort:
                        order += [f"ort-{v}" for v in entry.ort]
                    k = rnd % len(order)
                    for side in order[k:] + order[:k]:
                        if side == "library":
                            r = sides.library(entry, T, th, min_time)
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
    meta["loadavg_after"] = loadavg()

    summary = summarise(runs, entries, sizes_of, threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    entries_info = [{"key": e.key, "title": e.title, "source": e.source, "notes": e.notes,
                     "torch_class": e.torch_class, "torch_args": e.torch_args,
                     "ort": list(e.ort)} for e in entries]
    (out / "attention.json").write_text(json.dumps(
        {"meta": meta, "entries": entries_info, "summary": summary, "checks": checks,
         "pieces": pieces, "ort_profiles": profiles, "runs": runs}, indent=1) + "\n")
    log(f"wrote {out / 'attention.json'}")
    for row in summary:
        s = row["sides"]
        log(f"{row['entry']:8s} T={row['T']:5d} threads={row['threads']}: " +
            "  ".join(f"{k} {v['time_ms']:.1f}" for k, v in s.items()))


if __name__ == "__main__":
    main()
