#!/usr/bin/python3
"""Records PyTorch's outputs for DeepSeek sparse attention (chapter 17).

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as gqa_swa.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/dsa.py \
        [--out data/oracle/dsa.json]

The module is the contributor's pull request to rasbt/LLMs-from-scratch (#1014, head
51805ca26f8201ccb6f0fef906138be66c86b403, ch04/09_dsa/gpt_with_kv_dsa.py, open in April 2026):
`LightningIndexer` (W_q_index, W_k_index, W_weights; scores sum_j softmax(w)_j *
ReLU(q_j . k * scale)) and `MultiHeadAttentionWithDSA` (W_query, W_key, W_value, out_proj with
bias, dropout, then the indexer; the top-k keys of each query kept, the rest masked to -inf; a
cache of keys, values and raw inputs grown by torch.cat), written in
tools/oracle/reference/dsa.py. No edit to the arithmetic; one edit of ours: `select` chooses the
top-k. His code calls `index_scores.topk(k)`, whose choice among equal scores (the exact zeros
ReLU makes) is whatever std::nth_element leaves in place, and depends on the row's length, so
his cached decoding can pick other keys than his full forward. The cases run his selection
(`"topk"`) and, where they say so, the rule this library states (`"stable"`:
`torch.sort(scores, descending=True, stable=True)`, equal scores earliest position first), and
record both selections. The input is the book's (tools/oracle/book_inputs.py).

Each case seeds the default generator, builds a module and runs it; it records outputs
(float32 values as exact decimal doubles, plus print(tensor) for small ones), module reprs,
index scores and selections, and the 32-bit draws the construction consumed.
`tests/test_dsa.cpp` reads only the JSON this writes.

It also writes data/sources/oracle/oracle_17_sparse_attention.txt: a text export of the cells
chapter 17 reprints (`In [n]:`, the code as executed, what it printed), read by
tools/extract_book.py like the notebooks.
"""

import os
import sys

import torch
from book_inputs import BATCH, setup_cell
from oracle_common import (arguments, decode_chunks, draws_since, export_cells, provenance, record,
                           write_json)
from reference import MultiHeadAttentionWithDSA, select

SCRIPT = "tools/oracle/dsa.py"
UPSTREAM = ("rasbt/LLMs-from-scratch pull request #1014 at 51805ca26f8201ccb6f0fef906138be66c86b403 "
            "(merge base 28c65cdfbc3338e2e040016eea4b7fdf556e4d57): ch04/09_dsa/gpt_with_kv_dsa.py")


def causal(T):
    return torch.zeros(T, T).masked_fill_(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))


def selections(module, x, k):
    """The indexer's scores of the full sequence (without the causal mask, so that JSON holds
    them), their print with the mask, and his top-k and the stable rule's selections, each row
    sorted ascending (a set)."""
    masked = module.indexer.scores(x, x, causal(x.shape[1]))
    k = min(k, x.shape[1])
    scores = record(module.indexer.scores(x, x))
    scores["repr_masked"] = repr(masked)
    return (scores, select(masked, k, "topk").sort(dim=-1).values,
            select(masked, k, "stable").sort(dim=-1).values)


def case_book(topk):
    torch.manual_seed(123)
    m = MultiHeadAttentionWithDSA(3, 4, 0.0, 2, index_n_heads=2, index_head_dim=4, topk=topk)
    draws = draws_since(123, torch.get_rng_state())
    with torch.no_grad():
        out = m(BATCH)
        scores, his, stable = selections(m, BATCH, topk)
    return {"repr": repr(m), "draws_after_init": draws,
            "outputs": {"context_vecs": record(out), "index_scores": scores,
                        "topk_selected": record(his), "stable_selected": record(stable)}}


def case_ties(seed, T, chunks):
    """A module whose index scores tie at 0 where the choice matters: his topk and the stable
    rule, full forward and cached decoding."""
    torch.manual_seed(seed)
    m = MultiHeadAttentionWithDSA(4, 8, 0.0, 2, index_n_heads=2, index_head_dim=4, topk=3)
    x = torch.rand(1, T, 4) - 0.5
    outs = {"x": record(x)}
    with torch.no_grad():
        scores, his, stable = selections(m, x, 3)
        outs.update(index_scores=scores, topk_selected=record(his), stable_selected=record(stable))
        for rule in ("topk", "stable"):
            m.indexer.rule = rule
            outs[rule + "_full"] = record(m(x))
            for c in chunks:
                outs[f"{rule}_cached_{c}"] = record(decode_chunks(m, x, c))
    return {"outputs": outs}


def case_decode(seed, B, T, d_in, d_out, num_heads, index_n_heads, index_head_dim, topk, chunk):
    torch.manual_seed(seed)
    m = MultiHeadAttentionWithDSA(d_in, d_out, 0.0, num_heads, qkv_bias=True, index_n_heads=index_n_heads,
                                  index_head_dim=index_head_dim, topk=topk)
    m.indexer.rule = "stable"
    x = torch.rand(B, T, d_in)
    with torch.no_grad():
        full = m(x)
        cached = decode_chunks(m, x, chunk)
        _, his, stable = selections(m, x, topk)
    return {"outputs": {"x": record(x), "full": record(full), "cached": record(cached),
                        "cache_k": record(m.cache_k.transpose(1, 2)),
                        "index_keys": record(m.indexer.W_k_index(m.cache_x)),
                        "topk_selected": record(his), "stable_selected": record(stable)}}


def case_train(seed, B, T, d_in, d_out, p, num_heads):
    torch.manual_seed(seed)
    m = MultiHeadAttentionWithDSA(d_in, d_out, p, num_heads, index_n_heads=2, index_head_dim=4, topk=3)
    m.indexer.rule = "stable"
    x = torch.rand(B, T, d_in)
    with torch.no_grad():
        return {"outputs": {"x": record(x), "context_vec": record(m(x))}}


CASES = [
    ("dsa_book_s123",
     "torch.manual_seed(123); dsa = MultiHeadAttentionWithDSA(3, 4, 0.0, 2, index_n_heads=2, "
     "index_head_dim=4, topk=2); dsa(batch); dsa.indexer's scores on batch with the causal mask",
     case_book, {"topk": 2}),
    ("dsa_book_topk6_s123", "the same with topk=6 (every key of the causal mask)", case_book, {"topk": 6}),
    ("dsa_ties_s31",
     "torch.manual_seed(31); dsa = MultiHeadAttentionWithDSA(4, 8, 0.0, 2, index_n_heads=2, "
     "index_head_dim=4, topk=3); x = torch.rand(1, 24, 4) - 0.5; with his topk and with the "
     "stable rule: dsa(x), and x fed in chunks of 1 and 5 with use_cache=True",
     case_ties, dict(seed=31, T=24, chunks=(1, 5))),
    ("dsa_decode_s7",
     "torch.manual_seed(7); dsa = MultiHeadAttentionWithDSA(8, 16, 0.0, 4, qkv_bias=True, "
     "index_n_heads=4, index_head_dim=8, topk=5) with the stable rule; x = torch.rand(2, 20, 8); "
     "dsa(x); then x fed in chunks of 3 with use_cache=True",
     case_decode, dict(seed=7, B=2, T=20, d_in=8, d_out=16, num_heads=4, index_n_heads=4,
                       index_head_dim=8, topk=5, chunk=3)),
    ("dsa_train_s5",
     "torch.manual_seed(5); dsa = MultiHeadAttentionWithDSA(4, 8, 0.3, 4, index_n_heads=2, "
     "index_head_dim=4, topk=3) with the stable rule; x = torch.rand(2, 7, 4); dsa(x)  # training mode",
     case_train, dict(seed=5, B=2, T=7, d_in=4, d_out=8, p=0.3, num_heads=4)),
]


# The cells of chapter 17's printed blocks, run as written against his module.
CELLS = [
    setup_cell("from gpt_with_kv_dsa import MultiHeadAttentionWithDSA"),
    "torch.manual_seed(123)\n"
    "dsa = MultiHeadAttentionWithDSA(d_in=3, d_out=4, dropout=0.0, num_heads=2, index_n_heads=2, "
    "index_head_dim=4, topk=2)\n"
    "print(dsa)",
    "context_vecs = dsa(batch)\nprint(context_vecs)",
    "index_scores = dsa.indexer.scores(batch, batch)\nprint(index_scores[0])",
    "torch.manual_seed(123)\n"
    "dense = MultiHeadAttentionWithDSA(d_in=3, d_out=4, dropout=0.0, num_heads=2, index_n_heads=2, "
    "index_head_dim=4, topk=6)\n"
    "print(dense(batch))",
]


def export(path, header, cells):
    """The cells run and written as a text export (oracle_common.export_cells), importing the
    module as `gpt_with_kv_dsa`."""
    export_cells(path, header, cells, {"gpt_with_kv_dsa": {"MultiHeadAttentionWithDSA": MultiHeadAttentionWithDSA}})


def main():
    args = arguments(__doc__, "dsa.json", sources=True)
    torch.set_num_threads(1)
    listed = [{"name": name, "python": python, **fn(**kw)} for name, python, fn, kw in CASES]
    doc = provenance(SCRIPT,
        modules_from=UPSTREAM,
        format="Each case: `python` is the code that produced it. `outputs` maps a name to "
                  "{shape, values (float32 as exact decimal doubles, or int64, row-major), repr "
                  "(print(tensor)) for at most 100 elements}. `repr` is print(module); "
                  "`draws_after_init` counts 32-bit draws of the construction. `index_scores` are "
                  "the indexer's scores of the full sequence without "
                  "the causal mask (`repr_masked`: their print with it, -inf above the diagonal); "
                  "`topk_selected` / `stable_selected` the positions each query keeps "
                  "under his topk and under the stable rule, sorted ascending.",
        cases=listed)
    write_json(args.out, doc)
    os.makedirs(args.sources, exist_ok=True)
    export(os.path.join(args.sources, "oracle_17_sparse_attention.txt"),
           f"Text export of an oracle run of {UPSTREAM} (Apache License 2.0, (c) Sebastian Raschka and "
           f"the contributor): MultiHeadAttentionWithDSA, executed by {SCRIPT} with Debian's "
           f"{doc['debian_package']} (torch {doc['torch_version']}) on the reference BLAS, {doc['date']}: "
           "code cells and their printed outputs, in order.", CELLS)
    print(f"wrote {args.out}: {len(listed)} cases; and {args.sources}/oracle_17_sparse_attention.txt")


if __name__ == "__main__":
    sys.exit(main())
