#!/usr/bin/python3
"""Records chapter 24 in PyTorch: where position comes from (permutation, learned and sinusoidal
positions, RoPE, RoPE in grouped-query attention, ALiBi).

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/positions.py

It writes
- data/sources/oracle/oracle_24_positions.txt: the run as a notebook's text export (`In [n]:`
  cells, the code as executed, what it printed), which tools/extract_book.py reads like the
  notebooks, so that the chapter's printed blocks are compared with it;
- data/oracle/positions.json: float32 bits of the same functions and modules on more inputs
  (larger RoPE tables, Llama 3.x frequencies, ALiBi slopes, the modules' outputs and gradients),
  with provenance, for tests/test_positions.cpp.

The code run is Raschka's (rasbt/LLMs-from-scratch ch05/07_gpt_to_llama, commit
28c65cdfbc3338e2e040016eea4b7fdf556e4d57, Apache License 2.0: `precompute_rope_params`,
`compute_rope`, the Llama 2 `MultiHeadAttention`, the Llama 3 `GroupedQueryAttention`, and his
seeded demo of cell 9 verbatim), the Annotated Transformer's `PositionalEncoding` (MIT) and
Press et al.'s `get_slopes` (MIT), from tools/oracle/reference/. His notebooks ran torch 2.6;
this is Debian's 1.13.1: the functions he calls (arange, pow, cos, sin, cat, where, matmul,
softmax) compute the same in both, and his cell 9 prints nothing, so the values here are the
first printed.
"""

import os
import sys

import numpy as np
import torch
from book_inputs import setup_cell
from oracle_common import arguments, export_cells, provenance, write_json
from reference import (MultiHeadAttentionALiBi, PositionalEncoding, alibi_bias, compute_rope, get_slopes, llama,
                       precompute_rope_params, rope_inv_freq)

SCRIPT = "tools/oracle/positions.py"
RASCHKA_COMMIT = "28c65cdfbc3338e2e040016eea4b7fdf556e4d57"
LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_context_length": 8192}
LLAMA32 = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_context_length": 8192}

CELLS = [
    setup_cell("from previous_chapters import precompute_rope_params, compute_rope, rope_inv_freq, "
               "GroupedQueryAttention, PositionalEncoding, get_slopes, alibi_bias, MultiHeadAttentionALiBi"),
    # (a) chapter 1's attention is permutation-equivariant
    """def attention(x):  # chapter 1: scores x @ x.T, softmax, weighted sum
    attn_weights = torch.softmax(x @ x.T, dim=-1)
    return attn_weights @ x
context_vecs = attention(inputs)
print(context_vecs)""",
    """perm = torch.tensor([5, 0, 3, 1, 4, 2])  # "step Your with journey one starts"
print(attention(inputs[perm]))""",
    """print((attention(inputs[perm]) - context_vecs[perm]).abs().max())""",
    # (b) learned absolute positions (GPT-2's pos_emb) and the sinusoidal table
    """torch.manual_seed(123)
pos_emb = torch.nn.Embedding(6, 3)  # GPT-2's pos_emb: one learned vector per position
print(pos_emb.weight)""",
    """x = inputs + pos_emb(torch.arange(6))
x_perm = inputs[perm] + pos_emb(torch.arange(6))  # the tokens move, the positions stay
print(attention(x)[perm])""",
    """print(attention(x_perm))""",
    """pe = PositionalEncoding(d_model=8, dropout=0.0, max_len=6)
print(pe.pe[0])""",
    """print(pe.pe[0] @ pe.pe[0].T)""",
    # (c) RoPE: his cell 9, verbatim
    """# Settings
batch_size = 2
context_len = 5
num_heads = 4
head_dim = 16
# Instantiate RoPE parameters
cos, sin = precompute_rope_params(head_dim=head_dim, context_length=context_len)
# Dummy query and key tensors
torch.manual_seed(123)
queries = torch.randn(batch_size, num_heads, context_len, head_dim)
keys = torch.randn(batch_size, num_heads, context_len, head_dim)
# Apply rotary position embeddings
queries_rot = compute_rope(queries, cos, sin)
keys_rot = compute_rope(keys, cos, sin)""",
    """print(cos)""",
    """print(sin)""",
    """print(queries_rot[0, 0])""",
    """print(keys_rot[1, 3])""",
    """q = queries[0, 0, 0].expand(1, 1, context_len, head_dim)  # one query at positions 0..4
k = keys[0, 0, 0].expand(1, 1, context_len, head_dim)     # one key at positions 0..4
print((compute_rope(q, cos, sin) @ compute_rope(k, cos, sin).transpose(2, 3))[0, 0])""",
    """print(rope_inv_freq(64, theta_base=10_000))  # Llama 2""",
    """print(rope_inv_freq(64, theta_base=500_000))  # Llama 3""",
    """LLAMA31_FREQ = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_context_length": 8192}
print(rope_inv_freq(64, theta_base=500_000, freq_config=LLAMA31_FREQ))  # Llama 3.1""",
    """LLAMA32_FREQ = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_context_length": 8192}
print(rope_inv_freq(64, theta_base=500_000, freq_config=LLAMA32_FREQ))  # Llama 3.2""",
    # (d) RoPE inside his Llama 3.2 grouped-query attention
    """torch.manual_seed(123)
gqa = GroupedQueryAttention(d_in=3, d_out=16, num_heads=4, num_kv_groups=2)
gqa_cos, gqa_sin = precompute_rope_params(head_dim=4, theta_base=500_000, context_length=6, freq_config=LLAMA32_FREQ)
print(gqa(batch, None, gqa_cos, gqa_sin))""",
    # (e) ALiBi
    """print(torch.Tensor(get_slopes(8)))""",
    """print(torch.Tensor(get_slopes(12)))""",
    """print(alibi_bias(torch.Tensor(get_slopes(4)), 6, 6)[0])  # head 0: slope 1/4""",
    """torch.manual_seed(123)
mha = MultiHeadAttentionALiBi(d_in=3, d_out=8, context_length=6, dropout=0.0, num_heads=4)
print(mha(batch))""",
]


def bits(t):
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def tensor_record(t):
    return {"shape": list(t.shape), "bits": bits(t)}


ROWS = [0, 1, 2, 3, 124, 125, 126, 127, 128, 129, 1000, 4095]


def rope_tables():
    """Rows of larger tables: positions past 124 are where PyTorch's 8-lane cos/sin change
    their argument reduction."""
    out = []
    for head_dim, base, context, name, freq in ((16, 10_000, 4096, None, None), (64, 500_000, 8192, "llama3.2", LLAMA32),
                                                 (128, 500_000, 8192, "llama3.1", LLAMA31), (6, 10_000, 4096, None, None)):
        cos, sin = precompute_rope_params(head_dim, base, context, freq)
        rows = [r for r in ROWS if r < context] + [context - 1]
        out.append({"head_dim": head_dim, "theta_base": base, "context_length": context, "freq_config": name,
                    "rows": rows, "cos": tensor_record(cos[rows]), "sin": tensor_record(sin[rows])})
    return out


def sinusoidal():
    out = []
    for d_model, max_len in ((8, 6), (20, 5000), (512, 300)):
        pe = PositionalEncoding(d_model, 0.0, max_len).pe[0]
        rows = [r for r in ROWS if r < max_len] + [max_len - 1]
        out.append({"d_model": d_model, "max_len": max_len, "rows": rows, "pe": tensor_record(pe[rows])})
    return out


def rope_backward():
    torch.manual_seed(7)
    x = torch.randn(2, 3, 9, 8, requires_grad=True)
    g = torch.randn(2, 3, 9, 8)
    cos, sin = precompute_rope_params(8, 10_000, 12)
    y = compute_rope(x, cos, sin)
    y.backward(g)
    return {"x": tensor_record(x), "grad_output": tensor_record(g), "context_length": 12,
            "y": tensor_record(y), "grad_x": tensor_record(x.grad)}


def module_backward(make, d_in, T, seed):
    """A module's output on rand(2, T, d_in) and, for the loss sum(out * w), every parameter's
    .grad (named_parameters() order) and x.grad."""
    torch.manual_seed(seed)
    module = make()
    x = torch.rand(2, T, d_in, requires_grad=True)
    w = torch.rand(2, T, module.out_proj.out_features)
    out = module(x)
    (out * w).sum().backward()
    return {"x": tensor_record(x), "w": tensor_record(w), "out": tensor_record(out),
            "grads": {n: tensor_record(p.grad) for n, p in module.named_parameters()}, "grad_x": tensor_record(x.grad)}


def main():
    args = arguments(__doc__, "positions.json", sources=True)
    torch.set_num_threads(1)
    prov = provenance(SCRIPT)
    os.makedirs(args.sources, exist_ok=True)
    classes = {"precompute_rope_params": precompute_rope_params, "compute_rope": compute_rope,
               "rope_inv_freq": rope_inv_freq, "GroupedQueryAttention": llama.GroupedQueryAttention,
               "PositionalEncoding": PositionalEncoding, "get_slopes": get_slopes, "alibi_bias": alibi_bias,
               "MultiHeadAttentionALiBi": MultiHeadAttentionALiBi}
    ns, _ = export_cells(
        os.path.join(args.sources, "oracle_24_positions.txt"),
        f"Text export of an oracle run for chapter 24 (positions): Raschka's precompute_rope_params, compute_rope "
        f"and Llama 3 GroupedQueryAttention (rasbt/LLMs-from-scratch ch05/07_gpt_to_llama, commit {RASCHKA_COMMIT}; "
        f"Apache License 2.0, (c) Sebastian Raschka; his cell 9 of converting-gpt-to-llama2 verbatim), the Annotated "
        f"Transformer's PositionalEncoding (MIT, (c) 2018 Alexander Rush), Press et al.'s get_slopes (MIT, (c) Ofir "
        f"Press) and this project's MultiHeadAttentionALiBi and rope_inv_freq (tools/oracle/reference/), executed by "
        f"{SCRIPT} with Debian's {prov['debian_package']} (torch {prov['torch_version']}) on the reference BLAS, "
        f"{prov['date']}: code cells and their printed outputs, in order.", CELLS, {"previous_chapters": classes})
    inv_freq = []
    for head_dim in (16, 64, 128):
        for name, base, freq in (("llama2", 10_000, None), ("llama3", 500_000, None), ("llama3.1", 500_000, LLAMA31),
                                 ("llama3.2", 500_000, LLAMA32)):
            inv_freq.append({"head_dim": head_dim, "setting": name, "inv_freq": tensor_record(rope_inv_freq(head_dim, base, freq))})
    doc = {**prov,
           "format": "Float32 tensors as {shape, bits} (uint32, row-major). `demo`: his cell 9 (cell 10 of the "
                     "export). `rope_tables`: rows `rows` of precompute_rope_params(head_dim, theta_base, "
                     "context_length, freq_config). `inv_freq`: rope_inv_freq(head_dim, base, freq_config) for "
                     "llama2 (10000), llama3 (500000), llama3.1 and llama3.2 (500000 with his freq_configs). "
                     "`sinusoidal`: rows of PositionalEncoding(d_model, 0.0, max_len).pe[0]. `alibi_slopes`: "
                     "torch.Tensor(get_slopes(n)). `rope_backward`: x.grad of compute_rope(x, cos, sin).backward("
                     "grad_output), tables precompute_rope_params(8, 10000, 12). `gqa_rope`: cell 19's module and "
                     "output. `llama2_mha`, `alibi_mha`: his Llama 2 MultiHeadAttention(3, 8, 6, 2) and "
                     "MultiHeadAttentionALiBi(3, 8, 6, 0.0, 4) under manual_seed(seed), x = rand(2, 6, 3), "
                     "w = rand(2, 6, 8): the output and, for sum(out * w), each parameter's .grad and x.grad.",
           "demo": {n: tensor_record(ns[n]) for n in ("cos", "sin", "queries", "keys", "queries_rot", "keys_rot")},
           "rope_tables": rope_tables(),
           "inv_freq": inv_freq,
           "sinusoidal": sinusoidal(),
           "alibi_slopes": [{"num_heads": n, "slopes": tensor_record(torch.Tensor(get_slopes(n)))}
                            for n in list(range(1, 17)) + [20, 24, 32, 48, 64]],
           "rope_backward": rope_backward(),
           "gqa_rope": {"out": tensor_record(ns["gqa"](ns["batch"], None, ns["gqa_cos"], ns["gqa_sin"])),
                        "params": {n: tensor_record(p) for n, p in ns["gqa"].named_parameters()}},
           "llama2_mha": {"seed": 123, **module_backward(lambda: llama.MultiHeadAttention(3, 8, 6, 2), 3, 6, 123)},
           "alibi_mha": {"seed": 123, **module_backward(lambda: MultiHeadAttentionALiBi(3, 8, 6, 0.0, 4), 3, 6, 123)}}
    write_json(args.out, doc)
    print(f"wrote {args.out} and oracle_24_positions.txt in {args.sources}")


if __name__ == "__main__":
    sys.exit(main())
