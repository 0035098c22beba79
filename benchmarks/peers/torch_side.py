#!/usr/bin/python3
"""PyTorch's side of the attention benchmark: one table entry, one size, one thread count,
in this process; prints one JSON line.

    /usr/bin/python3 benchmarks/peers/torch_side.py --entry mha --T 1024 --threads 1 \
        [--min-time 1.0] [--output y.bin] [--sgemm]

Builds Raschka's class (tools/oracle/, as the oracle scripts record it) after
torch.manual_seed(0), draws x = torch.rand(1, T, 768), and times `module(x)` in evaluation
mode under torch.no_grad(): one warm-up call, then calls until --min-time seconds have
passed (at least 2). Reports wall time and process CPU time per call, the peak resident set
(ru_maxrss) and the page faults per call of the timed loop. --output writes the warm-up
call's result as raw float32 (the driver compares it with the library's and ONNX Runtime's).
--sgemm times a 1024^3 product instead (the BLAS PyTorch runs, for the record).

Run by benchmarks/run/record_attention.py, once with glibc's default malloc and once with
malloc told to keep and reuse freed memory; not part of the tests.
"""
import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "run"))  # table.py
sys.path.insert(0, str(HERE.parents[1] / "tools" / "oracle"))

import torch  # noqa: E402
import table  # noqa: E402


def build(entry, T):
    """Raschka's module for `entry` after torch.manual_seed(SEED), and x [1, T, d]."""
    module_name, cls_name = entry.torch_class.split(":")
    cls = getattr(__import__(module_name), cls_name)
    torch.manual_seed(table.SEED)
    module = cls(**table.torch_kwargs(entry, T))
    module.eval()
    x = torch.rand(1, T, table.D)
    return module, x


def blas_info():
    """The BLAS this process loaded (from /proc/self/maps) and OpenBLAS's kernel name."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path) and path not in libs:
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
    return {"libraries": [os.path.realpath(p) for p in libs], "openblas_core": core}


def timed(fn, min_time):
    """Warm-up call, then the timed loop: calls until `min_time` seconds have passed (at
    least 2 calls); returns (result of the warm-up, record)."""
    first = time.perf_counter()
    result = fn()
    first = time.perf_counter() - first
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    start, cpu0 = time.perf_counter(), time.process_time()
    iters = 0
    while iters < 2 or time.perf_counter() - start < min_time:
        fn()
        iters += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
    u1 = resource.getrusage(resource.RUSAGE_SELF)
    faults = (u1.ru_minflt + u1.ru_majflt) - (u0.ru_minflt + u0.ru_majflt)
    return result, {"iterations": iters, "time_ms": elapsed / iters * 1e3,
                    "cpu_ms": cpu / iters * 1e3, "first_call_ms": first * 1e3,
                    "peak_rss_MB": u1.ru_maxrss * 1024 / 1e6, "faults": faults / iters}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--entry", choices=sorted(table.BY_KEY))
    p.add_argument("--T", type=int)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--output")
    p.add_argument("--sgemm", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    record = {"side": "pytorch", "threads": torch.get_num_threads(), "torch": torch.__version__}
    with torch.no_grad():
        if a.sgemm:
            torch.manual_seed(table.SEED)
            m, n = torch.rand(1024, 1024), torch.rand(1024, 1024)
            _, r = timed(lambda: m @ n, a.min_time)
            r["GFLOPs"] = 2 * 1024 ** 3 / (r["time_ms"] / 1e3) / 1e9
            record.update(r, name="sgemm_1024")
        else:
            if a.entry is None or a.T is None:
                p.error("--entry and --T are required (or --sgemm)")
            entry = table.BY_KEY[a.entry]
            module, x = build(entry, a.T)
            y, r = timed(lambda: module(x), a.min_time)
            if isinstance(y, tuple):  # a KV-sharing layer returns (context_vec, shared_kv)
                y = y[0]
            record.update(r, entry=a.entry, T=a.T,
                          GFLOPs=table.flops(entry, a.T) / (r["time_ms"] / 1e3) / 1e9)
            if a.output:
                y.contiguous().numpy().astype("float32").tofile(a.output)
    record["blas"] = blas_info()
    print(json.dumps(record))


if __name__ == "__main__":
    main()
