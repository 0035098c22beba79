#!/usr/bin/python3
"""PyTorch's side of chapter 25's speed: its own torch.nn.MultiheadAttention(768, 12,
batch_first=True) as cross-attention, T queries against S source tokens (default 1024 and
1024), batch 1, float32, under torch.no_grad(), on the threads torch is given (--threads).

    /usr/bin/python3 benchmarks/peers/torch_cross_attention.py [--T 1024] [--S 1024] \
        [--threads 1] [--min-time 1.0]

Cases, as benchmarks/cpp/cross_attention_benchmark.cpp names them:
- `forward, need_weights=False` and `forward, need_weights=True`: mha(query, memory, memory);
- `decode step, memory projected again`: one query against the memory (PyTorch's module has no
  cache of the memory's keys and values: they are projected at every call).
Cross-attention (query not key) never takes PyTorch's fast path: the module runs
F.multi_head_attention_forward, the computation the library follows. Each case: one warm-up
call, then calls until --min-time seconds have passed (at least 2). Prints one JSON line per
case: {"impl", "T", "S", "ms": [wall time per call], "cpu_ms": [...], "threads", "torch",
"blas"}. Run by benchmarks/run/record_cross_attention.py between the C++ runs; not part of
the tests.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_side  # noqa: E402  (blas_info)


def timed(call, min_time):
    call()
    wall, cpu = [], []
    start = time.perf_counter()
    while len(wall) < 2 or time.perf_counter() - start < min_time:
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return wall, cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--T", type=int, default=1024)
    p.add_argument("--S", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-time", type=float, default=1.0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(768, 12, batch_first=True)
    query, memory = torch.randn(1, a.T, 768), torch.randn(1, a.S, 768)
    token = query[:, :1]
    cases = {
        "forward, need_weights=False": lambda: mha(query, memory, memory, need_weights=False),
        "forward, need_weights=True": lambda: mha(query, memory, memory, need_weights=True),
        "decode step, memory projected again": lambda: mha(token, memory, memory, need_weights=False),
    }
    with torch.no_grad():
        for name, call in cases.items():
            wall, cpu = timed(call, a.min_time)
            print(json.dumps({"impl": name, "T": 1 if name.startswith("decode") else a.T, "S": a.S, "ms": wall,
                              "cpu_ms": cpu, "threads": torch.get_num_threads(), "torch": torch.__version__,
                              "blas": torch_side.blas_info()}), flush=True)


if __name__ == "__main__":
    main()
