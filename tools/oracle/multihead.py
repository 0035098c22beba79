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

The modules are imported from tools/oracle/reference/, which runs them as the book and the
notebooks define them (the first four from the project's copies of their texts, data/sources/):
- `CausalAttention`: Raschka ch. 3.5.3 (notebooks 002 In [16] and 004 In [52] write the same
  class; 002's applies no dropout);
- `MultiHeadAttentionWrapper`: Raschka ch. 3.6.1 (a list of CausalAttention heads, concatenated);
- `MultiHeadAttention`: Raschka ch. 3.6.2 (`out_proj` with a bias);
- `MultiHeadAtt`: notebook 004 In [58] (the same weight split, its out-projection biased like
  the queries: no bias there);
- `GPT2Attention`: notebook 003 (the GPT-2 layout of the `pt-nlp-gpt` repository the notebook
  imports: fused `c_attn`, `bias` buffer, `c_proj`, two dropouts).
The input is the book's (tools/oracle/book_inputs.py).

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

import datetime
import os
import platform
import re
import sys

import numpy as np
import torch
from book_inputs import BATCH
from oracle_common import (ROOT, arguments, blas_library, cpu_capability, debian_version,
                           draws_since, record, write_json)
from reference import (CausalAttention, GPT2Attention, MultiHeadAtt, MultiHeadAttention,
                       MultiHeadAttentionWrapper)

SCRIPT = "tools/oracle/multihead.py"


def case_002_in19():
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, BATCH.shape[1], 0.0)
    return {"outputs": {"context_vecs": record(ca(BATCH), numpy=True)}}


def case_004_history():
    torch.manual_seed(123)
    ca = CausalAttention(d_in=3, d_out=2, context_length=BATCH.shape[1], dropout=0.5)
    out62 = ca(BATCH)
    s62 = torch.get_rng_state()
    runs = []
    states = []
    for _ in range(2):
        multi = MultiHeadAtt(d_in=3, d_out=2, dropout=0.2, conlen=6, num_heads=2)
        runs.append(multi(BATCH))
        states.append(torch.get_rng_state())
    return {
        "outputs": {"in62": record(out62, numpy=True), "in64_first_run": record(runs[0], numpy=True),
                    "in64_second_run": record(runs[1], numpy=True)},
        "draws_after": {"in62": draws_since(123, s62), "in64_first_run": draws_since(123, states[0]),
                        "in64_second_run": draws_since(123, states[1])},
    }


def case_book_wrapper():
    torch.manual_seed(123)
    mha = MultiHeadAttentionWrapper(3, 2, BATCH.shape[1], 0.0, num_heads=2)
    return {"outputs": {"context_vecs": record(mha(BATCH), numpy=True)}}


def case_book_mha():
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, BATCH.shape[1], 0.0, num_heads=2)
    return {"outputs": {"context_vecs": record(mha(BATCH), numpy=True)}}


def case_003_gpt2(seed):
    torch.manual_seed(seed)
    layer = GPT2Attention(n_embd=12, n_head=3, block_size=5)
    layer.eval()
    x = torch.randn(16, 5, 12)
    return {"outputs": {"input_tensor": record(x, numpy=True),
                        "original_output": record(layer(x), numpy=True)}}


def case_causal_train(seed, B, T, d_in, d_out, context_length, p, qkv_bias):
    torch.manual_seed(seed)
    ca = CausalAttention(d_in, d_out, context_length, p, qkv_bias)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x, numpy=True), "context_vec": record(ca(x), numpy=True)}}


def case_wrapper_train(seed, B, T, d_in, d_out, context_length, p, num_heads, qkv_bias):
    torch.manual_seed(seed)
    mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, p, num_heads, qkv_bias)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x, numpy=True), "context_vec": record(mha(x), numpy=True)}}


def case_mha_train(seed, B, T, d_in, d_out, context_length, p, num_heads, qkv_bias):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, d_out, context_length, p, num_heads, qkv_bias)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x, numpy=True), "context_vec": record(mha(x), numpy=True)}}


def case_gpt2_train(seed, B, T, S, H, block_size, p, bias):
    torch.manual_seed(seed)
    layer = GPT2Attention(S, H, block_size, p, bias)
    x = torch.rand(B, T, S)
    return {"outputs": {"x": record(x, numpy=True), "y": record(layer(x), numpy=True)}}


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
                          qkv_bias=True)),
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
    args = arguments(__doc__, "multihead.json")
    torch.set_num_threads(1)
    cases = {}
    listed = []
    for name, python, fn, kw in CASES:
        result = fn(**kw)
        cases[name] = result
        listed.append({"name": name, "python": python, **result})
    facts = check_against_book(cases)
    # provenance() with numpy_version before blas_loaded, the order this file has always had
    doc = {
        "produced_by": SCRIPT,
        "command": "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 " + SCRIPT,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch_version": torch.__version__,
        "debian_package": "python3-torch " + debian_version(),
        "numpy_version": np.__version__,
        "blas_loaded": blas_library(),
        "python_version": platform.python_version(),
        "cpu_capability": cpu_capability(),
        "format": "Each case: `python` is the code that produced it (module classes as in this script). "
                  "`outputs` maps a name to {shape, values (float32 values as exact decimal doubles, "
                  "row-major), and for tensors of at most 100 elements repr (print(tensor) without grad_fn) "
                  "and numpy (print(t.numpy()))}. "
                  "`draws_after` counts 32-bit draws since the seed, read from torch.get_rng_state().",
        "facts_checked": facts,
        "cases": listed,
    }
    write_json(args.out, doc)
    print(f"wrote {args.out}: {len(listed)} cases; " + "; ".join(facts))


if __name__ == "__main__":
    sys.exit(main())
