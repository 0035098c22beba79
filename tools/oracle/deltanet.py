#!/usr/bin/python3
"""Records PyTorch's outputs for Gated DeltaNet and gated attention (chapter 18).

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as gqa_swa.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/deltanet.py \
        [--out data/oracle/deltanet.json]

The modules are the two classes of rasbt/LLMs-from-scratch ch04/08_deltanet/README.md (read at
28c65cdfbc3338e2e040016eea4b7fdf556e4d57) with the fix merged as pull request #1033,
`GatedMultiHeadAttention` and `GatedDeltaNet`, written in tools/oracle/reference/deltanet.py
(which lists the edits for torch 1.13: an `RMSNorm` for `nn.RMSNorm`, and the final state kept
in `last_state`). The input is the book's (tools/oracle/book_inputs.py).

Each case seeds the default generator, builds a module and runs it; it records outputs
(float32 values as exact decimal doubles, plus print(tensor) for small ones), module reprs and
the 32-bit draws the construction consumed. `tests/test_deltanet.cpp` reads only the JSON this
writes.

It also writes data/sources/oracle/oracle_18_gated_deltanet.txt: a text export of the cells
chapter 18 reprints (`In [n]:`, the code as executed, what it printed), read by
tools/extract_book.py like the notebooks.
"""

import os
import sys

import torch
from book_inputs import BATCH, setup_cell
from oracle_common import arguments, draws_since, export_cells, provenance, record, write_json
from reference import GatedDeltaNet, GatedMultiHeadAttention

SCRIPT = "tools/oracle/deltanet.py"
UPSTREAM = ("rasbt/LLMs-from-scratch 28c65cdfbc3338e2e040016eea4b7fdf556e4d57: ch04/08_deltanet/README.md "
            "(GatedMultiHeadAttention, GatedDeltaNet, l2norm), with pull request #1033 (no gate transpose)")


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
    setup_cell("from deltanet_readme import GatedDeltaNet, GatedMultiHeadAttention  # the README's classes"),
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
    args = arguments(__doc__, "deltanet.json", sources=True)
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
    write_json(args.out, doc)
    os.makedirs(args.sources, exist_ok=True)
    export(os.path.join(args.sources, "oracle_18_gated_deltanet.txt"),
           f"Text export of an oracle run of {UPSTREAM} (Apache License 2.0, (c) Sebastian Raschka): "
           f"GatedDeltaNet and GatedMultiHeadAttention, executed by {SCRIPT} with Debian's "
           f"{doc['debian_package']} (torch {doc['torch_version']}) on the reference BLAS, {doc['date']}: "
           "code cells and their printed outputs, in order.", CELLS)
    print(f"wrote {args.out}: {len(listed)} cases; and {args.sources}/oracle_18_gated_deltanet.txt")


if __name__ == "__main__":
    sys.exit(main())
