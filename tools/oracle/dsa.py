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
cache of keys, values and raw inputs grown by torch.cat). Edits for torch 1.13: none to the
arithmetic; the type annotations are dropped. One edit of ours, marked: `select` chooses the
top-k. His code calls `index_scores.topk(k)`, whose choice among equal scores (the exact zeros
ReLU makes) is whatever std::nth_element leaves in place, and depends on the row's length, so
his cached decoding can pick other keys than his full forward. The cases run his selection
(`"topk"`) and, where they say so, the rule this library states (`"stable"`:
`torch.sort(scores, descending=True, stable=True)`, equal scores earliest position first), and
record both selections.

Each case seeds the default generator, builds a module and runs it; it records outputs
(float32 values as exact decimal doubles, plus print(tensor) for small ones), module reprs,
index scores and selections, and the 32-bit draws the construction consumed.
`tests/test_dsa.cpp` reads only the JSON this writes.

It also writes data/sources/oracle/oracle_17_sparse_attention.txt: a text export of the cells
chapter 17 reprints (`In [n]:`, the code as executed, what it printed), read by
tools/extract_book.py like the notebooks.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn
from oracle_common import draws_since, export_cells, provenance

SCRIPT = "tools/oracle/dsa.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UPSTREAM = ("rasbt/LLMs-from-scratch pull request #1014 at 51805ca26f8201ccb6f0fef906138be66c86b403 "
            "(merge base 28c65cdfbc3338e2e040016eea4b7fdf556e4d57): ch04/09_dsa/gpt_with_kv_dsa.py")


def select(index_scores, k, rule):
    """The top-k positions of each row: his `topk`, or the stable rule (ours)."""
    if rule == "topk":
        return index_scores.topk(k, dim=-1).indices
    return torch.sort(index_scores, dim=-1, descending=True, stable=True).indices[..., :k]


class LightningIndexer(nn.Module):
    def __init__(self, d_model, index_n_heads, index_head_dim):
        super().__init__()
        self.index_n_heads = index_n_heads
        self.index_head_dim = index_head_dim
        self.W_q_index = nn.Linear(d_model, index_n_heads * index_head_dim, bias=False)
        self.W_k_index = nn.Linear(d_model, index_head_dim, bias=False)
        self.W_weights = nn.Linear(d_model, index_n_heads, bias=False)
        self.scale = index_head_dim ** -0.5
        self.rule = "topk"

    def scores(self, x, x_ctx, causal_mask=None):
        b, T, _ = x.shape
        q = self.W_q_index(x).view(b, T, self.index_n_heads, self.index_head_dim)
        k = self.W_k_index(x_ctx)
        raw = torch.einsum("bthd,bsd->bths", q, k) * self.scale
        raw = torch.relu(raw)
        w = self.W_weights(x)
        w = w.softmax(dim=-1)
        index_scores = torch.einsum("bth,bths->bts", w, raw)
        if causal_mask is not None:
            index_scores = index_scores + causal_mask
        return index_scores

    def forward(self, x, x_ctx, topk, causal_mask=None):
        index_scores = self.scores(x, x_ctx, causal_mask)
        k_val = min(topk, x_ctx.shape[1])
        return select(index_scores, k_val, self.rule)  # ours: his line is .topk(k_val, dim=-1).indices


class MultiHeadAttentionWithDSA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False,
                 index_n_heads=4, index_head_dim=64, topk=64):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.topk = topk
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.indexer = LightningIndexer(d_in, index_n_heads, index_head_dim)
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.register_buffer("cache_x", None, persistent=False)
        self.ptr_current_pos = 0

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.cache_x = None
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys_new = self.W_key(x)
        values_new = self.W_value(x)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
        values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
        if use_cache:
            if self.cache_k is None:
                keys, values, x_ctx = keys_new, values_new, x
            else:
                keys = torch.cat([self.cache_k, keys_new], dim=1)
                values = torch.cat([self.cache_v, values_new], dim=1)
                x_ctx = torch.cat([self.cache_x, x], dim=1)
            self.cache_k, self.cache_v, self.cache_x = keys, values, x_ctx
            q_start = self.ptr_current_pos
            k_start = 0
            self.ptr_current_pos += num_tokens
        else:
            keys, values, x_ctx = keys_new, values_new, x
            q_start = 0
            k_start = 0
        queries_t = queries.transpose(1, 2)
        keys_t = keys.transpose(1, 2)
        values_t = values.transpose(1, 2)
        attn_scores = queries_t @ keys_t.transpose(2, 3)
        num_tokens_Q = queries_t.shape[-2]
        num_tokens_K = keys_t.shape[-2]
        q_positions = torch.arange(q_start, q_start + num_tokens_Q, dtype=torch.long)
        k_positions = torch.arange(k_start, k_start + num_tokens_K, dtype=torch.long)
        causal_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        causal_float = torch.zeros(num_tokens_Q, num_tokens_K, dtype=attn_scores.dtype)
        causal_float.masked_fill_(causal_bool, float("-inf"))
        topk_indices = self.indexer(x, x_ctx, self.topk, causal_mask=causal_float)
        sparse_mask = torch.full((b, num_tokens_Q, num_tokens_K), float("-inf"), dtype=attn_scores.dtype)
        sparse_mask.scatter_(-1, topk_indices, 0.0)
        combined_mask = causal_float.unsqueeze(0) + sparse_mask
        attn_scores = attn_scores + combined_mask.unsqueeze(1)
        attn_weights = torch.softmax(attn_scores / self.head_dim ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values_t
        context_vec = context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


INPUTS = torch.tensor([[0.43, 0.15, 0.89],
                       [0.55, 0.87, 0.66],
                       [0.57, 0.85, 0.64],
                       [0.22, 0.58, 0.33],
                       [0.77, 0.25, 0.10],
                       [0.05, 0.80, 0.55]])
BATCH = torch.stack((INPUTS, INPUTS))


def record(t):
    t = t.detach().contiguous()
    if t.dtype == torch.long:
        return {"shape": list(t.shape), "values": t.reshape(-1).tolist(), "repr": repr(t)}
    out = {"shape": list(t.shape), "values": [float(v) for v in t.reshape(-1).tolist()]}
    if t.numel() <= 100:
        out["repr"] = repr(t)
    return out


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


def decode_chunks(module, x, chunk):
    module.reset_cache()
    return torch.cat([module(x[:, i:i + chunk], use_cache=True) for i in range(0, x.shape[1], chunk)], dim=1)


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
    "import torch\n"
    "from gpt_with_kv_dsa import MultiHeadAttentionWithDSA\n"
    "inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], "
    "[0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])\n"
    "batch = torch.stack((inputs, inputs))",
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "dsa.json"))
    ap.add_argument("--sources", default=os.path.join(ROOT, "data", "sources", "oracle"))
    args = ap.parse_args()
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
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.makedirs(args.sources, exist_ok=True)
    export(os.path.join(args.sources, "oracle_17_sparse_attention.txt"),
           f"Text export of an oracle run of {UPSTREAM} (Apache License 2.0, (c) Sebastian Raschka and "
           f"the contributor): MultiHeadAttentionWithDSA, executed by {SCRIPT} with Debian's "
           f"{doc['debian_package']} (torch {doc['torch_version']}) on the reference BLAS, {doc['date']}: "
           "code cells and their printed outputs, in order.", CELLS)
    print(f"wrote {args.out}: {len(listed)} cases; and {args.sources}/oracle_17_sparse_attention.txt")


if __name__ == "__main__":
    sys.exit(main())
