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

Raschka's code is copied below from rasbt/LLMs-from-scratch (Apache License 2.0):
- `MultiHeadLatentAttention`: ch04/05_mla/gpt_with_kv_mla.py at commit
  28c65cdfbc3338e2e040016eea4b7fdf556e4d57 (April 2026); `calc_kv_bytes_total`,
  `calc_mla_bytes_total`, `convert_bytes` and the printing of `main` from
  ch04/05_mla/memory_estimator_mla.py at the same commit;
- `MultiHeadAttentionWithKVSharing`: ch04/10_kv-sharing/gpt_with_kv_sharing.py at commit
  df1fcf8ee4bc5dced6527c31d80f5bb11a7f11ff (the class is the same at 32dc9717); the estimator
  ch04/10_kv-sharing/memory_estimator_kv_sharing.py at commit
  f2ef54a2c686474ca374f0da6a2b13acfd6364d3.
Edits: the modules need none for torch 1.13 (register_buffer(..., persistent=False), torch.inf,
masked_fill_ and arange(dtype=torch.long) all exist there); only `device=` arguments are dropped
(CPU only). The estimators' `main()` take `argv` (parse_args(argv)) so that a cell can run them
with his README's arguments, and the KV-sharing estimator computes its four totals in a loop;
what they print is unchanged (the script checks it against his READMEs' printed blocks).
"""

import argparse
import json
import math
import os
import sys
import types

import torch
import torch.nn as nn
from oracle_common import draws_since, export_cells, provenance

SCRIPT = "tools/oracle/mla_sharing.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLA_COMMIT = "28c65cdfbc3338e2e040016eea4b7fdf556e4d57"
SHARING_COMMIT = "df1fcf8ee4bc5dced6527c31d80f5bb11a7f11ff"
SHARING_ESTIMATOR_COMMIT = "f2ef54a2c686474ca374f0da6a2b13acfd6364d3"


# ----------------------------------------------------------------- ch04/05_mla
class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, latent_dim=None):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.latent_dim = latent_dim if latent_dim is not None else max(16, d_out // 8)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_DKV = nn.Linear(d_in, self.latent_dim, bias=qkv_bias)
        self.W_UK = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)
        self.W_UV = nn.Linear(self.latent_dim, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("cache_c_kv", None, persistent=False)
        self.ptr_current_pos = 0

    def reset_cache(self):
        self.cache_c_kv = None
        self.ptr_current_pos = 0

    @staticmethod
    def _reshape_to_heads(x, num_heads, head_dim):
        bsz, num_tokens, _ = x.shape
        return x.view(bsz, num_tokens, num_heads, head_dim).transpose(1, 2).contiguous()

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        num_heads = self.num_heads
        head_dim = self.head_dim
        queries_all = self.W_query(x)
        latent_new = self.W_DKV(x)
        if use_cache:
            if self.cache_c_kv is None:
                latent_total = latent_new
            else:
                latent_total = torch.cat([self.cache_c_kv, latent_new], dim=1)
            self.cache_c_kv = latent_total
        else:
            latent_total = latent_new
        keys_all = self.W_UK(latent_total)
        values_all = self.W_UV(latent_total)
        queries = self._reshape_to_heads(queries_all, num_heads, head_dim)
        keys = self._reshape_to_heads(keys_all, num_heads, head_dim)
        values = self._reshape_to_heads(values_all, num_heads, head_dim)
        attn_scores = torch.matmul(queries, keys.transpose(-2, -1))
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        if use_cache:
            q_positions = torch.arange(self.ptr_current_pos, self.ptr_current_pos + num_tokens_Q,
                                       dtype=torch.long)
            self.ptr_current_pos += num_tokens_Q
        else:
            q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
            self.ptr_current_pos = 0
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def convert_bytes(n):
    gb = n / (1000 ** 3)
    return f"{gb:,.2f} GB"


def calc_kv_bytes_total(batch, context_length, emb_dim, n_heads, n_kv_heads, n_layers, bytes_per_elem):
    head_dim = math.ceil(emb_dim / n_heads)
    per_layer = batch * context_length * head_dim * n_kv_heads * 2 * bytes_per_elem
    return per_layer * n_layers


def calc_mla_bytes_total(batch, context_length, n_layers, latent_dim, bytes_per_elem):
    return batch * context_length * n_layers * latent_dim * bytes_per_elem


def mla_estimator_main(argv=None):
    p = argparse.ArgumentParser(description="Estimate KV-cache memory for MHA vs GQA vs MLA")
    p.add_argument("--context_length", default=1024, type=int)
    p.add_argument("--emb_dim", required=True, type=int)
    p.add_argument("--n_heads", required=True, type=int)
    p.add_argument("--n_layers", required=True, type=int)
    p.add_argument("--n_kv_groups", required=True, type=int)
    p.add_argument("--latent_dim", required=True, type=int)
    p.add_argument("--batch_size", default=1, type=int)
    p.add_argument("--dtype", choices=DTYPE_BYTES.keys(), default="fp16")
    args = p.parse_args(argv)
    cfg = {"context_length": args.context_length, "emb_dim": args.emb_dim, "n_heads": args.n_heads,
           "n_layers": args.n_layers, "n_kv_groups": args.n_kv_groups, "latent_dim": args.latent_dim}
    if cfg["n_heads"] % cfg["n_kv_groups"] != 0:
        raise ValueError("n_kv_groups must divide n_heads exactly.")
    bytes_per_elem = DTYPE_BYTES[args.dtype]
    head_dim = math.ceil(cfg["emb_dim"] / cfg["n_heads"])
    n_kv_heads_mha = cfg["n_heads"]
    n_kv_heads_gqa = cfg["n_heads"] // cfg["n_kv_groups"]
    total_mha = calc_kv_bytes_total(args.batch_size, cfg["context_length"], cfg["emb_dim"], cfg["n_heads"],
                                    n_kv_heads_mha, cfg["n_layers"], bytes_per_elem)
    total_gqa = calc_kv_bytes_total(args.batch_size, cfg["context_length"], cfg["emb_dim"], cfg["n_heads"],
                                    n_kv_heads_gqa, cfg["n_layers"], bytes_per_elem)
    total_mla = calc_mla_bytes_total(args.batch_size, cfg["context_length"], cfg["n_layers"],
                                     cfg["latent_dim"], bytes_per_elem)
    ratio = total_mha / total_gqa if total_gqa != 0 else float("inf")
    savings = 1 - (total_gqa / total_mha) if total_mha != 0 else 0.0
    ratio_mha_mla = total_mha / total_mla if total_mla != 0 else float("inf")
    savings_mla = 1 - (total_mla / total_mha) if total_mha != 0 else 0.0
    print("==== Config ====")
    for k, v in cfg.items():
        print(f"{k:17}: {v}")
    print(f"batch_size       : {args.batch_size}")
    print(f"dtype            : {args.dtype} ({bytes_per_elem} Bytes/elem)")
    print(f"head_dim         : {head_dim}")
    print(f"GQA n_kv_heads   : {n_kv_heads_gqa}")
    print()
    print("==== KV-cache totals across all layers ====")
    print(f"MHA total KV cache  : {convert_bytes(total_mha)}")
    print(f"GQA total KV cache  : {convert_bytes(total_gqa)}")
    print(f"MLA total KV cache  : {convert_bytes(total_mla)}")
    print(f"Ratio (MHA / GQA)   : {ratio:,.2f}x")
    print(f"Savings (GQA vs MHA): {savings*100:,.2f}%")
    print(f"Ratio (MHA / MLA)   : {ratio_mha_mla:,.2f}x")
    print(f"Savings (MLA vs MHA): {savings_mla*100:,.2f}%")


# ----------------------------------------------------------------- ch04/10_kv-sharing
class MultiHeadAttentionWithKVSharing(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False, shared_kv=None):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        if shared_kv is None:
            keys_new = self.W_key(x)
            values_new = self.W_value(x)
            keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
            values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
            if use_cache:
                if self.cache_k is None:
                    self.cache_k, self.cache_v = keys_new, values_new
                else:
                    self.cache_k = torch.cat([self.cache_k, keys_new], dim=1)
                    self.cache_v = torch.cat([self.cache_v, values_new], dim=1)
                keys, values = self.cache_k, self.cache_v
            else:
                keys, values = keys_new, values_new
                if self.cache_k is not None or self.cache_v is not None:
                    self.reset_cache()
            new_shared_kv = (keys, values)
        else:
            keys, values = shared_kv
            new_shared_kv = None
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        if use_cache:
            q_positions = torch.arange(self.ptr_current_pos, self.ptr_current_pos + num_tokens_Q,
                                       dtype=torch.long)
            self.ptr_current_pos += num_tokens_Q
        else:
            q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
            self.ptr_current_pos = 0
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec, new_shared_kv

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.ptr_current_pos = 0


def sharing_estimator_main(argv=None):
    p = argparse.ArgumentParser(description="Estimate KV-cache memory for MHA, GQA, and cross-layer KV sharing")
    p.add_argument("--context_length", default=1024, type=int)
    p.add_argument("--emb_dim", required=True, type=int)
    p.add_argument("--n_heads", required=True, type=int)
    p.add_argument("--n_layers", required=True, type=int)
    p.add_argument("--n_kv_groups", required=True, type=int)
    p.add_argument("--n_kv_producing_layers", required=True, type=int)
    p.add_argument("--batch_size", default=1, type=int)
    p.add_argument("--dtype", choices=DTYPE_BYTES.keys(), default="fp16")
    args = p.parse_args(argv)
    cfg = {"context_length": args.context_length, "emb_dim": args.emb_dim, "n_heads": args.n_heads,
           "n_layers": args.n_layers, "n_kv_groups": args.n_kv_groups,
           "n_kv_producing_layers": args.n_kv_producing_layers}
    if cfg["n_heads"] % cfg["n_kv_groups"] != 0:
        raise ValueError("n_kv_groups must divide n_heads exactly.")
    if not 1 <= cfg["n_kv_producing_layers"] <= cfg["n_layers"]:
        raise ValueError("n_kv_producing_layers must be between 1 and n_layers.")
    bytes_per_elem = DTYPE_BYTES[args.dtype]
    head_dim = math.ceil(cfg["emb_dim"] / cfg["n_heads"])
    n_kv_heads_mha = cfg["n_heads"]
    n_kv_heads_gqa = cfg["n_heads"] // cfg["n_kv_groups"]
    total = {}
    for name, heads, layers in [("mha", n_kv_heads_mha, cfg["n_layers"]), ("gqa", n_kv_heads_gqa, cfg["n_layers"]),
                                ("mha_sharing", n_kv_heads_mha, cfg["n_kv_producing_layers"]),
                                ("gqa_sharing", n_kv_heads_gqa, cfg["n_kv_producing_layers"])]:
        total[name] = calc_kv_bytes_total(args.batch_size, cfg["context_length"], cfg["emb_dim"], cfg["n_heads"],
                                          heads, layers, bytes_per_elem)
    print("==== Config ====")
    for k, v in cfg.items():
        print(f"{k:23}: {v}")
    print(f"batch_size             : {args.batch_size}")
    print(f"dtype                  : {args.dtype} ({bytes_per_elem} Bytes/elem)")
    print(f"head_dim               : {head_dim}")
    print(f"GQA n_kv_heads         : {n_kv_heads_gqa}")
    print()
    print("==== KV-cache totals across all layers ====")
    print(f"MHA total KV cache        : {convert_bytes(total['mha'])}")
    print(f"GQA total KV cache        : {convert_bytes(total['gqa'])}")
    print(f"MHA + KV sharing          : {convert_bytes(total['mha_sharing'])}")
    print(f"GQA + KV sharing          : {convert_bytes(total['gqa_sharing'])}")
    print(f"Ratio (MHA / GQA+sharing) : {total['mha'] / total['gqa_sharing']:,.2f}x")
    print(f"Savings vs MHA            : {(1 - total['gqa_sharing'] / total['mha']) * 100:,.2f}%")


# ----------------------------------------------------------------- the cases
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
    mla.reset_cache()
    cached = torch.cat([mla(x[:, i:i + chunk], use_cache=True) for i in range(0, T, chunk)], dim=1)
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
SETUP = """import torch
from gpt_with_kv_mla import MultiHeadLatentAttention
inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
batch = torch.stack((inputs, inputs))"""

MLA_CELLS = [
    SETUP,
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
    SETUP.replace("from gpt_with_kv_mla import MultiHeadLatentAttention",
                  "from gpt_with_kv_sharing import MultiHeadAttentionWithKVSharing"),
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


def install_modules():
    """Raschka's files as importable modules, so that the cells run as written."""
    for name, attrs in [("gpt_with_kv_mla", {"MultiHeadLatentAttention": MultiHeadLatentAttention}),
                        ("gpt_with_kv_sharing", {"MultiHeadAttentionWithKVSharing": MultiHeadAttentionWithKVSharing}),
                        ("memory_estimator_mla", {"main": mla_estimator_main}),
                        ("memory_estimator_kv_sharing", {"main": sharing_estimator_main})]:
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module


def export(path, header, cells):
    """The cells run and written as a text export (oracle_common.export_cells): what each printed."""
    return export_cells(path, header, cells)[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "mla_sharing.json"))
    ap.add_argument("--sources", default=os.path.join(ROOT, "data", "sources", "oracle"))
    args = ap.parse_args()
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
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    install_modules()
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
