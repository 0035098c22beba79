#!/usr/bin/python3
"""Records what PyTorch does with empty, zero and half-changed inputs (tests/test_edges.cpp).

Run with Debian's interpreter (python3-torch 1.13) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/edges.py \
        [--out data/oracle/edges.json]

Cases (each names the call that produced it in `python`):
- `empty_*`: the reference modules (tools/oracle/reference/) in training mode, dropout 0.2,
  after `torch.manual_seed(123)`, on `x` of 0 tokens (`[2, 0, d_in]`) and of batch 0
  (`[0, 3, d_in]`): the output's shape, whether `y.sum().backward()` leaves every parameter's
  gradient zero, and `torch.rand(1)` drawn right after (the draws the forward made); with
  `use_cache=True`, the cache position after the empty call and after 2 more tokens, and the
  output's shape. A module whose forward raises records the exception (`raises`).
- `sdpa_zero_heads`: PyTorch 1.13 has no `F.scaled_dot_product_attention`; its math path
  `softmax(q @ k^T * scale) @ v` on `[1, 0, 3, 4]` (no heads) and `[0, 2, 3, 4]`.
- `scale_*`: the math path with `scale` 0 (causal) and -0.5, its output and the gradients of
  `(out * grad_output).sum()` with respect to q, k, v (autograd).
- `softmax_dim*` / `log_softmax_dim*`: `torch.softmax` / `torch.log_softmax` over a dimension
  other than the last, every float32 as its bit pattern (one thread: PyTorch's split of the
  inner positions between its vector and scalar paths depends on the thread count).
- `linear_bias_broadcast`: `F.linear` with a bias of shape `[1]` (as `nn.Linear` with its bias
  replaced): output, and the gradients of `(y * g).sum()` for weight, bias and input.
- `mha_mask_3d`: `nn.MultiheadAttention(4, 2, batch_first=True)` after `manual_seed(0)`, a
  3-D bool `attn_mask [B * H, L, S]` (true = may not attend): its parameters, inputs, output
  and head-averaged weights.
- `refusals`: what PyTorch raises for the half-changed modules the library refuses (GPT-2's
  `c_attn` of 13 outputs, its `bias` buffer replaced by a 2-D one), and the width it returns for
  an `out_proj` of another output width.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from oracle_common import arguments, provenance, record, write_json
from reference import (CausalAttention, GatedDeltaNet, GatedMultiHeadAttention, GPT2Attention,
                       GroupedQueryAttention, MultiHeadAttention, MultiHeadAttentionWithDSA,
                       MultiHeadAttentionWithKVSharing, MultiHeadAttentionWithSWA,
                       MultiHeadAttentionWrapper, MultiHeadLatentAttention)

SCRIPT = "tools/oracle/edges.py"


def bits(t):
    """A float32 tensor as {shape, bits}: exact, NaN and -0 included."""
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "bits": t.numpy().view(np.uint32).ravel().tolist()}


def bools(t):
    return {"shape": list(t.shape), "values": [int(v) for v in t.reshape(-1).tolist()]}


def context(out):
    """The context vector of a forward (KV sharing returns (context, new_shared_kv))."""
    return out[0] if isinstance(out, tuple) else out


# name, constructor (called after manual_seed(123)), d_in, whether it has use_cache
MODULES = [
    ("causal", "CausalAttention(3, 2, 6, 0.2)", lambda: CausalAttention(3, 2, 6, 0.2), 3, False),
    ("wrapper", "MultiHeadAttentionWrapper(3, 2, 6, 0.2, 2)", lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.2, 2), 3, False),
    ("multihead", "MultiHeadAttention(3, 4, 6, 0.2, 2)", lambda: MultiHeadAttention(3, 4, 6, 0.2, 2), 3, False),
    ("gpt2", "GPT2Attention(4, 2, 6, 0.2)", lambda: GPT2Attention(4, 2, 6, 0.2), 4, False),
    ("gqa", "GroupedQueryAttention(3, 4, 0.2, 2, 1)", lambda: GroupedQueryAttention(3, 4, 0.2, 2, 1), 3, True),
    ("swa", "MultiHeadAttentionWithSWA(3, 4, 0.2, 2, sliding_window_size=2)",
     lambda: MultiHeadAttentionWithSWA(3, 4, 0.2, 2, sliding_window_size=2), 3, True),
    ("mla", "MultiHeadLatentAttention(3, 4, 0.2, 2, latent_dim=2)",
     lambda: MultiHeadLatentAttention(3, 4, 0.2, 2, latent_dim=2), 3, True),
    ("kv_sharing", "MultiHeadAttentionWithKVSharing(3, 4, 0.2, 2)",
     lambda: MultiHeadAttentionWithKVSharing(3, 4, 0.2, 2), 3, True),
    ("dsa", "MultiHeadAttentionWithDSA(3, 4, 0.2, 2, index_n_heads=2, index_head_dim=2, topk=2)",
     lambda: MultiHeadAttentionWithDSA(3, 4, 0.2, 2, index_n_heads=2, index_head_dim=2, topk=2), 3, True),
    ("gated", "GatedMultiHeadAttention(3, 4, 6, 0.2, 2)", lambda: GatedMultiHeadAttention(3, 4, 6, 0.2, 2), 3, False),
    ("deltanet", "GatedDeltaNet(3, 4, 0.2, 2)", lambda: GatedDeltaNet(3, 4, 0.2, 2), 3, False),
]


def empty_case(make, d_in, shape, use_cache):
    torch.manual_seed(123)
    m = make()
    m.train()
    out = {"x_shape": shape}
    try:
        if use_cache:
            y = context(m(torch.zeros(shape), use_cache=True))
            out["output_shape"] = list(y.shape)
            out["pos_after_empty"] = m.ptr_current_pos
            context(m(torch.rand(shape[0], 2, d_in), use_cache=True))
            out["pos_after_two_more"] = m.ptr_current_pos
        else:
            y = context(m(torch.zeros(shape)))
            out["output_shape"] = list(y.shape)
            y.sum().backward()
            out["grads_zero"] = all(p.grad is None or bool((p.grad == 0).all()) for p in m.parameters())
            out["grad_shapes"] = {n: list(p.grad.shape) for n, p in m.named_parameters() if p.grad is not None}
        out["next_rand"] = torch.rand(1).item()
    except Exception as e:  # his code's own failure on this input
        out["raises"] = f"{type(e).__name__}: {e}"
    return out


def math_sdpa(q, k, v, scale, causal=False):
    """softmax(q @ k^T * scale [causal]) @ v, as torch 2's documentation writes the math path."""
    s = (q @ k.transpose(-2, -1)) * scale
    if causal:
        Tq, Tk = q.shape[-2], k.shape[-2]
        s = s.masked_fill(torch.ones(Tq, Tk, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def sdpa_zero_heads():
    out = {}
    for name, shape in (("no_heads", (1, 0, 3, 4)), ("no_batch", (0, 2, 3, 4))):
        q = torch.zeros(shape)
        out[name] = {"input_shape": list(shape), "output_shape": list(math_sdpa(q, q, q, 0.5).shape)}
    return out


def scale_case(scale, causal):
    torch.manual_seed(6)
    q, k, v = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 3)
    g = torch.randn(1, 2, 5, 3)
    for t in (q, k, v):
        t.requires_grad_(True)
    y = math_sdpa(q, k, v, scale, causal)
    (y * g).sum().backward()
    return {"scale": scale, "is_causal": causal, "q": record(q), "k": record(k), "v": record(v),
            "grad_output": record(g), "output": record(y), "grad_query": record(q.grad),
            "grad_key": record(k.grad), "grad_value": record(v.grad)}


def softmax_cases():
    torch.manual_seed(11)
    cases = []
    for shape in ((3, 5, 9), (2, 11, 17), (4, 6, 1), (2, 3, 4, 10), (5, 2)):
        x = torch.randn(*shape) * 4
        x.view(-1)[3] = float("-inf")  # a masked entry (exp gives 0)
        for dim in range(len(shape) - 1):
            for fn in ("softmax", "log_softmax"):
                cases.append({"name": f"{fn}_dim{dim}_{'x'.join(map(str, shape))}", "call": fn, "dim": dim,
                              "python": f"torch.{fn}(x, dim={dim})", "input": bits(x),
                              "output": bits(getattr(torch, fn)(x, dim))})
    return cases


def linear_bias_case():
    torch.manual_seed(7)
    x = torch.randn(2, 3, 4, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    b = torch.randn(1, requires_grad=True)
    g = torch.randn(2, 3, 5)
    y = F.linear(x, w, b)
    (y * g).sum().backward()
    return {"x": record(x), "weight": record(w), "bias": record(b), "grad_output": record(g),
            "output": record(y), "grad_x": record(x.grad), "grad_weight": record(w.grad),
            "grad_bias": record(b.grad)}


def mha_mask_case():
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    q, kv = torch.rand(2, 3, 4), torch.rand(2, 5, 4)
    mask = torch.rand(4, 3, 5) < 0.4  # [B * H, L, S], head-major within each batch element
    mask[:, :, 0] = False  # every query sees key 0: no row of NaN
    out, weights = m(q, kv, kv, attn_mask=mask, need_weights=True)
    out2d, _ = m(q, kv, kv, attn_mask=mask[0], need_weights=True)
    return {"in_proj_weight": record(m.in_proj_weight), "in_proj_bias": record(m.in_proj_bias),
            "out_proj_weight": record(m.out_proj.weight), "out_proj_bias": record(m.out_proj.bias),
            "query": record(q), "key": record(kv), "attn_mask": bools(mask), "attn_output": record(out),
            "attn_output_weights": record(weights), "attn_output_mask2d": record(out2d)}


def refusals():
    out = {}
    torch.manual_seed(0)
    g = GPT2Attention(4, 2, 4, 0.0)
    g.c_attn = torch.nn.Linear(4, 13, bias=False)
    try:
        g(torch.rand(1, 3, 4))
    except Exception as e:
        out["gpt2_c_attn_13"] = f"{type(e).__name__}: {e}"
    g = GPT2Attention(4, 2, 4, 0.0)
    g.bias = torch.tril(torch.ones(4, 4))
    try:
        g(torch.rand(1, 3, 4))
    except Exception as e:
        out["gpt2_bias_2d"] = f"{type(e).__name__}: {e}"
    m = MultiHeadAttention(3, 4, 4, 0.0, 2)
    m.out_proj = torch.nn.Linear(4, 6)
    out["out_proj_6_output_shape"] = list(m(torch.rand(1, 3, 3)).shape)
    m = MultiHeadAttention(3, 4, 4, 0.0, 2)
    m.W_query = torch.nn.Linear(3, 6)
    try:
        m(torch.rand(1, 3, 3))
    except Exception as e:
        out["w_query_6"] = f"{type(e).__name__}: {e}"
    return out


def main():
    args = arguments(__doc__, "edges.json")
    torch.set_num_threads(1)
    cases = []
    for name, python, make, d_in, has_cache in MODULES:
        for label, shape in (("tokens0", [2, 0, d_in]), ("batch0", [0, 3, d_in])):
            cases.append({"name": f"empty_{name}_{label}", "python": f"{python}(torch.zeros({shape}))",
                          **empty_case(make, d_in, shape, False)})
            if has_cache:
                cases.append({"name": f"empty_{name}_{label}_cache",
                              "python": f"{python}(torch.zeros({shape}), use_cache=True)",
                              **empty_case(make, d_in, shape, True)})
    cases.append({"name": "sdpa_zero_heads", "python": "softmax(q @ k^T * 0.5) @ v on empty heads / batch",
                  **sdpa_zero_heads()})
    cases.append({"name": "scale_zero_causal", "python": "math path, scale=0.0, causal", **scale_case(0.0, True)})
    cases.append({"name": "scale_negative", "python": "math path, scale=-0.5", **scale_case(-0.5, False)})
    cases += softmax_cases()
    cases.append({"name": "linear_bias_broadcast", "python": "F.linear(x [2, 3, 4], w [5, 4], b [1])",
                  **linear_bias_case()})
    cases.append({"name": "mha_mask_3d", "python": "nn.MultiheadAttention(4, 2, batch_first=True), "
                  "attn_mask [4, 3, 5]", **mha_mask_case()})
    cases.append({"name": "refusals", "python": "half-changed modules in PyTorch", **refusals()})
    doc = provenance(SCRIPT, threads=1,
                     format="Each case: `python` names the call; tensors are {shape, values (float32 as exact "
                            "decimal doubles)} or {shape, bits (float32 bit patterns)}; bool tensors {shape, "
                            "values 0/1}.",
                     cases=cases)
    write_json(args.out, doc)
    print(f"wrote {args.out}: {len(cases)} cases")


if __name__ == "__main__":
    main()
