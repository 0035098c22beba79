#!/usr/bin/python3
"""Records PyTorch's outputs for multi-head latent attention and cross-layer KV sharing
(chapters 15 and 16), and the printed runs the chapters compare with as their book.

Run with Debian's interpreter (python3-torch 1.13.1) on Debian's reference BLAS, as gqa_swa.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/mla_sharing.py

It writes
- data/oracle/mla_sharing.json: every case's outputs (float32 values as exact decimal doubles,
  print(tensor) for small ones), module reprs, cache contents and the 32-bit draws each
  construction consumed; tests/test_mla_sharing.cpp reads only this;
- data/sources/oracle/oracle_15_latent_attention.txt and oracle_16_kv_sharing.txt: text exports
  of the cells the chapters reprint (`In [n]:`, the code as executed, what it printed), which
  tools/extract_book.py turns into book entries like the notebooks'.

Raschka's code (rasbt/LLMs-from-scratch, Apache License 2.0) is in tools/oracle/reference/,
which names the commits and the edits:
- `MultiHeadLatentAttention` (reference/mla.py): ch04/05_mla/gpt_with_kv_mla.py at commit
  28c65cdfbc3338e2e040016eea4b7fdf556e4d57;
- `MultiHeadAttentionWithKVSharing` (reference/kv_sharing.py):
  ch04/10_kv-sharing/gpt_with_kv_sharing.py at commit df1fcf8ee4bc5dced6527c31d80f5bb11a7f11ff;
- the two memory estimators (reference/memory_estimators.py): ch04/05_mla/memory_estimator_mla.py
  at 28c65cdf and ch04/10_kv-sharing/memory_estimator_kv_sharing.py at commit
  f2ef54a2c686474ca374f0da6a2b13acfd6364d3, their `main()` taking `argv`; what they print is
  checked here against his READMEs' printed blocks.
The input is the book's (tools/oracle/book_inputs.py).
"""

import os
import sys

import torch
from book_inputs import BATCH, setup_cell
from oracle_common import (arguments, decode_chunks, draws_since, export_cells, provenance, record,
                           write_json)
from reference import (MultiHeadAttentionWithKVSharing, MultiHeadLatentAttention, mla_estimator_main,
                       sharing_estimator_main)

SCRIPT = "tools/oracle/mla_sharing.py"
MLA_COMMIT = "28c65cdfbc3338e2e040016eea4b7fdf556e4d57"
SHARING_COMMIT = "df1fcf8ee4bc5dced6527c31d80f5bb11a7f11ff"
SHARING_ESTIMATOR_COMMIT = "f2ef54a2c686474ca374f0da6a2b13acfd6364d3"


def sharing_layers(layers, n_producing, x, use_cache):
    """His GPTModel.forward's loop over the attention layers alone (no norms, feed-forward or
    shortcuts): producers pass their keys and values on, consumers take the latest."""
    shared_kv = None
    for i, layer in enumerate(layers):
        if i < n_producing:
            x, shared_kv = layer(x, use_cache=use_cache, shared_kv=None)
        else:
            x, _ = layer(x, use_cache=use_cache, shared_kv=shared_kv)
    return x


def case_mla_book(latent_dim):
    torch.manual_seed(123)
    mla = MultiHeadLatentAttention(d_in=3, d_out=4, dropout=0.0, num_heads=2, latent_dim=latent_dim)
    draws = draws_since(123, torch.get_rng_state())
    out = mla(BATCH)
    mla(BATCH, use_cache=True)
    return {"repr": repr(mla), "draws_after_init": draws, "latent_dim": mla.latent_dim,
            "outputs": {"context_vecs": record(out), "cache_c_kv": record(mla.cache_c_kv)}}


def case_mla_decode(seed, B, T, d_in, d_out, num_heads, latent_dim, chunk):
    torch.manual_seed(seed)
    mla = MultiHeadLatentAttention(d_in, d_out, 0.0, num_heads, qkv_bias=True, latent_dim=latent_dim)
    x = torch.rand(B, T, d_in)
    full = mla(x)
    cached = decode_chunks(mla, x, chunk)
    return {"outputs": {"x": record(x), "full": record(full), "cached": record(cached),
                        "cache_c_kv": record(mla.cache_c_kv)}}


def case_mla_train(seed, B, T, d_in, d_out, p, num_heads, latent_dim):
    torch.manual_seed(seed)
    mla = MultiHeadLatentAttention(d_in, d_out, p, num_heads, qkv_bias=True, latent_dim=latent_dim)
    x = torch.rand(B, T, d_in)
    return {"outputs": {"x": record(x), "context_vec": record(mla(x))}}


def case_sharing_book():
    torch.manual_seed(123)
    producer = MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2)
    consumer = MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2)
    draws = draws_since(123, torch.get_rng_state())
    out_p, shared_kv = producer(BATCH)
    out_c, none = consumer(BATCH, shared_kv=shared_kv)
    assert none is None
    return {"repr": repr(consumer), "draws_after_init": draws,
            "outputs": {"producer": record(out_p), "consumer": record(out_c),
                        # his [b, T, H, hd] as the book's cache layout [b, H, T, hd]
                        "shared_keys": record(shared_kv[0].transpose(1, 2)),
                        "shared_values": record(shared_kv[1].transpose(1, 2))}}


def case_sharing_decode(seed, B, T, d, num_heads, n_layers, n_producing, chunk):
    torch.manual_seed(seed)
    layers = [MultiHeadAttentionWithKVSharing(d, d, 0.0, num_heads, qkv_bias=True) for _ in range(n_layers)]
    x = torch.rand(B, T, d)
    full = sharing_layers(layers, n_producing, x, use_cache=False)
    for layer in layers:
        layer.reset_cache()
    cached = torch.cat([sharing_layers(layers, n_producing, x[:, i:i + chunk], use_cache=True)
                        for i in range(0, T, chunk)], dim=1)
    assert all(layer.cache_k is None for layer in layers[n_producing:])
    return {"outputs": {"x": record(x), "full": record(full), "cached": record(cached),
                        "last_producer_cache_k": record(layers[n_producing - 1].cache_k.transpose(1, 2))}}


def case_sharing_train(seed, B, T, d_in, d_out, p, num_heads):
    torch.manual_seed(seed)
    producer = MultiHeadAttentionWithKVSharing(d_in, d_out, p, num_heads, qkv_bias=True)
    consumer = MultiHeadAttentionWithKVSharing(d_in, d_out, p, num_heads, qkv_bias=True)
    x = torch.rand(B, T, d_in)
    out_p, shared_kv = producer(x)
    out_c, _ = consumer(x, shared_kv=shared_kv)
    return {"outputs": {"x": record(x), "producer": record(out_p), "consumer": record(out_c)}}


CASES = [
    ("mla_book_s123", "torch.manual_seed(123); mla = MultiHeadLatentAttention(d_in=3, d_out=4, dropout=0.0, "
     "num_heads=2, latent_dim=2); mla(batch); mla(batch, use_cache=True); mla.cache_c_kv",
     case_mla_book, {"latent_dim": 2}),
    ("mla_default_s123", "the same with latent_dim=None (max(16, d_out // 8) = 16)", case_mla_book,
     {"latent_dim": None}),
    ("mla_decode_s7", "torch.manual_seed(7); mla = MultiHeadLatentAttention(4, 12, 0.0, 3, qkv_bias=True, "
     "latent_dim=5); x = torch.rand(2, 10, 4); mla(x); then x fed in chunks of 3 with use_cache=True",
     case_mla_decode, dict(seed=7, B=2, T=10, d_in=4, d_out=12, num_heads=3, latent_dim=5, chunk=3)),
    ("mla_train_s5", "torch.manual_seed(5); mla = MultiHeadLatentAttention(4, 8, 0.3, 4, qkv_bias=True, "
     "latent_dim=3); x = torch.rand(2, 5, 4); mla(x)  # training mode",
     case_mla_train, dict(seed=5, B=2, T=5, d_in=4, d_out=8, p=0.3, num_heads=4, latent_dim=3)),
    ("sharing_book_s123", "torch.manual_seed(123); producer = MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2); "
     "consumer = MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2); out_p, shared_kv = producer(batch); "
     "out_c, _ = consumer(batch, shared_kv=shared_kv)", case_sharing_book, {}),
    ("sharing_decode_s9", "torch.manual_seed(9); 4 layers MultiHeadAttentionWithKVSharing(6, 6, 0.0, 3, "
     "qkv_bias=True), 2 producing; x = torch.rand(2, 12, 6); his GPTModel's loop over them without and with "
     "the cache (chunks of 5)",
     case_sharing_decode, dict(seed=9, B=2, T=12, d=6, num_heads=3, n_layers=4, n_producing=2, chunk=5)),
    ("sharing_train_s5", "torch.manual_seed(5); producer, consumer = MultiHeadAttentionWithKVSharing(4, 8, 0.3, "
     "4, qkv_bias=True) twice; x = torch.rand(2, 5, 4); producer(x), consumer(x, shared_kv=...)  # training",
     case_sharing_train, dict(seed=5, B=2, T=5, d_in=4, d_out=8, p=0.3, num_heads=4)),
]

# ----------------------------------------------------------------- the printed runs
MLA_CELLS = [
    setup_cell("from gpt_with_kv_mla import MultiHeadLatentAttention"),
    """torch.manual_seed(123)
mla = MultiHeadLatentAttention(d_in=3, d_out=4, dropout=0.0, num_heads=2, latent_dim=2)
print(mla)""",
    """context_vecs = mla(batch)
print(context_vecs)""",
    """_ = mla(batch, use_cache=True)
print(mla.cache_c_kv)""",
    """torch.manual_seed(123)
mla_default = MultiHeadLatentAttention(d_in=3, d_out=4, dropout=0.0, num_heads=2)
print(mla_default)""",
    """print(mla_default(batch))""",
    """import memory_estimator_mla
memory_estimator_mla.main(["--context_length", "8192", "--emb_dim", "2048", "--n_heads", "24", "--n_layers", "48", "--n_kv_groups", "4", "--batch_size", "1", "--dtype", "bf16", "--latent_dim", "1024"])""",
]

SHARING_CELLS = [
    setup_cell("from gpt_with_kv_sharing import MultiHeadAttentionWithKVSharing"),
    """torch.manual_seed(123)
producer = MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2)
consumer = MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2)
print(consumer)""",
    """out_p, shared_kv = producer(batch)
print(out_p)""",
    """print(shared_kv[0].transpose(1, 2))""",
    """out_c, new_shared_kv = consumer(batch, shared_kv=shared_kv)
print(out_c)""",
    """print(new_shared_kv)""",
    """import memory_estimator_kv_sharing
memory_estimator_kv_sharing.main(["--context_length", "131072", "--emb_dim", "2048", "--n_heads", "8", "--n_layers", "35", "--n_kv_groups", "8", "--n_kv_producing_layers", "15", "--batch_size", "1", "--dtype", "bf16"])""",
    """memory_estimator_kv_sharing.main(["--context_length", "131072", "--emb_dim", "2560", "--n_heads", "8", "--n_layers", "42", "--n_kv_groups", "4", "--n_kv_producing_layers", "24", "--batch_size", "1", "--dtype", "bf16"])""",
]


# What his READMEs print for these arguments (ch04/05_mla/README.md at MLA_COMMIT,
# ch04/10_kv-sharing/README.md at SHARING_ESTIMATOR_COMMIT): the runs above must print the same.
README_MLA = """==== Config ====
context_length   : 8192
emb_dim          : 2048
n_heads          : 24
n_layers         : 48
n_kv_groups      : 4
latent_dim       : 1024
batch_size       : 1
dtype            : bf16 (2 Bytes/elem)
head_dim         : 86
GQA n_kv_heads   : 6

==== KV-cache totals across all layers ====
MHA total KV cache  : 3.25 GB
GQA total KV cache  : 0.81 GB
MLA total KV cache  : 0.81 GB
Ratio (MHA / GQA)   : 4.00x
Savings (GQA vs MHA): 75.00%
Ratio (MHA / MLA)   : 4.03x
Savings (MLA vs MHA): 75.19%"""
README_E2B = """==== Config ====
context_length         : 131072
emb_dim                : 2048
n_heads                : 8
n_layers               : 35
n_kv_groups            : 8
n_kv_producing_layers  : 15
batch_size             : 1
dtype                  : bf16 (2 Bytes/elem)
head_dim               : 256
GQA n_kv_heads         : 1

==== KV-cache totals across all layers ====
MHA total KV cache        : 37.58 GB
GQA total KV cache        : 4.70 GB
MHA + KV sharing          : 16.11 GB
GQA + KV sharing          : 2.01 GB
Ratio (MHA / GQA+sharing) : 18.67x
Savings vs MHA            : 94.64%"""


# Raschka's files as the cells import them, so that the cells run as written.
CELL_MODULES = {"gpt_with_kv_mla": {"MultiHeadLatentAttention": MultiHeadLatentAttention},
                "gpt_with_kv_sharing": {"MultiHeadAttentionWithKVSharing": MultiHeadAttentionWithKVSharing},
                "memory_estimator_mla": {"main": mla_estimator_main},
                "memory_estimator_kv_sharing": {"main": sharing_estimator_main}}


def export(path, header, cells):
    """The cells run and written as a text export (oracle_common.export_cells): what each printed."""
    return export_cells(path, header, cells, CELL_MODULES)[1]


def main():
    args = arguments(__doc__, "mla_sharing.json", sources=True)
    torch.set_num_threads(1)
    prov = provenance(SCRIPT)
    listed = [{"name": name, "python": python, **fn(**kw)} for name, python, fn, kw in CASES]
    doc = {**prov,
           "modules_from": f"rasbt/LLMs-from-scratch {MLA_COMMIT}: ch04/05_mla/gpt_with_kv_mla.py, "
                           f"memory_estimator_mla.py; {SHARING_COMMIT}: ch04/10_kv-sharing/gpt_with_kv_sharing.py; "
                           f"{SHARING_ESTIMATOR_COMMIT}: ch04/10_kv-sharing/memory_estimator_kv_sharing.py",
           "format": "Each case: `python` is the code that produced it. `outputs` maps a name to "
                     "{shape, values (float32 as exact decimal doubles, row-major), repr (print(tensor)) "
                     "for at most 100 elements}. `repr` is print(module); `draws_after_init` counts 32-bit "
                     "draws of the construction. Keys and values of his [b, T, H, hd] caches are recorded "
                     "as [b, H, T, hd], the book's cache layout.",
           "cases": listed}
    write_json(args.out, doc)
    os.makedirs(args.sources, exist_ok=True)
    ran = (f"executed by {SCRIPT} with Debian's {prov['debian_package']} (torch {prov['torch_version']}) "
           f"on the reference BLAS, {prov['date']}: code cells and their printed outputs, in order.")
    mla_printed = export(os.path.join(args.sources, "oracle_15_latent_attention.txt"),
           f"Text export of an oracle run of rasbt/LLMs-from-scratch ch04/05_mla (commit {MLA_COMMIT}; "
           f"Apache License 2.0, (c) Sebastian Raschka): MultiHeadLatentAttention and memory_estimator_mla.py, "
           + ran, MLA_CELLS)
    sharing_printed = export(os.path.join(args.sources, "oracle_16_kv_sharing.txt"),
           f"Text export of an oracle run of rasbt/LLMs-from-scratch ch04/10_kv-sharing (commit {SHARING_COMMIT}, "
           f"estimator at {SHARING_ESTIMATOR_COMMIT}; Apache License 2.0, (c) Sebastian Raschka): "
           f"MultiHeadAttentionWithKVSharing and memory_estimator_kv_sharing.py, " + ran, SHARING_CELLS)
    if mla_printed[6] != README_MLA or sharing_printed[6] != README_E2B:
        raise SystemExit("the estimators no longer print what his READMEs print")
    print(f"wrote {args.out}: {len(listed)} cases; and the two exports in {args.sources}")


if __name__ == "__main__":
    sys.exit(main())
