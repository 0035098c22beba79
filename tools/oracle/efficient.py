#!/usr/bin/python3
"""Records PyTorch's outputs for the layouts of chapter 11 (attn/efficient.hpp).

Run with Debian's interpreter (python3-torch 1.13) on Debian's reference BLAS, as
tools/oracle/multihead.py explains:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/efficient.py \
        [--out data/oracle/efficient.json]

Cases:
- `torch_mha_*`: (d_in = d_out: nn.MultiheadAttention's query has E features) Raschka's
  `MultiHeadAttention` (ch. 3.6.2, run from his text by tools/oracle/reference/ch03.py) after a seed,
  its weights copied into `torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True)`
  (`in_proj_weight = cat(W_query, W_key, W_value)`, `in_proj_bias` the three biases or zeros,
  `out_proj` as is), run with the causal `attn_mask` and `need_weights=True`: both modules'
  outputs and the head-averaged weights.
- `combined_qkv_book`: Raschka's `MultiHeadAttentionCombinedQKV(3, 2, 2, 6)` (reference/mha_implementations.py)
  drawn right after `torch.manual_seed(123)` (its `qkv` then `proj`), on the book's batch.
PyTorch 1.13 has no `scaled_dot_product_attention`; those kernels are tested by relation.
Neither building nor testing needs this script: tests/test_efficient.cpp reads the JSON.
"""

import torch
from book_inputs import BATCH
from oracle_common import arguments, provenance, record, write_json
from reference import MultiHeadAttention, MultiHeadAttentionCombinedQKV

SCRIPT = "tools/oracle/efficient.py"


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
    return {"seed": seed, "outputs": {"x": record(x, numpy=True), "mha": record(mha(x), numpy=True),
                                      "attn_output": record(out, numpy=True),
                                      "attn_output_weights": record(weights, numpy=True)}}


def combined_case():
    torch.manual_seed(123)
    m = MultiHeadAttentionCombinedQKV(3, 2, 2, 6)
    return {"seed": 123, "outputs": {"qkv_weight": record(m.qkv.weight, numpy=True),
                                     "proj_weight": record(m.proj.weight, numpy=True),
                                     "proj_bias": record(m.proj.bias, numpy=True),
                                     "output": record(m(BATCH), numpy=True)}}


CASES = [
    ("torch_mha_seed123", "torch_mha_case(123, 2, 2, 2, False, (2, 6, 2))",
     lambda: torch_mha_case(123, 2, 2, 2, False, (2, 6, 2))),
    ("torch_mha_random", "torch_mha_case(0, 8, 8, 4, True, (2, 7, 8))",
     lambda: torch_mha_case(0, 8, 8, 4, True, (2, 7, 8))),
    ("combined_qkv_book", "MultiHeadAttentionCombinedQKV(3, 2, 2, 6) after manual_seed(123), on the batch",
     combined_case),
]


def main():
    args = arguments(__doc__, "efficient.json")
    torch.set_num_threads(1)
    doc = provenance(SCRIPT, blas=False,
        format="Each case: `python` is the call that produced it; `outputs` maps a name to {shape, "
                  "values (float32 as exact decimal doubles, row-major), repr for small tensors}.",
        cases=[{"name": n, "python": p, **fn()} for n, p, fn in CASES])
    write_json(args.out, doc)
    print(f"wrote {args.out}: {len(doc['cases'])} cases")


if __name__ == "__main__":
    main()
