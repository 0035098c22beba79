#!/usr/bin/python3
"""Records chapter 22 in PyTorch: Raschka's chapter 4 GPT model, where his printed text cannot say.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/gpt_model.py

His notebook (data/sources/raschka/raschka_ch04.txt) ran on another machine (torch 2.10); Debian's
PyTorch 1.13 prints the same for most cells (the GPT model's logits, its parameter counts, the
generated ids), and other last digits where his machine summed in another order. This script runs
his chapter 4 classes (tools/oracle/reference/ch04.py runs them from data/sources/raschka/raschka_ch04.txt;
his chapter 3 MultiHeadAttention
as `previous_chapters`) and writes
- data/sources/oracle/oracle_22_gpt_model.txt: the run as a notebook's text export (`In [n]:`
  cells, the code, what it printed), read by tools/extract_book.py like the notebooks: the blocks
  Debian's PyTorch prints where his differ (the dummy model, the mean of the normalised outputs,
  the gradient means), and what he does not print (the model in evaluation mode);
- data/oracle/gpt_model.json: float32 bits and SHA-256 digests of the same runs, with provenance,
  for tests/test_gpt_model.cpp (GELU and its gradient on 4,100 inputs, LayerNorm, FeedForward,
  TransformerBlock, the whole model in training and evaluation mode, the generated ids).
The token ids are his printed ones (tiktoken is not part of Debian): In [4]'s batch and In [30]'s
"Hello, I am".
"""

import hashlib
import os
import sys

import numpy as np
import torch
from oracle_common import arguments, export_cells, provenance, write_json
from reference import (GELU, DummyGPTModel, ExampleDeepNeuralNetwork, FeedForward, GPTModel, LayerNorm,
                       MultiHeadAttention, TransformerBlock, generate_text_simple, print_gradients)

SCRIPT = "tools/oracle/gpt_model.py"
RASCHKA_COMMIT = "28c65cdfbc3338e2e040016eea4b7fdf556e4d57"

CELLS = [
    """import torch
import torch.nn as nn
from ch04 import DummyGPTModel, LayerNorm, GELU, FeedForward, ExampleDeepNeuralNetwork, print_gradients
from ch04 import TransformerBlock, GPTModel, generate_text_simple
GPT_CONFIG_124M = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12,
                   "n_layers": 12, "drop_rate": 0.1, "qkv_bias": False}
batch = torch.tensor([[6109, 3626, 6100, 345], [6109, 1110, 6622, 257]])  # his In [4]""",
    # his In [5], printed by Debian's PyTorch (the portable Bernoulli path)
    """torch.manual_seed(123)
model = DummyGPTModel(GPT_CONFIG_124M)
logits = model(batch)
print("Output shape:", logits.shape)
print(logits)""",
    # his In [6]-[8]
    """torch.manual_seed(123)
batch_example = torch.randn(2, 5)
layer = nn.Sequential(nn.Linear(5, 6), nn.ReLU())
out = layer(batch_example)
mean = out.mean(dim=-1, keepdim=True)
var = out.var(dim=-1, keepdim=True)
out_norm = (out - mean) / torch.sqrt(var)
mean = out_norm.mean(dim=-1, keepdim=True)
var = out_norm.var(dim=-1, keepdim=True)
print("Mean:\\n", mean)""",
    # his In [9]
    """torch.set_printoptions(sci_mode=False)
print("Mean:\\n", mean)""",
    # his In [11]-[12]
    """ln = LayerNorm(emb_dim=6)
out_ln = ln(out)
mean = out_ln.mean(dim=-1, keepdim=True)
print("Mean:\\n", mean)""",
    # his In [19] and In [20]
    """layer_sizes = [3, 3, 3, 3, 3, 1]
sample_input = torch.tensor([[1., 0., -1.]])
torch.manual_seed(123)
model_without_shortcut = ExampleDeepNeuralNetwork(layer_sizes, use_shortcut=False)
print_gradients(model_without_shortcut, sample_input)""",
    """torch.manual_seed(123)
model_with_shortcut = ExampleDeepNeuralNetwork(layer_sizes, use_shortcut=True)
print_gradients(model_with_shortcut, sample_input)""",
    # his In [24], then what he does not print: the model in evaluation mode
    """torch.manual_seed(123)
model = GPTModel(GPT_CONFIG_124M)
out = model(batch)
model.eval()
with torch.no_grad():
    out_eval = model(batch)
print(out_eval)""",
    # his In [31] and gpt.py's 10 tokens
    """encoded_tensor = torch.tensor([[15496, 11, 314, 716]])  # his In [30]
out10 = generate_text_simple(model=model, idx=encoded_tensor, max_new_tokens=10,
                             context_size=GPT_CONFIG_124M["context_length"])
print("Output:", out10)""",
]


def bits(t):
    """float32 bits, row-major, as uint32."""
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def digest(t):
    """SHA-256 of a float32 tensor's bytes (row-major, little-endian)."""
    return hashlib.sha256(t.detach().contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def gelu_cases():
    """GELU and its gradient (autograd through his forward) on 4,100 inputs: his plot's
    linspace(-3, 3, 100), then 4,000 seeded normals times 4."""
    torch.manual_seed(22)
    x = torch.cat([torch.linspace(-3, 3, 100), torch.randn(4000) * 4]).requires_grad_(True)
    g = torch.rand(4100)
    y = GELU()(x)
    y.backward(g)
    return {"python": "x = cat([linspace(-3, 3, 100), randn(4000) * 4]) after manual_seed(22); "
                      "g = rand(4100); y = GELU()(x); y.backward(g)",
            "x_bits": bits(x), "g_bits": bits(g), "y_bits": bits(y), "grad_bits": bits(x.grad)}


def layer_norm_cases():
    """LayerNorm(768) with random scale and shift on [2, 3, 768] inputs of several magnitudes."""
    torch.manual_seed(23)
    ln = LayerNorm(768)
    with torch.no_grad():
        ln.scale.copy_(torch.randn(768))
        ln.shift.copy_(torch.randn(768))
    x = torch.randn(2, 3, 768) * torch.tensor([1.0, 1e-3, 50.0]).view(1, 3, 1) + 3.0
    with torch.no_grad():
        y = ln(x)
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        var_unbiased = x.var(dim=-1, keepdim=True)
    return {"python": "manual_seed(23); ln = LayerNorm(768); scale, shift = randn(768), randn(768); "
                      "x = randn(2, 3, 768) * [1, 1e-3, 50] (per row) + 3",
            "scale_bits": bits(ln.scale), "shift_bits": bits(ln.shift), "x_bits": bits(x), "y_bits": bits(y),
            "mean_bits": bits(mean), "var_bits": bits(var), "var_unbiased_bits": bits(var_unbiased)}


def block_cases(cfg):
    """His In [17] (FeedForward on rand(2, 3, 768), no seed of its own: seeded here) and In [22]
    (TransformerBlock, training mode, after manual_seed(123))."""
    torch.manual_seed(123)
    ffn = FeedForward(cfg)
    x = torch.rand(2, 3, 768)
    with torch.no_grad():
        ff_out = ffn(x)
    torch.manual_seed(123)
    xb = torch.rand(2, 4, 768)
    block = TransformerBlock(cfg)
    with torch.no_grad():
        block_out = block(xb)
        block.eval()
        block_eval = block(xb)
    return {"feed_forward": {"python": "manual_seed(123); ffn = FeedForward(cfg); x = rand(2, 3, 768); ffn(x)",
                             "sha256": digest(ff_out), "first_bits": bits(ff_out.reshape(-1)[:16])},
            "transformer_block": {"python": "manual_seed(123); x = rand(2, 4, 768); block = TransformerBlock(cfg); "
                                            "block(x) (training mode), then block.eval(); block(x)",
                                  "train_sha256": digest(block_out), "train_first_bits": bits(block_out.reshape(-1)[:16]),
                                  "eval_sha256": digest(block_eval), "eval_first_bits": bits(block_eval.reshape(-1)[:16])}}


def main():
    args = arguments(__doc__, "gpt_model.json", sources=True)
    torch.set_num_threads(1)
    prov = provenance(SCRIPT)
    os.makedirs(args.sources, exist_ok=True)
    modules = {"previous_chapters": {"MultiHeadAttention": MultiHeadAttention},
               "ch04": {"DummyGPTModel": DummyGPTModel, "LayerNorm": LayerNorm, "GELU": GELU,
                        "FeedForward": FeedForward, "ExampleDeepNeuralNetwork": ExampleDeepNeuralNetwork,
                        "print_gradients": print_gradients, "TransformerBlock": TransformerBlock,
                        "GPTModel": GPTModel, "generate_text_simple": generate_text_simple}}
    ns, _ = export_cells(
        os.path.join(args.sources, "oracle_22_gpt_model.txt"),
        f"Text export of an oracle run for chapter 22 (the GPT model): Raschka's chapter 4 classes "
        f"(rasbt/LLMs-from-scratch ch04/01_main-chapter-code/ch04.ipynb, commit {RASCHKA_COMMIT}; Apache "
        f"License 2.0, (c) Sebastian Raschka; imported from `ch04`, his chapter 3 MultiHeadAttention as "
        f"`previous_chapters`), executed by {SCRIPT} with Debian's {prov['debian_package']} (torch "
        f"{prov['torch_version']}) on the reference BLAS, one thread, {prov['date']}: code cells and their "
        f"printed outputs, in order.", CELLS, modules)
    torch.set_printoptions(sci_mode=None)
    cfg = ns["GPT_CONFIG_124M"]
    doc = {**prov,
           "format": "Float tensors as float32 bits (uint32, row-major) or as the SHA-256 of their float32 "
                     "bytes (little-endian, row-major); `python` says what was run. The model runs are cells 8 "
                     "and 9 of the export oracle_22_gpt_model.txt.",
           "gelu": gelu_cases(),
           "layer_norm": layer_norm_cases(),
           **block_cases(cfg),
           "dummy_logits_sha256": digest(ns["logits"]),
           "gpt_model": {"python": "manual_seed(123); model = GPTModel(GPT_CONFIG_124M); model(batch) in training "
                                   "mode (his In [24]), then model.eval(); model(batch)",
                         "batch": ns["batch"].tolist(),
                         "train_sha256": digest(ns["out"]), "train_first_bits": bits(ns["out"][0, 0, :8]),
                         "eval_sha256": digest(ns["out_eval"]), "eval_first_bits": bits(ns["out_eval"][0, 0, :8]),
                         "eval_last_row_bits": bits(ns["out_eval"][1, 3, :8]),
                         "num_parameters": sum(p.numel() for p in ns["model"].parameters()),
                         "generated_10": ns["out10"].tolist()}}
    write_json(args.out, doc)
    print(f"wrote {args.out} and oracle_22_gpt_model.txt in {args.sources}")


if __name__ == "__main__":
    sys.exit(main())
