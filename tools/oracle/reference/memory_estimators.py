"""Raschka's KV-cache memory estimators (chapters 15 and 16), as functions a cell can call:
- `calc_kv_bytes_total`, `calc_mla_bytes_total`, `convert_bytes` and the printing of `main`
  (here `mla_estimator_main`) from rasbt/LLMs-from-scratch ch04/05_mla/memory_estimator_mla.py
  at commit 28c65cdfbc3338e2e040016eea4b7fdf556e4d57;
- `main` of ch04/10_kv-sharing/memory_estimator_kv_sharing.py at commit
  f2ef54a2c686474ca374f0da6a2b13acfd6364d3 (here `sharing_estimator_main`).
Edits: each `main` takes `argv` (parse_args(argv)) so that a cell can run it with his README's
arguments, and the KV-sharing estimator computes its four totals in a loop; what they print is
unchanged (tools/oracle/mla_sharing.py checks it against his READMEs' printed blocks).
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import argparse
import math


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
