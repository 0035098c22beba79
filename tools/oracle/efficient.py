#!/usr/bin/python3
"""Records PyTorch's outputs for the layouts of chapter 11 (attn/efficient.hpp).

Run with Debian's interpreter (python3-torch 1.13) on Debian's reference BLAS, as
tools/oracle/multihead.py explains:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/efficient.py \
        [--out data/oracle/efficient.json]

Cases:
- `torch_mha_*`: (d_in = d_out: nn.MultiheadAttention's query has E features) Raschka's `MultiHeadAttention` (ch. 3.6.2, as in multihead.py) after a seed,
  its weights copied into `torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True)`
  (`in_proj_weight = cat(W_query, W_key, W_value)`, `in_proj_bias` the three biases or zeros,
  `out_proj` as is), run with the causal `attn_mask` and `need_weights=True`: both modules'
  outputs and the head-averaged weights.
- `combined_qkv_book`: Raschka's `MultiHeadAttentionCombinedQKV(3, 2, 2, 6)` drawn right after
  `torch.manual_seed(123)` (its `qkv` then `proj`), on the book's batch.
PyTorch 1.13 has no `scaled_dot_product_attention`; those kernels are tested by relation.
Neither building nor testing needs this script: tests/test_efficient.cpp reads the JSON.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from multihead import MultiHeadAttention, record  # noqa: E402
from oracle_common import provenance  # noqa: E402

SCRIPT = "tools/oracle/efficient.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUTS = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                       [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])


class MultiHeadAttentionCombinedQKV(torch.nn.Module):
    """Raschka's class (ch03/02_bonus_efficient-multihead-attention), dropout 0."""

    def __init__(self, d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "embed_dim is indivisible by num_heads"
        self.num_heads = num_heads
        self.context_length = context_length
        self.head_dim = d_out // num_heads
        self.qkv = torch.nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.proj = torch.nn.Linear(d_out, d_out)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        batch_size, num_tokens, embed_dim = x.shape
        qkv = self.qkv(x).view(batch_size, num_tokens, 3, self.num_heads, self.head_dim)
        queries, keys, values = qkv.permute(2, 0, 3, 1, 4)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(batch_size, num_tokens, self.proj.in_features)
        return self.proj(context_vec)


def torch_mha_case(seed, d_in, d_out, num_heads, qkv_bias, x_shape):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, d_out, 64, 0.0, num_heads, qkv_bias=qkv_bias)
    x = torch.rand(*x_shape)
    # nn.MultiheadAttention's query must have E = d_out features: d_in = d_out here.
    t = torch.nn.MultiheadAttention(d_out, num_heads, bias=True, batch_first=True)
    with torch.no_grad():
        t.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
        if qkv_bias:
            t.in_proj_bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]))
        else:
            t.in_proj_bias.zero_()
        t.out_proj.weight.copy_(mha.out_proj.weight)
        t.out_proj.bias.copy_(mha.out_proj.bias)
    T = x.shape[1]
    mask = torch.triu(torch.ones(T, T), diagonal=1).bool()
    out, weights = t(x, x, x, attn_mask=mask, need_weights=True)
    return {"seed": seed, "outputs": {"x": record(x), "mha": record(mha(x)), "attn_output": record(out),
                                      "attn_output_weights": record(weights)}}


def combined_case():
    torch.manual_seed(123)
    m = MultiHeadAttentionCombinedQKV(3, 2, 2, 6)
    x = torch.stack((INPUTS, INPUTS))
    return {"seed": 123, "outputs": {"qkv_weight": record(m.qkv.weight), "proj_weight": record(m.proj.weight),
                                     "proj_bias": record(m.proj.bias), "output": record(m(x))}}


CASES = [
    ("torch_mha_seed123", "torch_mha_case(123, 2, 2, 2, False, (2, 6, 2))",
     lambda: torch_mha_case(123, 2, 2, 2, False, (2, 6, 2))),
    ("torch_mha_random", "torch_mha_case(0, 8, 8, 4, True, (2, 7, 8))",
     lambda: torch_mha_case(0, 8, 8, 4, True, (2, 7, 8))),
    ("combined_qkv_book", "MultiHeadAttentionCombinedQKV(3, 2, 2, 6) after manual_seed(123), on the batch",
     combined_case),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "efficient.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    doc = provenance(SCRIPT, blas=False,
        format="Each case: `python` is the call that produced it; `outputs` maps a name to {shape, "
                  "values (float32 as exact decimal doubles, row-major), repr for small tensors}.",
        cases=[{"name": n, "python": p, **fn()} for n, p, fn in CASES])
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(doc['cases'])} cases")


if __name__ == "__main__":
    main()
