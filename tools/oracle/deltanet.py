#!/usr/bin/python3
"""Records PyTorch's outputs for Gated DeltaNet and gated attention (chapter 18).

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as gqa_swa.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/deltanet.py \
        [--out data/oracle/deltanet.json]

The modules are the two classes of rasbt/LLMs-from-scratch ch04/08_deltanet/README.md
(last changed at 57430d2a13a25a868b306af6c8fdaca9d1387753, "Gated DeltaNet updates (#926)";
read at 28c65cdfbc3338e2e040016eea4b7fdf556e4d57)
with the fix merged as pull request #1033 (the output gate is not transposed: `gate` stays
[b, T, H, hd], the layout of the context it multiplies; without the fix the product raises a
size mismatch unless T == H):
- `GatedMultiHeadAttention` (W_query, W_gate, W_key, W_value, out_proj with bias, dropout;
  causal mask filled with finfo.min; context * sigmoid(gate) before out_proj);
- `GatedDeltaNet` (W_query, W_key, W_value, W_gate, W_beta, W_alpha, dt_bias = ones,
  A_log = log(uniform_(0, 16)), norm = RMSNorm(head_dim, eps=1e-6), out_proj with bias,
  dropout; the gated delta rule token by token; RMSNorm and SiLU gate; dropout; out_proj).
Edits for torch 1.13:
- `nn.RMSNorm` (torch >= 2.4) is replaced by `RMSNorm` below: a weight of ones and
  `x * rsqrt(mean(x ** 2, -1) + eps) * weight`, the arithmetic of torch's composite
  `rms_norm` (pow, mean = sum / n, add eps, rsqrt, mul, mul by the weight), printed as
  `nn.RMSNorm` prints itself;
- `GatedDeltaNet.forward` also keeps its final state `S` in `self.last_state` (one added line)
  so that the recurrent state can be compared.

Each case seeds the default generator, builds a module and runs it; it records outputs
(float32 values as exact decimal doubles, plus print(tensor) for small ones), module reprs and
the 32-bit draws the construction consumed. `tests/test_deltanet.cpp` reads only the JSON this
writes.

It also writes data/sources/oracle/oracle_18_gated_deltanet.txt: a text export of the cells
chapter 18 reprints (`In [n]:`, the code as executed, what it printed), read by
tools/extract_book.py like the notebooks.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from oracle_common import draws_since, export_cells, provenance

SCRIPT = "tools/oracle/deltanet.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UPSTREAM = ("rasbt/LLMs-from-scratch 28c65cdfbc3338e2e040016eea4b7fdf556e4d57: ch04/08_deltanet/README.md "
            "(GatedMultiHeadAttention, GatedDeltaNet, l2norm), with pull request #1033 (no gate transpose)")


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm(normalized_shape, eps) for torch 1.13 (edit: see the file comment)."""

    def __init__(self, normalized_shape, eps=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,)
        self.eps = eps
        self.elementwise_affine = True
        self.weight = nn.Parameter(torch.ones(normalized_shape))

    def forward(self, x):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x.mul(r).mul(self.weight)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class GatedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_gate = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1),
                             persistent=False)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        gate = self.W_gate(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, torch.finfo(attn_scores.dtype).min)
        attn_weights = torch.softmax(attn_scores / (self.head_dim ** 0.5), dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2)
        context = context.reshape(b, num_tokens, self.d_out)
        context = context * torch.sigmoid(gate)
        return self.out_proj(context)


def l2norm(x, dim=-1, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)


class GatedDeltaNet(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_gate = nn.Linear(d_in, d_out, bias=False)
        self.W_beta = nn.Linear(d_in, d_out, bias=False)
        self.W_alpha = nn.Linear(d_in, num_heads, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(num_heads))
        A_init = torch.empty(num_heads).uniform_(0, 16)
        self.A_log = nn.Parameter(torch.log(A_init))
        self.norm = RMSNorm(self.head_dim, eps=1e-6)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        beta = torch.sigmoid(self.W_beta(x))
        alpha_log = -self.A_log.exp().view(1, 1, -1) * F.softplus(self.W_alpha(x) + self.dt_bias)
        alpha = alpha_log.exp()
        gate = self.W_gate(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        beta = beta.view(b, num_tokens, self.num_heads, self.head_dim)
        gate = gate.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
        beta = beta.transpose(1, 2)
        # PR #1033: no `gate = gate.transpose(1, 2)` here
        queries = l2norm(queries, dim=-1) / (self.head_dim ** 0.5)
        keys = l2norm(keys, dim=-1)
        S = x.new_zeros(b, self.num_heads, self.head_dim, self.head_dim)
        outs = []
        for t in range(num_tokens):
            k_t = keys[:, :, t]
            q_t = queries[:, :, t]
            v_t = values[:, :, t]
            b_t = beta[:, :, t]
            a_t = alpha[:, t].unsqueeze(-1).unsqueeze(-1)
            S = S * a_t
            kv_mem = (S * k_t.unsqueeze(-1)).sum(dim=-2)
            delta = (v_t - kv_mem) * b_t
            S = S + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
            y_t = (S * q_t.unsqueeze(-1)).sum(dim=-2)
            outs.append(y_t)
        self.last_state = S  # edit: keeps the state for the oracle
        context = torch.stack(outs, dim=2).transpose(1, 2).contiguous()
        context = context.view(b, num_tokens, self.num_heads, self.head_dim)
        context = self.norm(context)
        context = context * F.silu(gate)
        context = context.view(b, num_tokens, self.d_out)
        context = self.dropout(context)
        return self.out_proj(context)


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


def case_gdn_book():
    torch.manual_seed(123)
    m = GatedDeltaNet(d_in=3, d_out=4, dropout=0.0, num_heads=2)
    draws = draws_since(123, torch.get_rng_state())
    with torch.no_grad():
        out = m(BATCH)
    return {"repr": repr(m), "draws_after_init": draws,
            "outputs": {"context_vecs": record(out), "A_log": record(m.A_log), "dt_bias": record(m.dt_bias),
                        "state": record(m.last_state)}}


def case_gdn(seed, B, T, d_in, d_out, num_heads, qkv_bias, p=0.0, shift=0.0):
    torch.manual_seed(seed)
    m = GatedDeltaNet(d_in, d_out, p, num_heads, qkv_bias)
    x = torch.rand(B, T, d_in) - shift
    with torch.no_grad():
        out = m(x)
    return {"outputs": {"x": record(x), "A_log": record(m.A_log), "context_vecs": record(out),
                        "state": record(m.last_state)}}


def case_gated_mha_book():
    torch.manual_seed(123)
    m = GatedMultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)
    draws = draws_since(123, torch.get_rng_state())
    with torch.no_grad():
        out = m(BATCH)
    return {"repr": repr(m), "draws_after_init": draws, "outputs": {"context_vecs": record(out)}}


def case_gated_mha(seed, B, T, d_in, d_out, num_heads, p):
    torch.manual_seed(seed)
    m = GatedMultiHeadAttention(d_in, d_out, T, p, num_heads, qkv_bias=True)
    x = torch.rand(B, T, d_in)
    with torch.no_grad():
        return {"outputs": {"x": record(x), "context_vecs": record(m(x))}}


CASES = [
    ("gdn_book_s123",
     "torch.manual_seed(123); gdn = GatedDeltaNet(d_in=3, d_out=4, dropout=0.0, num_heads=2); gdn(batch)",
     case_gdn_book, {}),
    ("gdn_s7",
     "torch.manual_seed(7); gdn = GatedDeltaNet(6, 12, 0.0, 3, qkv_bias=True); x = torch.rand(2, 19, 6) - 0.5; gdn(x)",
     case_gdn, dict(seed=7, B=2, T=19, d_in=6, d_out=12, num_heads=3, qkv_bias=True, shift=0.5)),
    ("gdn_hd32_s11",
     "torch.manual_seed(11); gdn = GatedDeltaNet(8, 64, 0.0, 2); x = torch.rand(1, 9, 8); gdn(x)",
     case_gdn, dict(seed=11, B=1, T=9, d_in=8, d_out=64, num_heads=2, qkv_bias=False)),
    ("gdn_train_s5",
     "torch.manual_seed(5); gdn = GatedDeltaNet(4, 8, 0.3, 2); x = torch.rand(2, 5, 4); gdn(x)  # training mode",
     case_gdn, dict(seed=5, B=2, T=5, d_in=4, d_out=8, num_heads=2, qkv_bias=False, p=0.3)),
    ("gated_mha_book_s123",
     "torch.manual_seed(123); gmha = GatedMultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, "
     "num_heads=2); gmha(batch)",
     case_gated_mha_book, {}),
    ("gated_mha_train_s9",
     "torch.manual_seed(9); gmha = GatedMultiHeadAttention(5, 8, 7, 0.2, 2, qkv_bias=True); "
     "x = torch.rand(2, 7, 5); gmha(x)  # training mode",
     case_gated_mha, dict(seed=9, B=2, T=7, d_in=5, d_out=8, num_heads=2, p=0.2)),
]


# The cells of chapter 18's printed blocks, run as written against his classes.
CELLS = [
    "import torch\n"
    "from deltanet_readme import GatedDeltaNet, GatedMultiHeadAttention  # the README's classes\n"
    "inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], "
    "[0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])\n"
    "batch = torch.stack((inputs, inputs))",
    "torch.manual_seed(123)\n"
    "gdn = GatedDeltaNet(d_in=3, d_out=4, dropout=0.0, num_heads=2)\n"
    "print(gdn)",
    "context_vecs = gdn(batch)\nprint(context_vecs)",
    "print(gdn.last_state)",
    "torch.manual_seed(123)\n"
    "gmha = GatedMultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)\n"
    "print(gmha)",
    "print(gmha(batch))",
]


def export(path, header, cells):
    """The cells run and written as a text export (oracle_common.export_cells), importing the
    README's classes as `deltanet_readme`."""
    export_cells(path, header, cells, {"deltanet_readme": {"GatedDeltaNet": GatedDeltaNet,
                                                           "GatedMultiHeadAttention": GatedMultiHeadAttention}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "deltanet.json"))
    ap.add_argument("--sources", default=os.path.join(ROOT, "data", "sources", "oracle"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    listed = [{"name": name, "python": python, **fn(**kw)} for name, python, fn, kw in CASES]
    doc = provenance(SCRIPT,
        modules_from=UPSTREAM,
        format="Each case: `python` is the code that produced it. `outputs` maps a name to "
                  "{shape, values (float32 as exact decimal doubles, row-major), repr (print(tensor)) "
                  "for at most 100 elements}. `repr` is print(module); `draws_after_init` counts "
                  "32-bit draws of the construction; `state` is the recurrent state S [b, H, hd, hd] "
                  "after the last token (S[i][j]: key dimension i, value dimension j).",
        cases=listed)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.makedirs(args.sources, exist_ok=True)
    export(os.path.join(args.sources, "oracle_18_gated_deltanet.txt"),
           f"Text export of an oracle run of {UPSTREAM} (Apache License 2.0, (c) Sebastian Raschka): "
           f"GatedDeltaNet and GatedMultiHeadAttention, executed by {SCRIPT} with Debian's "
           f"{doc['debian_package']} (torch {doc['torch_version']}) on the reference BLAS, {doc['date']}: "
           "code cells and their printed outputs, in order.", CELLS)
    print(f"wrote {args.out}: {len(listed)} cases; and {args.sources}/oracle_18_gated_deltanet.txt")


if __name__ == "__main__":
    sys.exit(main())
