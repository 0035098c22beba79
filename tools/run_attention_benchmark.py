#!/usr/bin/env python3
"""Multi-head attention at GPT-2 sizes, the library beside PyTorch (issue 12).

Runs benchmarks/attention_benchmark's `mha_forward` (the library's MultiHeadAttention forward)
and the same forward in PyTorch (Debian's python3-torch; the class is written out below),
alternating the two, one process per run so that each peak RSS belongs to one configuration,
and keeps the fastest of several runs. Writes:

  data/benchmarks/attention.json   every run, with machine, commit, BLAS, threads, environment
  data/benchmarks/attention.tsv    the summary: time, ratio, GFLOP/s, sgemm share, RSS, faults
  data/benchmarks/attention.svg    the ratios as a bar chart (drawn here, no plotting library)

Configuration: B = 1, d_in = d_out = 768, 12 heads, causal, dropout 0, eval mode (PyTorch
under torch.no_grad()), float32; T = 256, 1024, 4096; 1 and 2 threads (OpenMP threads for the
library, torch.set_num_threads for PyTorch).

GFLOP/s: both sides are credited with the same count, 2 flops per multiply-add of the four
projections, plus the two causal products counted on their visible pairs only (key <= query):
2 * 12 * 64 * T (T + 1) / 2 each. So the ratio of GFLOP/s is the inverse ratio of time.

Malloc: both sides run with the same environment. By default glibc is told to keep freed
memory (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000, as issue 12 measured PyTorch);
--malloc default leaves glibc alone (PyTorch then spends much of its time in page faults).

OpenBLAS (PyTorch's BLAS here): the machine may set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for
older OpenBLAS builds; the PyTorch runs unset both (--torch-openblas-env unset, the default)
when a 1024^3 product then still agrees with float64 to 1e-3, else keep them; the kernel
OpenBLAS runs is recorded.

Times: each run's wall time per iteration (the result) and the process's CPU time per
iteration, all threads (cpu_ms: less sensitive to other work on a shared machine, but it
counts spinning OpenMP threads and page-fault handling too).

Usage:
  tools/run_attention_benchmark.py [--build build] [--repetitions 3] [--sizes 256,1024,4096]
                                   [--threads 1,2] [--min-time 1.0] [--malloc tuned|default]
Not part of the tests; takes about 10-20 minutes.
"""
import argparse
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
D, H = 768, 12
HD = D // H
TUNED_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}


def flops_forward(T):
    projections = 4 * 2 * T * D * D
    causal = H * 2 * HD * T * (T + 1) / 2
    return projections + 2 * causal


# ----------------------------------------------------------------------------- PyTorch side

def torch_worker(T, threads, min_time):
    """One PyTorch configuration in this process; prints one JSON line."""
    import torch
    from torch import nn

    class MultiHeadAttention(nn.Module):
        """Raschka's weight-split causal multi-head attention (ch. 3.6.2), written out."""

        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            if d_out % num_heads:
                raise ValueError("d_out must be divisible by num_heads")
            self.d_out = d_out
            self.num_heads = num_heads
            self.head_dim = d_out // num_heads
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.out_proj = nn.Linear(d_out, d_out)
            self.dropout = nn.Dropout(dropout)
            ones = torch.ones(context_length, context_length)
            self.register_buffer("mask", torch.triu(ones, diagonal=1))

        def heads(self, t, b, n):
            # [b, n, d_out] -> [b, H, n, head_dim]
            return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        def forward(self, x):
            b, n, _ = x.shape
            queries = self.heads(self.W_query(x), b, n)
            keys = self.heads(self.W_key(x), b, n)
            values = self.heads(self.W_value(x), b, n)
            scores = queries @ keys.transpose(2, 3)
            scores.masked_fill_(self.mask.bool()[:n, :n], -torch.inf)
            weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
            weights = self.dropout(weights)
            context = (weights @ values).transpose(1, 2).contiguous().view(b, n, self.d_out)
            return self.out_proj(context)

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    module = MultiHeadAttention(D, D, T, 0.0, H)
    module.eval()
    x = torch.rand(1, T, D)

    def usage():
        return resource.getrusage(resource.RUSAGE_SELF)

    with torch.no_grad():
        rss_before = rss_mb()
        first = time.perf_counter()
        module(x)  # warm-up
        first = time.perf_counter() - first
        iters = max(2, math.ceil(min_time / max(first, 1e-6)))
        u0 = usage()
        start, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(iters):
            module(x)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
        u1 = usage()
    seconds = elapsed / iters
    print(json.dumps({
        "side": "pytorch", "T": T, "threads": torch.get_num_threads(), "iterations": iters,
        "time_ms": seconds * 1e3, "cpu_ms": cpu / iters * 1e3,
        "GFLOPs": flops_forward(T) / seconds / 1e9,
        "peak_rss_MB": u1.ru_maxrss / 1e3, "rss_before_MB": rss_before,
        "faults": ((u1.ru_minflt + u1.ru_majflt) - (u0.ru_minflt + u0.ru_majflt)) / iters,
        "torch": torch.__version__, "blas": openblas_core(),
    }))


def torch_sgemm_worker(threads, min_time):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
    c = a @ b
    err = (c.double() - a.double() @ b.double()).abs().max().item()
    first = time.perf_counter()
    a @ b
    first = time.perf_counter() - first
    iters = max(3, math.ceil(min_time / max(first, 1e-6)))
    start = time.perf_counter()
    for _ in range(iters):
        a @ b
    seconds = (time.perf_counter() - start) / iters
    print(json.dumps({"side": "pytorch", "name": "sgemm_1024", "threads": threads,
                      "time_ms": seconds * 1e3, "GFLOPs": 2 * 1024**3 / seconds / 1e9,
                      "max_abs_error_vs_float64": err, "blas": openblas_core()}))


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def openblas_core():
    """The BLAS this process loaded, and OpenBLAS's kernel name if it is OpenBLAS."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in path and path not in libs:
                libs.append(path)
    core = None
    for path in libs:
        if "openblas" in path:
            try:
                import ctypes
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                core = lib.openblas_get_corename().decode()
            except (OSError, AttributeError):
                pass
    return {"libraries": libs, "openblas_core": core,
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
            "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE")}


# ----------------------------------------------------------------------------- driver side

def torch_python():
    """An interpreter that imports torch (Debian's python3-torch is for /usr/bin/python3)."""
    for exe in [sys.executable, "/usr/bin/python3"]:
        if exe and Path(exe).exists() and subprocess.run(
                [exe, "-c", "import torch"], capture_output=True).returncode == 0:
            return exe
    return None


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return out.stdout


def run_library(exe, name, env, min_time):
    """One Google Benchmark entry in its own process; returns its record (cpu_ms is the
    process's CPU time per iteration, all threads, as Google Benchmark measures it)."""
    text = run_json([str(exe), f"--benchmark_filter=^{name}$", "--benchmark_format=json",
                     f"--benchmark_min_time={min_time}"], env)
    data = json.loads(text)
    if not data["benchmarks"]:
        raise RuntimeError(f"no benchmark matched {name}")
    b = data["benchmarks"][0]
    factor = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
    return {"side": "library", "name": b["name"], "iterations": b["iterations"],
            "time_ms": b["real_time"] * factor, "cpu_ms": b["cpu_time"] * factor,
            "GFLOPs": b.get("GFLOPs", 0),
            "peak_rss_MB": b.get("peak_rss_MB"), "rss_before_MB": b.get("rss_before_MB"),
            "faults": b.get("faults"), "threads": b.get("threads"), "label": b.get("label"),
            "context": data.get("context", {})}


def run_torch(py, args, env):
    return json.loads(run_json([py, str(Path(__file__).resolve())] + args, env).splitlines()[-1])


def shell(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def choose_torch_env(py, base_env, mode):
    """PyTorch's environment: OPENBLAS_* unset if OpenBLAS then still computes right."""
    if mode == "keep":
        return base_env, "kept"
    trial = {k: v for k, v in base_env.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    try:
        r = run_torch(py, ["--torch-sgemm", "--threads", "1", "--min-time", "0.2"], trial)
        if r["max_abs_error_vs_float64"] < 1e-3:
            return trial, f"OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset (OpenBLAS runs {r['blas']['openblas_core']})"
    except RuntimeError:
        pass
    return base_env, "kept (OpenBLAS failed without them)"


def svg_chart(rows, path):
    """Bars of library/PyTorch time per T and thread count, with the 0.8 goal line."""
    w, h, left, bottom, top = 560, 300, 60, 50, 30
    ymax = max([1.0] + [r["ratio"] for r in rows]) * 1.15
    groups = sorted({r["T"] for r in rows})
    threads = sorted({r["threads"] for r in rows})
    colors = {1: "#4C72B0", 2: "#DD8452", 4: "#55A868"}
    gw = (w - left - 20) / max(len(groups), 1)
    bw = gw * 0.7 / max(len(threads), 1)
    y = lambda v: top + (h - top - bottom) * (1 - v / ymax)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="{w / 2}" y="18" text-anchor="middle">MultiHeadAttention forward: '
           f'library time / PyTorch time (lower is better)</text>']
    for v in [0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]:
        if v <= ymax:
            out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                       f'stroke="#ddd"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                       f'text-anchor="end">{v:g}</text>')
    out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(0.8):.1f}" y2="{y(0.8):.1f}" '
               f'stroke="#c00" stroke-dasharray="5,3"/><text x="{w - 22}" y="{y(0.8) - 4:.1f}" '
               f'text-anchor="end" fill="#c00">goal 0.8</text>')
    for gi, T in enumerate(groups):
        x0 = left + gi * gw + gw * 0.15
        for ti, th in enumerate(threads):
            r = next((r for r in rows if r["T"] == T and r["threads"] == th), None)
            if not r:
                continue
            x = x0 + ti * bw
            out.append(f'<rect x="{x:.1f}" y="{y(r["ratio"]):.1f}" width="{bw - 2:.1f}" '
                       f'height="{y(0) - y(r["ratio"]):.1f}" fill="{colors.get(th, "#888")}"/>'
                       f'<text x="{x + bw / 2:.1f}" y="{y(r["ratio"]) - 3:.1f}" '
                       f'text-anchor="middle" font-size="11">{r["ratio"]:.2f}</text>')
        out.append(f'<text x="{left + gi * gw + gw / 2:.1f}" y="{h - bottom + 18}" '
                   f'text-anchor="middle">T = {T}</text>')
    for ti, th in enumerate(threads):
        out.append(f'<rect x="{left + ti * 110}" y="{h - 18}" width="12" height="12" '
                   f'fill="{colors.get(th, "#888")}"/><text x="{left + ti * 110 + 16}" '
                   f'y="{h - 8}">{th} thread{"s" if th > 1 else ""}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--sizes", default="256,1024,4096")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--malloc", choices=["tuned", "default"], default="tuned")
    p.add_argument("--torch-openblas-env", choices=["unset", "keep"], default="unset")
    p.add_argument("--out", default=str(ROOT / "data" / "benchmarks"))
    p.add_argument("--pieces", action="store_true", default=True)
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--torch-sgemm", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--T", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.torch_worker:
        return torch_worker(a.T, int(a.threads), a.min_time)
    if a.torch_sgemm:
        return torch_sgemm_worker(int(a.threads), a.min_time)

    exe = Path(a.build) / "benchmarks" / "attention_benchmark"
    if not exe.exists():
        sys.exit(f"{exe} not found: build with libbenchmark-dev installed (meson compile -C build)")
    py = torch_python()
    if not py:
        sys.exit("PyTorch not found: apt-get install python3-torch (only this script needs it)")
    sizes = [int(s) for s in a.sizes.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    env = dict(os.environ)
    if a.malloc == "tuned":
        env.update(TUNED_MALLOC)
    env.pop("OMP_NUM_THREADS", None)
    torch_env, torch_env_note = choose_torch_env(py, env, a.torch_openblas_env)
    print(f"PyTorch environment: {torch_env_note}", file=sys.stderr)

    commit = shell(f"git -C {ROOT} rev-parse HEAD")
    if shell(f"git -C {ROOT} status --porcelain -- lib benchmarks tools"):
        commit += "+uncommitted"
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": shell("lscpu | sed -n 's/^Model name: *//p'"),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "compiler": shell("c++ --version | head -n1"),
        "library_blas": shell(f"ldd {exe} | grep -oE '/[^ ]*lib(open)?blas[^ ]*' | head -n1"),
        "malloc": a.malloc, "malloc_env": TUNED_MALLOC if a.malloc == "tuned" else {},
        "pytorch_env": torch_env_note,
        "loadavg_before": shell("cut -d' ' -f1-3 /proc/loadavg"),
        "repetitions": a.repetitions, "min_time_s": a.min_time,
        "method": "library and PyTorch runs alternate, one process per run; each run's time "
                  "is its mean per iteration; the summary keeps each side's fastest run (wall "
                  "time), and separately each side's least CPU time per iteration",
        "flop_count": "4 projections 2*T*768*768 each, plus 2 causal products "
                      "2*12*64*T*(T+1)/2 each (visible pairs only); softmax not counted",
    }
    runs = []
    for rep in range(a.repetitions):
        for th in threads:
            runs.append(run_library(exe, f"sgemm_1024/threads:{th}/real_time", env, 0.5))
            r = run_torch(py, ["--torch-sgemm", "--threads", str(th), "--min-time", "0.5"], torch_env)
            r["repetition"] = rep
            runs.append(r)
            for T in sizes:
                lib = run_library(exe, f"mha_forward/T:{T}/threads:{th}/real_time", env, a.min_time)
                lib.update({"T": T, "repetition": rep})
                runs.append(lib)
                tor = run_torch(py, ["--torch-worker", "--T", str(T), "--threads", str(th),
                                     "--min-time", str(a.min_time)], torch_env)
                tor["repetition"] = rep
                runs.append(tor)
                print(f"rep {rep} T={T} threads={th}: library {lib['time_ms']:.1f} ms, "
                      f"PyTorch {tor['time_ms']:.1f} ms", file=sys.stderr)
    pieces = []
    if a.pieces:
        for th in threads:
            for T in sizes:
                for piece in ["mha_projections", "mha_scores", "mha_mask_softmax", "mha_weights_values"]:
                    r = run_library(exe, f"{piece}/T:{T}/threads:{th}/real_time", env, 0.5)
                    r.update({"T": T})
                    pieces.append(r)
        pieces.append(run_library(exe, "blas_sgemm_1024/threads:1/real_time", env, 0.5))
    meta["loadavg_after"] = shell("cut -d' ' -f1-3 /proc/loadavg")

    def best(side, pred, key="time_ms"):
        c = [r for r in runs if r["side"] == side and pred(r)]
        return min(c, key=lambda r: r[key]) if c else None

    rows = []
    for th in threads:
        sg = best("library", lambda r: r["name"].startswith(f"sgemm_1024/threads:{th}/"))
        tsg = best("pytorch", lambda r: r.get("name") == "sgemm_1024" and r["threads"] == th)
        for T in sizes:
            lib = best("library", lambda r: r.get("T") == T and r["name"].startswith(f"mha_forward/T:{T}/threads:{th}/"))
            tor = best("pytorch", lambda r: r.get("T") == T and r["threads"] == th and "name" not in r)
            lib_cpu = best("library", lambda r: r.get("T") == T and r["name"].startswith(f"mha_forward/T:{T}/threads:{th}/"), "cpu_ms")
            tor_cpu = best("pytorch", lambda r: r.get("T") == T and r["threads"] == th and "name" not in r, "cpu_ms")
            rows.append({
                "T": T, "threads": th, "library_ms": lib["time_ms"], "pytorch_ms": tor["time_ms"],
                "ratio": lib["time_ms"] / tor["time_ms"],
                "library_cpu_ms": lib_cpu["cpu_ms"], "pytorch_cpu_ms": tor_cpu["cpu_ms"],
                "cpu_ratio": lib_cpu["cpu_ms"] / tor_cpu["cpu_ms"],
                "library_GFLOPs": lib["GFLOPs"], "pytorch_GFLOPs": tor["GFLOPs"],
                "sgemm_GFLOPs": sg["GFLOPs"], "sgemm_share": lib["GFLOPs"] / sg["GFLOPs"],
                "pytorch_sgemm_GFLOPs": tsg["GFLOPs"],
                "library_peak_rss_MB": lib["peak_rss_MB"], "pytorch_peak_rss_MB": tor["peak_rss_MB"],
                "library_faults": lib["faults"], "pytorch_faults": tor["faults"],
            })
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "attention.json").write_text(json.dumps(
        {"meta": meta, "summary": rows, "runs": runs, "pieces": pieces}, indent=1) + "\n")
    cols = list(rows[0].keys())
    with open(out / "attention.tsv", "w") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + "\n")
    svg_chart(rows, out / "attention.svg")
    for r in rows:
        print(f"T={r['T']:5d} threads={r['threads']}: library {r['library_ms']:8.1f} ms  PyTorch "
              f"{r['pytorch_ms']:8.1f} ms  ratio {r['ratio']:.2f}  sgemm share {r['sgemm_share']:.2f}  "
              f"RSS {r['library_peak_rss_MB']:.0f} / {r['pytorch_peak_rss_MB']:.0f} MB")


if __name__ == "__main__":
    main()
