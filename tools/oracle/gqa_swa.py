#!/usr/bin/python3
"""Records PyTorch's outputs for grouped-query and sliding-window attention (chapters 13, 14).

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as multihead.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/gqa_swa.py \
        [--out data/oracle/gqa_swa.json]

The two modules are Raschka's, from rasbt/LLMs-from-scratch at commit 28c65cdf (April 2026),
written in tools/oracle/reference/ (which says how they differ from his text):
- `GroupedQueryAttention` (reference/gqa.py): ch04/04_gqa/gpt_with_kv_gqa.py;
- `MultiHeadAttentionWithSWA` (reference/swa.py): ch04/06_swa/gpt_with_kv_swa.py.
The input is the book's (tools/oracle/book_inputs.py).

Each case seeds the default generator, builds a module and runs it; it records outputs
(float32 values as exact decimal doubles, plus print(tensor) for small ones), module reprs,
cache shapes and contents, and the 32-bit draws the construction consumed (read from the
generator state). `tests/test_gqa_swa.cpp` reads only the JSON this writes.
"""

import sys

import torch
from book_inputs import BATCH
from oracle_common import arguments, decode_chunks, draws_since, provenance, record, write_json
from reference import GroupedQueryAttention, MultiHeadAttentionWithSWA

SCRIPT = "tools/oracle/gqa_swa.py"


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
    args = arguments(__doc__, "gqa_swa.json")
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
    write_json(args.out, doc)
    print(f"wrote {args.out}: {len(listed)} cases")


if __name__ == "__main__":
    sys.exit(main())
