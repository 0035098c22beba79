#!/usr/bin/python3
"""PyTorch's side of chapter 24's speed: Raschka's Llama 3 GroupedQueryAttention
(converting-llama2-to-llama3.ipynb, cell 8; tools/oracle/reference/llama.py) at B = 1,
T = 1024 (or --T), d = 768, 12 heads, 4 key/value groups, float32, one thread, under
torch.no_grad(): without positions (cos=None), with RoPE (his precompute_rope_params with Llama
3.2's freq_config, the tables computed once, outside the timing), and chapter 3's
MultiHeadAttention with ALiBi (tools/oracle/reference/alibi.py: its bias a dense buffer).

Prints one JSON line per implementation: {"impl", "T", "ms": [one time per --repeat], ...}.
Run by benchmarks/run/record_positions.py between the C++ runs; not part of the tests.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_side  # noqa: E402  (blas_info; puts tools/oracle/ on the path)
from reference import MultiHeadAttentionALiBi, llama, precompute_rope_params  # noqa: E402

LLAMA32 = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_context_length": 8192}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d, H, G, T = 768, 12, 4, args.T
    gqa = llama.GroupedQueryAttention(d_in=d, d_out=d, num_heads=H, num_kv_groups=G)
    cos, sin = precompute_rope_params(head_dim=d // H, theta_base=500_000, context_length=T, freq_config=LLAMA32)
    alibi = MultiHeadAttentionALiBi(d, d, T, 0.0, H)
    x = torch.randn(1, T, d)
    impls = {"torch GQA": lambda: gqa(x), "torch GQA + RoPE (Llama 3.2)": lambda: gqa(x, None, cos, sin),
             "torch MultiHeadAttention + ALiBi (dense bias)": lambda: alibi(x)}
    with torch.no_grad():
        for name, forward in impls.items():
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                forward()
                times.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps({"impl": name, "T": T, "ms": times, "torch": torch.__version__,
                              "threads": torch.get_num_threads(),
                              "blas": torch_side.blas_info()}), flush=True)


if __name__ == "__main__":
    main()
