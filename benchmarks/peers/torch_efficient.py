#!/usr/bin/python3
"""PyTorch's side of chapter 11's speed table: one forward of each implementation of Raschka's
comparison that Debian's python3-torch runs on a CPU, at B = 8, T = 1024 (or --T), d = 768,
12 heads, causal, dropout 0, float32, one thread, under torch.no_grad().

Prints one JSON line per implementation: {"impl", "T", "ms": [one time per --repeat], ...}.
Run by benchmarks/run/record_efficient.py between the C++ runs; not part of the tests.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_side  # noqa: E402  (blas_info; puts tools/oracle/ on the path)
from efficient import MultiHeadAttentionCombinedQKV  # noqa: E402
from multihead import MultiHeadAttention, MultiHeadAttentionWrapper  # noqa: E402


class MHAEinsum(torch.nn.Module):
    """Raschka's einsum implementation (weights [d_in, d_out]), dropout 0."""

    def __init__(self, d_in, d_out, num_heads, context_length):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = torch.nn.Parameter(torch.randn(d_in, d_out))
        self.W_key = torch.nn.Parameter(torch.randn(d_in, d_out))
        self.W_value = torch.nn.Parameter(torch.randn(d_in, d_out))
        self.out_proj = torch.nn.Linear(d_out, d_out)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        Q = torch.einsum("bnd,di->bni", x, self.W_query).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        K = torch.einsum("bnd,di->bni", x, self.W_key).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        V = torch.einsum("bnd,di->bni", x, self.W_value).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.einsum("bhnd,bhmd->bhnm", Q, K) / (self.head_dim ** 0.5)
        scores = scores.masked_fill(self.mask[:n, :n].bool(), -torch.inf)
        w = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("bhnm,bhmd->bhnd", w, V).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(ctx)


class MHAPyTorchClass(torch.nn.Module):
    """Raschka's nn.MultiheadAttention wrapper (need_weights=False), plus his extra proj."""

    def __init__(self, d, num_heads, context_length):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(d, num_heads, bias=False, batch_first=True)
        self.proj = torch.nn.Linear(d, d)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())

    def forward(self, x):
        n = x.shape[1]
        out, _ = self.mha(x, x, x, attn_mask=self.mask[:n, :n], need_weights=False)
        return self.proj(out)


class MHAPyTorchSDPA(torch.nn.Module):
    """Raschka's MHAPyTorchScaledDotProduct (PyTorch >= 2.0 only)."""

    def __init__(self, d, num_heads):
        super().__init__()
        self.num_heads, self.head_dim, self.d = num_heads, d // num_heads, d
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        ctx = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(ctx.transpose(1, 2).contiguous().view(b, n, self.d))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    B, d, H, T = 8, 768, 12, args.T
    impls = {
        "torch wrapper": MultiHeadAttentionWrapper(d, d // H, T, 0.0, H),
        "torch MultiHeadAttention": MultiHeadAttention(d, d, T, 0.0, H),
        "torch combined QKV": MultiHeadAttentionCombinedQKV(d, d, H, T),
        "torch einsum": MHAEinsum(d, d, H, T),
        "torch nn.MultiheadAttention": MHAPyTorchClass(d, H, T),
    }
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        impls["torch SDPA is_causal"] = MHAPyTorchSDPA(d, H)
    x = torch.randn(B, T, d)
    with torch.no_grad():
        for name, m in impls.items():
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                m(x)
                times.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps({"impl": name, "T": T, "ms": times, "torch": torch.__version__,
                              "threads": torch.get_num_threads(),
                              "blas": torch_side.blas_info()}), flush=True)


if __name__ == "__main__":
    main()
