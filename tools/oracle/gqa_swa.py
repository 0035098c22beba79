#!/usr/bin/python3
"""Records PyTorch's outputs for grouped-query and sliding-window attention (chapters 13, 14).

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as multihead.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/gqa_swa.py \
        [--out data/oracle/gqa_swa.json]

The two modules are copied from rasbt/LLMs-from-scratch at commit 28c65cdf (April 2026):
- `GroupedQueryAttention`: ch04/04_gqa/gpt_with_kv_gqa.py (layers W_key, W_value with
  num_kv_groups * head_dim outputs, W_query, out_proj without bias; cache of num_kv_groups
  heads grown by torch.cat; causal mask from positions);
- `MultiHeadAttentionWithSWA`: ch04/06_swa/gpt_with_kv_swa.py (W_query, W_key, W_value,
  out_proj with bias; cache trimmed to the last W tokens; chunked prefill keeping W - 1 older
  keys plus the chunk; window mask 0 <= q_pos - k_pos < W).
Only the dtype argument is dropped (float32 throughout).

Each case seeds the default generator, builds a module and runs it; it records outputs
(float32 values as exact decimal doubles, plus print(tensor) for small ones), module reprs,
cache shapes and contents, and the 32-bit draws the construction consumed (read from the
generator state). `tests/test_gqa_swa.cpp` reads only the JSON this writes.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn
from oracle_common import draws_since, provenance

SCRIPT = "tools/oracle/gqa_swa.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        assert num_heads % num_kv_groups == 0, "num_heads must be divisible by num_kv_groups"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys_new = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        values_new = values.view(b, num_tokens, self.num_kv_groups, self.head_dim).transpose(1, 2)
        if use_cache:
            if self.cache_k is None:
                self.cache_k, self.cache_v = keys_new, values_new
            else:
                self.cache_k = torch.cat([self.cache_k, keys_new], dim=2)
                self.cache_v = torch.cat([self.cache_v, values_new], dim=2)
            keys_base, values_base = self.cache_k, self.cache_v
        else:
            keys_base, values_base = keys_new, values_new
            if self.cache_k is not None or self.cache_v is not None:
                self.cache_k, self.cache_v = None, None
                self.ptr_current_pos = 0
        keys = keys_base.repeat_interleave(self.group_size, dim=1)
        values = values_base.repeat_interleave(self.group_size, dim=1)
        attn_scores = queries @ keys.transpose(2, 3)
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        if use_cache:
            q_positions = torch.arange(self.ptr_current_pos, self.ptr_current_pos + num_tokens_Q,
                                       dtype=torch.long)
            self.ptr_current_pos += num_tokens_Q
        else:
            q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
            self.ptr_current_pos = 0
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        attn_scores = attn_scores.masked_fill(mask, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.ptr_current_pos = 0


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.sliding_window_size = sliding_window_size
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, d_in = x.shape
        keys_new = self.W_key(x)
        values_new = self.W_value(x)
        queries = self.W_query(x)
        keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
        values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        if use_cache:
            old_cache_k, old_cache_v = self.cache_k, self.cache_v
            old_len = 0 if old_cache_k is None else old_cache_k.size(1)
            if old_cache_k is None:
                combined_k, combined_v = keys_new, values_new
            else:
                combined_k = torch.cat([old_cache_k, keys_new], dim=1)
                combined_v = torch.cat([old_cache_v, values_new], dim=1)
            keys, values = combined_k, combined_v
            if self.sliding_window_size is not None:
                attn_keep = min(keys.size(1), self.sliding_window_size + num_tokens - 1)
                keys = keys[:, -attn_keep:, :, :]
                values = values[:, -attn_keep:, :, :]
                cache_keep = min(combined_k.size(1), self.sliding_window_size)
                self.cache_k = combined_k[:, -cache_keep:, :, :]
                self.cache_v = combined_v[:, -cache_keep:, :, :]
            else:
                self.cache_k, self.cache_v = combined_k, combined_v
            dropped = combined_k.size(1) - keys.size(1)
            k_start_pos_abs = (self.ptr_current_pos - old_len) + dropped
            q_start_pos_abs = self.ptr_current_pos
        else:
            keys, values = keys_new, values_new
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        if use_cache:
            q_start, k_start = q_start_pos_abs, k_start_pos_abs
        else:
            q_start, k_start = 0, 0
        q_positions = torch.arange(q_start, q_start + num_tokens_Q, dtype=torch.long)
        k_positions = torch.arange(k_start, k_start + num_tokens_K, dtype=torch.long)
        W = num_tokens_K + 1 if self.sliding_window_size is None else int(self.sliding_window_size)
        diff = q_positions.unsqueeze(-1) - k_positions.unsqueeze(0)
        mask_bool = (diff < 0) | (diff >= W)
        if use_cache:
            self.ptr_current_pos += num_tokens_Q
        else:
            self.ptr_current_pos = 0
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.ptr_current_pos = 0


INPUTS = torch.tensor([[0.43, 0.15, 0.89],
                       [0.55, 0.87, 0.66],
                       [0.57, 0.85, 0.64],
                       [0.22, 0.58, 0.33],
                       [0.77, 0.25, 0.10],
                       [0.05, 0.80, 0.55]])
BATCH = torch.stack((INPUTS, INPUTS))


def record(t):
    t = t.detach().contiguous()
    out = {"shape": list(t.shape), "values": [float(v) for v in t.reshape(-1).tolist()]}
    if t.numel() <= 100:
        out["repr"] = repr(t)
    return out


def decode_chunks(module, x, chunk):
    """Feeds x in chunks with use_cache=True; returns the concatenated outputs."""
    module.reset_cache()
    outs = [module(x[:, i:i + chunk], use_cache=True) for i in range(0, x.shape[1], chunk)]
    return torch.cat(outs, dim=1)


def case_gqa_book(num_kv_groups):
    torch.manual_seed(123)
    gqa = GroupedQueryAttention(d_in=3, d_out=8, dropout=0.0, num_heads=4, num_kv_groups=num_kv_groups)
    draws = draws_since(123, torch.get_rng_state())
    out = gqa(BATCH)
    gqa(BATCH, use_cache=True)
    return {"repr": repr(gqa), "draws_after_init": draws,
            "outputs": {"context_vecs": record(out), "W_key_weight": record(gqa.W_key.weight)},
            "cache_k_shape": repr(gqa.cache_k.shape)}


def case_gqa_decode(seed, B, T, d_in, d_out, num_heads, num_kv_groups, qkv_bias, chunk):
    torch.manual_seed(seed)
    gqa = GroupedQueryAttention(d_in, d_out, 0.0, num_heads, num_kv_groups, qkv_bias)
    x = torch.rand(B, T, d_in)
    full = gqa(x)
    cached = decode_chunks(gqa, x, chunk)
    return {"outputs": {"x": record(x), "full": record(full), "cached": record(cached),
                        "cache_k": record(gqa.cache_k), "cache_v": record(gqa.cache_v)}}


def case_gqa_train(seed, B, T, d_in, d_out, p, num_heads, num_kv_groups):
    torch.manual_seed(seed)
    gqa = GroupedQueryAttention(d_in, d_out, p, num_heads, num_kv_groups, qkv_bias=True)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x), "context_vec": record(gqa(x))}}


def case_swa_book():
    torch.manual_seed(123)
    swa = MultiHeadAttentionWithSWA(d_in=3, d_out=4, dropout=0.0, num_heads=2, sliding_window_size=3)
    draws = draws_since(123, torch.get_rng_state())
    return {"repr": repr(swa), "draws_after_init": draws,
            "outputs": {"context_vecs": record(swa(BATCH))}}


def case_swa_decode(seed, B, T, d_in, d_out, num_heads, window, chunk):
    torch.manual_seed(seed)
    swa = MultiHeadAttentionWithSWA(d_in, d_out, 0.0, num_heads, qkv_bias=True, sliding_window_size=window)
    x = torch.rand(B, T, d_in)
    full = swa(x)
    cached = decode_chunks(swa, x, chunk)
    # Raschka's cache is [b, W, H, hd]; recorded as [b, H, W, hd] (oldest first)
    return {"outputs": {"x": record(x), "full": record(full), "cached": record(cached),
                        "cache_k": record(swa.cache_k.transpose(1, 2)),
                        "cache_v": record(swa.cache_v.transpose(1, 2))}}


CASES = [
    ("gqa_book_s123",
     "torch.manual_seed(123); gqa = GroupedQueryAttention(d_in=3, d_out=8, dropout=0.0, num_heads=4, "
     "num_kv_groups=2); gqa(batch); gqa(batch, use_cache=True); gqa.cache_k.shape",
     case_gqa_book, {"num_kv_groups": 2}),
    ("mqa_book_s123", "the same with num_kv_groups=1", case_gqa_book, {"num_kv_groups": 1}),
    ("mha_book_s123", "the same with num_kv_groups=4 (= num_heads)", case_gqa_book, {"num_kv_groups": 4}),
    ("gqa_decode_s7",
     "torch.manual_seed(7); gqa = GroupedQueryAttention(4, 12, 0.0, 6, 3, qkv_bias=True); "
     "x = torch.rand(2, 10, 4); gqa(x); then x fed in chunks of 3 with use_cache=True",
     case_gqa_decode, dict(seed=7, B=2, T=10, d_in=4, d_out=12, num_heads=6, num_kv_groups=3,
                           qkv_bias=True, chunk=3)),
    ("gqa_train_s5",
     "torch.manual_seed(5); gqa = GroupedQueryAttention(4, 8, 0.3, 4, 2, qkv_bias=True); "
     "x = torch.rand(2, 5, 4); gqa(x)  # training mode",
     case_gqa_train, dict(seed=5, B=2, T=5, d_in=4, d_out=8, p=0.3, num_heads=4, num_kv_groups=2)),
    ("swa_book_s123",
     "torch.manual_seed(123); swa = MultiHeadAttentionWithSWA(d_in=3, d_out=4, dropout=0.0, "
     "num_heads=2, sliding_window_size=3); swa(batch)",
     case_swa_book, {}),
    ("swa_decode_s9",
     "torch.manual_seed(9); swa = MultiHeadAttentionWithSWA(4, 6, 0.0, 3, qkv_bias=True, "
     "sliding_window_size=4); x = torch.rand(2, 12, 4); swa(x); then x fed in chunks of 5 with use_cache=True",
     case_swa_decode, dict(seed=9, B=2, T=12, d_in=4, d_out=6, num_heads=3, window=4, chunk=5)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "gqa_swa.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    listed = []
    for name, python, fn, kw in CASES:
        listed.append({"name": name, "python": python, **fn(**kw)})
    doc = provenance(SCRIPT,
        modules_from="rasbt/LLMs-from-scratch 28c65cdfbc3338e2e040016eea4b7fdf556e4d57: "
                        "ch04/04_gqa/gpt_with_kv_gqa.py, ch04/06_swa/gpt_with_kv_swa.py",
        format="Each case: `python` is the code that produced it. `outputs` maps a name to "
                  "{shape, values (float32 as exact decimal doubles, row-major), repr (print(tensor)) "
                  "for at most 100 elements}. `repr` is print(module); `draws_after_init` counts "
                  "32-bit draws of the construction; `cache_k_shape` is print(module.cache_k.shape).",
        cases=listed)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(listed)} cases")


if __name__ == "__main__":
    sys.exit(main())
