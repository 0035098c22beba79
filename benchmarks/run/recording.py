"""What every recorder in benchmarks/run/ shares (Python 3 standard library only): the common
flags, building and running the programs, the peers' environment, the machine and its load,
the commit rule (provenance.py), this CPU's limits measured in the same recording
(benchmarks/cpp/limits_benchmark.cpp) and each entry's fraction of the limit that binds it,
and writing the recording.

A recorder's JSON carries, besides its own results:
  meta    kind (smoke or recording), note, date, commit, dirty, measured_paths, machine,
          versions, command, rounds, min_time_s, load average before, at each round's start
          and after, method
  limits  this CPU's limits, measured before the first round and after the last: every run,
          and `peak` (the best of the runs per case, {"fma/avx512f/1": {"value", "unit"}})
and every summary row's sides carry `bound` (compute or memory), `limit` (the case of
`limits.peak` it is read against) and `fraction` (its rate over that limit).
"""
import argparse
import array
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import provenance

ROOT = provenance.ROOT
PEERS = ROOT / "benchmarks" / "peers"
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
PEER_SIDES = ("pytorch-default", "pytorch-reuse")
METHOD = ("one process per run; the sides of each case run one after the other, each round "
          "starting with the next side (interleaved); a run's time is its mean per call after "
          "one warm-up call, over at least min_time seconds; the summary keeps each side's "
          "fastest round and its least CPU time")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def shell(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def dpkg(package):
    return shell(f"dpkg-query -W -f='${{Version}}' {package} 2>/dev/null")


def loadavg():
    return Path("/proc/loadavg").read_text().split()[:3]


def run_json(cmd, env=None, timeout=3600):
    """Runs `cmd`; its stdout, or RuntimeError with the end of its stderr."""
    out = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True,
                         timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n"
                           f"{out.stderr[-3000:]}")
    return out.stdout


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- flags

def parser(doc, rounds, min_time, smoke_min_time=0.3):
    """An ArgumentParser with the flags every recorder takes; `rounds` and `min_time` are the
    defaults of a recording (a smoke run: 1 round of `smoke_min_time`)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=str(ROOT / "build"), help="the meson build directory")
    p.add_argument("--no-build", action="store_true",
                   help="run the programs as built (default: `meson compile` them first)")
    p.add_argument("--rounds", type=int, help=f"interleaved rounds (default {rounds})")
    p.add_argument("--min-time", type=float, help=f"seconds per run (default {min_time})")
    p.add_argument("--smoke", action="store_true",
                   help="a short run that proves the pipeline works, marked as such in the data")
    p.add_argument("--allow-dirty", action="store_true",
                   help="record from a tree with uncommitted changes (marked as such)")
    p.add_argument("--note", default="", help="said with the results (e.g. the machine was shared)")
    p.add_argument("--out", default=str(ROOT / "data" / "benchmarks"), help="where to write")
    p.set_defaults(_defaults=(rounds, min_time, smoke_min_time))
    return p


def rounds_and_time(p, a):
    """(rounds, min_time) from the flags and the recorder's defaults."""
    rounds, min_time, smoke_min_time = a._defaults
    r = a.rounds or (1 if a.smoke else rounds)
    t = a.min_time or (smoke_min_time if a.smoke else min_time)
    if r < 1 or t <= 0:
        p.error("--rounds must be >= 1 and --min-time > 0")
    return r, t


def thread_counts(p, text):
    """The thread counts of a `--threads 1,2` option, or the parser's usage error (exit 2)."""
    try:
        threads = [int(t) for t in text.split(",")]
    except ValueError:
        p.error(f"bad --threads {text!r}")
    if not threads or min(threads) < 1:
        p.error("--threads must be >= 1")
    return threads


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


# ----------------------------------------------------------------------------- programs

def programs(a, names):
    """Paths of the benchmark programs `names` in the build, built first (`meson compile`)
    unless --no-build; exits naming what is missing."""
    build = Path(a.build)
    if not a.no_build:
        proc = subprocess.run(["meson", "compile", "-C", str(build), *names],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"meson compile -C {build} {' '.join(names)} failed (Google Benchmark, "
                     f"libbenchmark-dev, installed?):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    exes = [build / "benchmarks" / n for n in names]
    for exe in exes:
        if not exe.exists():
            sys.exit(f"{exe} not found: meson compile -C {build} benchmarks "
                     "(needs libbenchmark-dev)")
    return exes


def gbench(exe, name=None, min_time=None, extra=(), env=None):
    """One Google Benchmark program run with JSON output; `name` selects one case exactly."""
    cmd = [exe, "--benchmark_format=json", *extra]
    if name:
        cmd.append(f"--benchmark_filter=^{name}$")
    if min_time is not None:
        cmd.append(f"--benchmark_min_time={min_time}")
    data = json.loads(run_json(cmd, env))
    if name and not data["benchmarks"]:
        raise RuntimeError(f"{exe.name} has no case {name}")
    return data


def case_names(exe, pattern=None):
    """The cases a program registers (all, or those `pattern` selects)."""
    cmd = [exe, "--benchmark_list_tests=true"] + ([f"--benchmark_filter={pattern}"] if pattern else [])
    return run_json(cmd).split()


def gbench_record(b, side, data):
    """One Google Benchmark result as the drivers' records: times in ms, the counters."""
    factor = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
    return {"side": side, "name": b["name"], "iterations": b["iterations"],
            "time_ms": b["real_time"] * factor, "cpu_ms": b["cpu_time"] * factor,
            "peak_rss_MB": b.get("peak_rss_MB"), "rss_before_MB": b.get("rss_before_MB"),
            "faults": b.get("faults"), "threads": b.get("threads"), "label": b.get("label"),
            "GFLOPs": b.get("GFLOPs"), "GBps": b.get("GBps"),
            "library_context": data.get("context", {})}


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


def max_abs(path):
    return max(map(abs, read_floats(path)), default=0.0)


def float32_spacing(x):
    """The distance from |x| (a float32) to the next larger float32: its ulp."""
    if x == 0:
        return 2.0 ** -149
    _, e = math.frexp(abs(x))  # |x| = m 2^e, 0.5 <= m < 1: float32 spacing 2^(e - 24)
    return 2.0 ** max(e - 24, -149)


def ulps_of_largest(path_a, path_b):
    """max |a - b| in ulp of the largest |b| (the float32 spacing there): how far two results of
    the same function are, on the scale of the output (tests/test_fma.cpp's measure)."""
    d = max_abs_diff(path_a, path_b)
    return d / float32_spacing(max_abs(path_b))


# ----------------------------------------------------------------------------- PyTorch's side

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
    """How a recorder runs the library and PyTorch: the library's environment, and PyTorch's
    (OPENBLAS_* as choose_torch_env decides, threads and malloc per run)."""

    def __init__(self):
        base = clean_environ()
        self.env_library = base
        self.env_torch, self.torch_env_note = choose_torch_env(base)

    def run_torch(self, script, args, threads, reuse, output=None):
        """One run of a peer script (PEERS/script args --threads n [--output F]), one record."""
        cmd = [TORCH_PY, PEERS / script, *args, "--threads", threads]
        if output:
            cmd += ["--output", output]
        r = last_json(run_json(cmd, torch_run_env(self.env_torch, threads, reuse)))
        r["side"] = "pytorch-reuse" if reuse else "pytorch-default"
        return r


def need_torch(a, also=()):
    """Installs python3-torch (and `also`) when --install-peers, else exits when missing."""
    if getattr(a, "install_peers", False):
        subprocess.run([ROOT / "tools" / "install_missing.sh", "python3-torch", "python3-numpy",
                        *also], check=True)
    if subprocess.run([TORCH_PY, "-c", "import torch"], capture_output=True).returncode:
        sys.exit("PyTorch missing: apt-get install python3-torch (or --install-peers)")


# ----------------------------------------------------------------------------- the machine

def machine():
    flags = set(shell("grep -m1 '^flags' /proc/cpuinfo").split())
    return {"cpu": shell("lscpu | sed -n 's/^Model name: *//p'"), "cores": os.cpu_count(),
            "family_model": shell("lscpu | sed -n 's/^CPU family: *//p'") + "/" + shell("lscpu | sed -n 's/^Model: *//p'"),
            "isa": [f for f in ("avx512f", "avx2", "fma") if f in flags],
            "memory_GB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1),
            "kernel": platform.release(), "hypervisor": shell("systemd-detect-virt 2>/dev/null")}


def library_blas(exe):
    """The BLAS library `exe` loads, and the Debian package it comes from."""
    lib = shell(f"ldd {exe} | grep -oE '/[^ ]*lib(open)?blas[^ ]*' | head -n1")
    if not lib:
        return "none: every product in lib/attn/kernels/ (the reference BLAS's order)"
    pkg = shell(f"dpkg-query -S \"$(readlink -f {lib})\" 2>/dev/null | cut -d: -f1 | head -n1")
    return f"{lib} ({pkg or 'unknown package'})"


def versions(exe, **extra):
    """The versions every recording names: compiler, Google Benchmark, the library's BLAS."""
    out = {"compiler": shell("c++ --version | head -n1"),
           "google_benchmark": dpkg("libbenchmark-dev"), "library_blas": library_blas(exe)}
    out.update(extra)
    return out


def torch_versions():
    return {"python3-torch": dpkg("python3-torch"),
            "libopenblas0": dpkg("libopenblas0-pthread") or dpkg("libopenblas0"),
            "python": shell(f"{TORCH_PY} --version")}


# ----------------------------------------------------------------------------- limits

LIMIT_CASES = ("fma", "mul_add", "read")


def run_limits(build, min_time, threads=(1, 2), no_build=True):
    """Every case of limits_benchmark (each ISA the kernels run here, `threads`), one process
    each; records with case, isa, threads, value (GFLOP/s or GB/s) and unit, and the kernels'
    instruction set (what the library's entries ran)."""
    exe = Path(build) / "benchmarks" / "limits_benchmark"
    runs, fast_isa = [], None
    for name in case_names(exe):
        kind, isa, th = name.split("/")[:3]
        n = int(th.split(":")[1])
        if n not in threads:
            continue
        data = gbench(exe, name, min_time)
        fast_isa = data["context"].get("fast_isa", fast_isa)
        b = data["benchmarks"][0]
        unit = "GB/s" if kind == "read" else "GFLOP/s"
        runs.append({"case": kind, "isa": isa.split(":")[1], "threads": n, "unit": unit,
                     "value": b["GBps" if kind == "read" else "GFLOPs"],
                     "time_ms": b["real_time"], "cpu_ms": b["cpu_time"],
                     "array_MB": b.get("array_MB"), "accumulators": b.get("accumulators"),
                     "loadavg": loadavg()})
    return runs, fast_isa


def limit_key(case, isa, threads):
    return f"{case}/{isa}/{threads}"


def limits_peak(runs):
    """The best run of each (case, isa, threads): the machine's limit is its best."""
    peak = {}
    for r in runs:
        k = limit_key(r["case"], r["isa"], r["threads"])
        if k not in peak or r["value"] > peak[k]["value"]:
            peak[k] = {"value": r["value"], "unit": r["unit"]}
    return peak


class Limits:
    """The limits of one recording and the fraction of each entry.

    A compute-bound entry of the library is read against `mul_add` at the instruction set its
    kernels ran (the exact path may not fuse), the library's fma arithmetic (side
    `library-fma`) against `fma` at that set, a peer's against `fma` at the widest set with
    FMA (the peers may fuse); a memory-bound entry against `read` at the same thread count."""

    def __init__(self, runs, library_isa):
        self.runs, self.peak, self.library_isa = runs, limits_peak(runs), library_isa
        fused = [k.split("/")[1] for k in self.peak if k.startswith("fma/")]
        self.fma_isa = fused[0] if fused else None

    def to_json(self):
        return {"library_isa": self.library_isa, "peak": self.peak, "runs": self.runs}

    def fraction(self, record, side, threads):
        """{"bound", "limit", "fraction"} for a record with GFLOPs or GBps; {} without."""
        if record.get("GBps"):
            key, rate, bound = limit_key("read", self.library_isa, threads), record["GBps"], "memory"
        elif record.get("GFLOPs"):
            if side.startswith("library-fma"):
                key = limit_key("fma", self.library_isa, threads)
            elif side.startswith("library"):
                key = limit_key("mul_add", self.library_isa, threads)
            else:
                key = limit_key("fma", self.fma_isa or self.library_isa, threads)
            rate, bound = record["GFLOPs"], "compute"
        else:
            return {}
        if key not in self.peak:
            return {"bound": bound}
        return {"bound": bound, "limit": key, "fraction": rate / self.peak[key]["value"]}


# ----------------------------------------------------------------------------- the recording

class Recording:
    """One recording: its meta, written as JSON at the end (with the limits)."""

    def __init__(self, a, script, paths, min_time, rounds, **meta):
        try:
            self.stamp = provenance.stamp(ROOT, paths, a.allow_dirty)
        except provenance.Refused as e:
            sys.exit(f"{script}: refused: {e}")
        if self.stamp["dirty"]:
            log(f"{script}: recording from uncommitted changes (--allow-dirty): "
                f"{', '.join(self.stamp['dirty_paths'][:8])}")
        self.a, self.build, self.min_time = a, Path(a.build), min_time
        self.meta = {
            "kind": "smoke" if a.smoke else "recording", "note": a.note,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **self.stamp, "machine": machine(),
            "command": shlex.join([script] + command_args(sys.argv[1:])),
            "rounds": rounds, "min_time_s": min_time,
            "loadavg_before": loadavg(), "loadavg_rounds": [], "method": METHOD, **meta}
        self.limit_runs = []

    def measure_limits(self, threads=(1, 2)):
        """This CPU's limits, now (call before the first round and after the last)."""
        log("measuring this CPU's limits (limits_benchmark)")
        runs, fast_isa = run_limits(self.build, min(self.min_time, 0.5), threads)
        self.limit_runs += runs
        self.limits = Limits(self.limit_runs, fast_isa)
        for k, v in sorted(self.limits.peak.items()):
            log(f"  {k}: {v['value']:.1f} {v['unit']}")

    def round_starts(self):
        self.meta["loadavg_rounds"].append(loadavg())

    @property
    def short_commit(self):
        """The commit as the Google Benchmark contexts name it (`abc1234+uncommitted`)."""
        return (self.meta["commit"] or "unknown")[:7] + ("+uncommitted" if self.meta["dirty"] else "")

    def gbench_rounds(self, exe, names, rounds, env=None, between=None):
        """`rounds` rounds of every case `names` of `exe`, each in a process of its own, with
        the commit, the load before and the round in its context; `between(round)` after each
        round's cases (a peer's turn). Returns the Google Benchmark JSON of every run."""
        runs = []
        for rnd in range(1, rounds + 1):
            self.round_starts()
            for name in names:
                load = " ".join(loadavg())
                runs.append(gbench(exe, name, None, [
                    f"--benchmark_context=commit={self.short_commit}",
                    f"--benchmark_context=loadavg_before={load}",
                    f"--benchmark_context=round={rnd}"], env))
                log(f"round {rnd}: {name} done (load before: {load})")
            if between:
                between(rnd)
        return runs

    def write(self, name, body, out=None):
        """Writes DIR/name: meta, limits, then `body`'s keys."""
        self.meta["loadavg_after"] = loadavg()
        out = Path(out or self.a.out)
        out.mkdir(parents=True, exist_ok=True)
        data = {"meta": self.meta, "limits": self.limits.to_json(), **body}
        (out / name).write_text(json.dumps(data, indent=1) + "\n")
        log(f"wrote {out / name}")
        return out / name


def fastest(runs, key, extra=()):
    """Per side of `runs` (records with "side"), the fastest run's time, the least CPU time,
    peak RSS, page faults, rates, how many runs, and the record's `extra` fields."""
    sides = {}
    for side in sorted({r["side"] for r in runs}):
        rs = [r for r in runs if r["side"] == side]
        best = min(rs, key=lambda r: r["time_ms"])
        sides[side] = {"time_ms": best["time_ms"], "cpu_ms": min(r["cpu_ms"] for r in rs),
                       "peak_rss_MB": best.get("peak_rss_MB"), "faults": best.get("faults"),
                       "GFLOPs": best.get("GFLOPs"), "GBps": best.get("GBps"),
                       "runs": len(rs), **{k: best.get(k) for k in extra}}
    return sides


def ratios(row, sides):
    """The library's time over PyTorch's best and over its default run, when both are there."""
    lib = sides.get("library", {}).get("time_ms")
    peers = [sides[s]["time_ms"] for s in PEER_SIDES if s in sides]
    if lib and peers:
        row["library_over_pytorch_best"] = lib / min(peers)
    if lib and "pytorch-default" in sides:
        row["library_over_pytorch_default"] = lib / sides["pytorch-default"]["time_ms"]
    return row


def interleaved(order, rnd):
    """The sides of one case in round `rnd`: each round starts with the next side."""
    k = rnd % len(order)
    return order[k:] + order[:k]
