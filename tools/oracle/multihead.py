#!/usr/bin/python3
"""Records PyTorch's outputs for the attention modules of chapters 6 and 7.

Run with Debian's interpreter, which has python3-torch 1.13 (CPU, no MKL: the portable
Bernoulli path for dropout) and NumPy, on Debian's reference BLAS (netlib `libblas3`):

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/multihead.py \
        [--out data/oracle/multihead.json]

Why the reference BLAS: Debian's torch calls whatever `libblas.so.3` the alternatives system
points at (OpenBLAS by default) for `nn.Linear`'s matrix product. OpenBLAS's kernels use fused
multiply-adds and their own summation order, which moves the last bit of several values;
the reference BLAS sums each dot product in order with separate multiplies and adds, and with
it this script reproduces notebook 004 In [62] and In [64] byte for byte (it checks that
below, and refuses to write otherwise). The batched products (`bmm` of these small sizes) do
not go through BLAS at all: PyTorch's small-size kernel also sums in order.

The modules are written out below as the notebooks and the book define them:
- `CausalAttention`: notebook 002 In [16] / 004 In [52] (Raschka, ch. 3.5.3), plus dropout;
- `MultiHeadAttentionWrapper`: Raschka ch. 3.6.1 (a list of CausalAttention heads, concatenated);
- `MultiHeadAttention`: Raschka ch. 3.6.2 (`out_proj` with a bias); `MultiHeadAtt` of notebook
  004 In [58] is the same with `out_proj` bias = `qkv_bias` (False there);
- `GPT2Attention`: notebook 003 (the GPT-2 layout of the `pt-nlp-gpt` repository the notebook
  imports: fused `c_attn`, `bias` buffer, `c_proj`, two dropouts).

Each case seeds the default generator, builds modules and runs them in a fixed order, and
records every output (float32 values, exact as decimal doubles), its `repr` (PyTorch's print,
without grad_fn) and NumPy's print, and how many 32-bit draws the case consumed. That count is
read from PyTorch's own state: the generator after the case must equal a fresh one advanced by
exactly that many draws (checked with `torch.rand(n)`, one draw per element).

Before writing, the script checks that it reproduces the book where the book has the same
cells: notebook 002 In [19] and 004 In [62] and In [64] (the second run after In [62], see
data/sources/notes/pytorch-cpu-rng.md), comparing with `data/book/`.

Neither building nor testing the project needs this script or PyTorch: the JSON it wrote is
committed, and `tests/test_multihead.cpp` reads only that.
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys

import numpy as np
import torch
from oracle_common import MT_BYTES, blas_library, draws_since, mt_part  # noqa: E402,F401

SCRIPT = "tools/oracle/multihead.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Layout of torch.get_rng_state() for the CPU generator: the MT19937 part comes first
# (uint64 seed, int left, int seeded, uint64 next, uint64 state[624]).


class CausalAttention(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class MultiHeadAttentionWrapper(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = torch.nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, out_bias=True):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = torch.nn.Linear(d_out, d_out, bias=out_bias)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


class GPT2Attention(torch.nn.Module):
    """Notebook 003's layer: fused c_attn, a [1, 1, T, T] tril buffer named bias, c_proj."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.2, bias=False):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = torch.nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = torch.nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = torch.nn.Dropout(dropout)
        self.resid_dropout = torch.nn.Dropout(dropout)
        self.num_heads = n_head
        self.head_dim = n_embd // n_head
        tri = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", tri)

    def forward(self, x):
        B, T, S = x.size()
        q, k, v = self.c_attn(x).split(S, dim=2)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = torch.nn.functional.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, S)
        return self.resid_dropout(self.c_proj(y))


INPUTS = torch.tensor([[0.43, 0.15, 0.89],
                       [0.55, 0.87, 0.66],
                       [0.57, 0.85, 0.64],
                       [0.22, 0.58, 0.33],
                       [0.77, 0.25, 0.10],
                       [0.05, 0.80, 0.55]])
BATCH = torch.stack((INPUTS, INPUTS), dim=0)


def record(t):
    """Values always; the printed forms only for small tensors (they keep the file small)."""
    t = t.detach().contiguous()
    out = {"shape": list(t.shape), "values": [float(v) for v in t.reshape(-1).tolist()]}
    if t.numel() <= 100:
        out["repr"] = repr(t)
        out["numpy"] = str(t.numpy())
    return out


def case_002_in19():
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, BATCH.shape[1], 0.0)
    return {"outputs": {"context_vecs": record(ca(BATCH))}}


def case_004_history():
    torch.manual_seed(123)
    ca = CausalAttention(d_in=3, d_out=2, context_length=BATCH.shape[1], dropout=0.5)
    out62 = ca(BATCH)
    s62 = torch.get_rng_state()
    runs = []
    states = []
    for _ in range(2):
        multi = MultiHeadAttention(3, 2, 6, 0.2, 2, qkv_bias=False, out_bias=False)
        runs.append(multi(BATCH))
        states.append(torch.get_rng_state())
    return {
        "outputs": {"in62": record(out62), "in64_first_run": record(runs[0]),
                    "in64_second_run": record(runs[1])},
        "draws_after": {"in62": draws_since(123, s62), "in64_first_run": draws_since(123, states[0]),
                        "in64_second_run": draws_since(123, states[1])},
    }


def case_book_wrapper():
    torch.manual_seed(123)
    mha = MultiHeadAttentionWrapper(3, 2, BATCH.shape[1], 0.0, num_heads=2)
    return {"outputs": {"context_vecs": record(mha(BATCH))}}


def case_book_mha():
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, BATCH.shape[1], 0.0, num_heads=2)
    return {"outputs": {"context_vecs": record(mha(BATCH))}}


def case_003_gpt2(seed):
    torch.manual_seed(seed)
    layer = GPT2Attention(n_embd=12, n_head=3, block_size=5)
    layer.eval()
    x = torch.randn(16, 5, 12)
    return {"outputs": {"input_tensor": record(x), "original_output": record(layer(x))}}


def case_causal_train(seed, B, T, d_in, d_out, context_length, p, qkv_bias):
    torch.manual_seed(seed)
    ca = CausalAttention(d_in, d_out, context_length, p, qkv_bias)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x), "context_vec": record(ca(x))}}


def case_wrapper_train(seed, B, T, d_in, d_out, context_length, p, num_heads, qkv_bias):
    torch.manual_seed(seed)
    mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, p, num_heads, qkv_bias)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x), "context_vec": record(mha(x))}}


def case_mha_train(seed, B, T, d_in, d_out, context_length, p, num_heads, qkv_bias, out_bias):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, d_out, context_length, p, num_heads, qkv_bias, out_bias)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x), "context_vec": record(mha(x))}}


def case_gpt2_train(seed, B, T, S, H, block_size, p, bias):
    torch.manual_seed(seed)
    layer = GPT2Attention(S, H, block_size, p, bias)
    x = torch.rand(B, T, S)
    return {"outputs": {"x": record(x), "y": record(layer(x))}}


CASES = [
    ("nb002_in19", "torch.manual_seed(123); ca = CausalAttention(3, 2, 6, 0.0); ca(batch)",
     case_002_in19, {}),
    ("nb004_history",
     "torch.manual_seed(123); ca = CausalAttention(3, 2, 6, 0.5); ca(batch)  # In [62]; "
     "then twice: multi = MultiHeadAtt(d_in=3, d_out=2, dropout=0.2, conlen=6, num_heads=2); "
     "multi(batch)  # In [64], run twice",
     case_004_history, {}),
    ("book_wrapper_s123",
     "torch.manual_seed(123); mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2); mha(batch)",
     case_book_wrapper, {}),
    ("book_mha_s123",
     "torch.manual_seed(123); mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2); mha(batch)",
     case_book_mha, {}),
    ("nb003_gpt2_s123",
     "torch.manual_seed(123); layer = GPT2Attention(n_embd=12, n_head=3, block_size=5); "
     "layer.eval(); x = torch.randn(16, 5, 12); layer(x)",
     case_003_gpt2, {"seed": 123}),
    ("causal_train_s5",
     "torch.manual_seed(5); ca = CausalAttention(4, 3, 7, 0.3, qkv_bias=True); x = torch.rand(3, 5, 4); ca(x)",
     case_causal_train, dict(seed=5, B=3, T=5, d_in=4, d_out=3, context_length=7, p=0.3, qkv_bias=True)),
    ("wrapper_train_s11",
     "torch.manual_seed(11); mha = MultiHeadAttentionWrapper(5, 2, 4, 0.25, 3, qkv_bias=True); "
     "x = torch.rand(2, 4, 5); mha(x)",
     case_wrapper_train, dict(seed=11, B=2, T=4, d_in=5, d_out=2, context_length=4, p=0.25,
                              num_heads=3, qkv_bias=True)),
    ("mha_train_s7",
     "torch.manual_seed(7); mha = MultiHeadAttention(4, 6, 8, 0.3, 3, qkv_bias=True, out_bias=True); "
     "x = torch.rand(3, 5, 4); mha(x)",
     case_mha_train, dict(seed=7, B=3, T=5, d_in=4, d_out=6, context_length=8, p=0.3, num_heads=3,
                          qkv_bias=True, out_bias=True)),
    ("gpt2_train_s9",
     "torch.manual_seed(9); layer = GPT2Attention(n_embd=6, n_head=2, block_size=6, dropout=0.2, "
     "bias=True); x = torch.rand(2, 4, 6); layer(x)  # training mode",
     case_gpt2_train, dict(seed=9, B=2, T=4, S=6, H=2, block_size=6, p=0.2, bias=True)),
]


def book_text(entry_id):
    nb = entry_id[:3]
    with open(os.path.join(ROOT, "data", "book", nb, entry_id + ".txt"), encoding="utf-8") as f:
        return f.read().rstrip("\n")


def strip_grad_fn(text):
    import re
    return re.sub(r",\s*grad_fn=<[A-Za-z0-9_]+>", "", text)


def check_against_book(cases):
    """The oracle must reproduce the book where the book printed the same thing."""
    facts = []
    c = cases["nb002_in19"]["outputs"]["context_vecs"]
    ours = f"Context vectors:\n{c['repr']}\n\nShape: torch.Size({c['shape']})"
    assert ours == strip_grad_fn(book_text("002-In19")), "002 In [19] not reproduced"
    facts.append("reproduces 002 In [19] byte for byte")
    h = cases["nb004_history"]["outputs"]
    ours = f"Batched Context Matrices: \n\n {h['in62']['numpy']}"
    assert ours == book_text("004-In62"), "004 In [62] not reproduced"
    facts.append("reproduces 004 In [62] byte for byte")
    second = np.array(h["in64_second_run"]["values"], dtype=np.float32).reshape(h["in64_second_run"]["shape"])
    for i, eid, label in ((0, "004-In64-1", "First"), (1, "004-In64-2", "Second")):
        ours = f"{label} head Context Matrix: \n{second[i]}"
        assert ours == book_text(eid), f"{eid} not reproduced"
    facts.append("reproduces 004 In [64] (both prints) byte for byte with the second run after In [62]")
    first = np.array(h["in64_first_run"]["values"], dtype=np.float32).reshape(h["in64_first_run"]["shape"])
    if not np.array_equal(first[0], second[0]):
        facts.append("the first run of In [64] does not print the book's values")
    return facts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "multihead.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cases = {}
    listed = []
    for name, python, fn, kw in CASES:
        result = fn(**kw)
        cases[name] = result
        listed.append({"name": name, "python": python, **result})
    facts = check_against_book(cases)
    try:
        pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-torch"],
                             capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        pkg = "unknown"
    doc = {
        "produced_by": SCRIPT,
        "command": "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 " + SCRIPT,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch_version": torch.__version__,
        "debian_package": "python3-torch " + pkg,
        "numpy_version": np.__version__,
        "blas_loaded": blas_library(),
        "python_version": platform.python_version(),
        "cpu_capability": next((l.split(":", 1)[1].strip() for l in torch.__config__.show().splitlines()
                                if "CPU capability usage" in l), "unknown"),
        "format": "Each case: `python` is the code that produced it (module classes as in this script). "
                  "`outputs` maps a name to {shape, values (float32 values as exact decimal doubles, "
                  "row-major), and for tensors of at most 100 elements repr (print(tensor) without grad_fn) "
                  "and numpy (print(t.numpy()))}. "
                  "`draws_after` counts 32-bit draws since the seed, read from torch.get_rng_state().",
        "facts_checked": facts,
        "cases": listed,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(listed)} cases; " + "; ".join(facts))


if __name__ == "__main__":
    sys.exit(main())
