#!/usr/bin/env python3
"""Regenerate data/book/ (the book: every printed output of the five source notebooks).

Run from the repository root:

    python3 tools/extract_book.py

It reads the text exports in data/sources/ (the five notebooks in data/sources/seeds/,
Raschka's chapter 3 and its exercise solutions in data/sources/raschka/; provenance and
licenses in data/sources/README.md), takes every printed output verbatim, and rewrites
data/book/ completely:

    data/book/manifest.tsv          one line per printed output (see data/book/README.md)
    data/book/<nnn>/<id>.txt        the printed output, verbatim, one file per entry
    data/book/README.md             what the directory holds, with counts

Nothing is guessed: the table BOOK below declares, for every output, its cell, the chapter
that reprints it, its style and check, and the first and last line of the output as printed.
The script locates each cell by its `In [n]:` header, finds the declared first line after the
code (it must follow a blank line and occur once in the cell) and the declared last line,
and fails loudly if the notebooks no longer match the table. NO_OUTPUT lists the cells that
print nothing, so that a cell missing from both lists is an error too. FENCED names the
markdown sections whose printed output stands in a ``` fence instead of a cell (Raschka's
exercises 3.2 and 3.3 show their solutions that way): such a "cell" is the section from its
`## Exercise 3.2` header, and its output sits between fence lines instead of blank lines.

Standard library only.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "data", "sources")
BOOK = os.path.join(ROOT, "data", "book")

NOTEBOOKS = {
    "000": "000_95e70465c21e3e62.txt",
    "001": "001_ed5ea164135fb843.txt",
    "002": "002_71906f06d162f7d6.txt",
    "003": "003_438c88fedacf0297.txt",
    "004": "004_d8a07657e05181d5.txt",
    "rch03": "raschka_ch03.txt",
    "rch03x": "raschka_ch03_exercises.txt",
    # Oracle runs of Raschka's bonus modules (tools/oracle/mla_sharing.py), exported as the
    # notebooks are: what the chapters beyond the notebooks compare with.
    "oracle15": "oracle_15_latent_attention.txt",
    "oracle16": "oracle_16_kv_sharing.txt",
}
# Folder of each source under data/sources/.
FOLDER = {nb: ("raschka" if nb.startswith("rch") else "oracle" if nb.startswith("oracle") else "seeds")
          for nb in NOTEBOOKS}
# How chapter headers name a source (record.cpp `source_name`, bookpages.py `short_cell`).
SOURCE_NAME = {"rch03": "Raschka 3", "rch03x": "Raschka 3 ex.", "oracle15": "oracle 15",
               "oracle16": "oracle 16"}
# Markdown sections that show a printed output in a fence (no `In [n]:` cell).
FENCED = {"rch03x": ["Exercise 3.2", "Exercise 3.3"]}

# Cells (by execution count) that print nothing; every other `In [n]:` cell must be in TABLE.
NO_OUTPUT = {
    "000": [3, 4, 5, 6, 7, 11, 13, 15, 17, 23, 25, 26, 27, 30, 31, 32, 33, 38, 41, 42, 43],
    "001": [1, 2, 3, 4, 6],
    "002": [2, 16, 18],
    "003": [1],
    "004": [1, 2, 17, 52, 54, 58],
    "rch03": [2, 15, 16],
    "rch03x": [2, 3, 4, 5],
    "oracle15": [1],
    "oracle16": [1],
}

# Entry = (notebook, cell, part, chapter, style, check, truncated, first line, last line, what)
# - part: 0 when the cell printed one output, else 1, 2, ... (separate print() calls).
# - first/last: the first and last line of the output as printed (compared without trailing
#   whitespace); for a one-line output both are the same.
# - truncated: the export cut the output short (the what gets "(truncated in the export)").
# precision is derived from style: torch 4 (notebook 001: 2, set_printoptions), numpy 8, text -.
E = collections.namedtuple(
    "E", "nb cell part chapter style check truncated first last what")

REL = "relation:"
TABLE = [
    # ---------------------------------------------------------------- 000 "Self-Attention: Bits"
    E("000", 8, 0, 9, "text", "exact", False,
      "(torch.Size([2, 8, 16]), torch.Size([2, 8, 16]), torch.Size([2, 8, 16]))",
      "(torch.Size([2, 8, 16]), torch.Size([2, 8, 16]), torch.Size([2, 8, 16]))",
      "shapes of query, key and value (B=2, S=8, E=16)"),
    E("000", 9, 0, 9, "text", "exact", False,
      "torch.Size([2, 16, 8])", "torch.Size([2, 16, 8])",
      "shape of the transposed key key_t [B, E, S]"),
    E("000", 10, 0, 9, "text", "exact", False,
      "torch.Size([2, 8, 8])", "torch.Size([2, 8, 8])",
      "shape of the unscaled attention logits query @ key_t"),
    E("000", 12, 0, 9, "text", "exact", False,
      "torch.Size([2, 8, 8])", "torch.Size([2, 8, 8])",
      "shape of the scaled attention logits"),
    E("000", 14, 0, 9, "torch", REL + "causal_neg_inf_above_diagonal", False,
      "tensor([[ 0.1272,    -inf,    -inf,    -inf,    -inf,    -inf,    -inf,    -inf],",
      "       grad_fn=<SelectBackward0>)",
      "causally masked attention logits of batch element 0 (-inf above the diagonal)"),
    E("000", 16, 0, 9, "torch", REL + "softmax_of_printed_logits", True,
      "tensor([[[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "         [0.1405, 0.172",
      "causal attention weights: softmax of the masked logits of In [14]"),
    E("000", 18, 0, 9, "text", "unreproducible:tqdm_import_warning_on_stderr", False,
      "  from .autonotebook import tqdm as notebook_tqdm",
      "  from .autonotebook import tqdm as notebook_tqdm",
      "tail of the tqdm warning (stderr) printed when importing transformers"),
    E("000", 19, 0, 9, "text", "exact", False,
      "dict_keys(['input_ids', 'attention_mask'])",
      "dict_keys(['input_ids', 'attention_mask'])",
      "keys of the tokenizer output"),
    E("000", 20, 0, 9, "text", "exact", False,
      "2", "2",
      "pad token id of the Mistral-7B tokenizer (pad = eos)"),
    E("000", 21, 0, 9, "torch", "exact", False,
      "tensor([    2,     2,     2,     2,     2,     2,     1, 13264,  5509])",
      "tensor([    2,     2,     2,     2,     2,     2,     1, 13264,  5509])",
      "left-padded token ids of 'Something random' (2 = pad)"),
    E("000", 22, 0, 9, "torch", "exact", False,
      "tensor([0, 0, 0, 0, 0, 0, 1, 1, 1])",
      "tensor([0, 0, 0, 0, 0, 0, 1, 1, 1])",
      "attention mask of the first text: 0 on pad tokens"),
    E("000", 24, 0, 9, "torch", REL + "masked_pattern_from_attention_mask", True,
      "tensor([[[  -inf,   -inf,   -inf,   -inf,   -inf,   -inf, 0.1245, 0.6143,",
      "         [  -inf,   -inf,   -inf,   -inf, 0.1962, 0.6371, 0.3871, 0.",
      "random logits with -inf on the padded key positions of each text"),
    E("000", 28, 0, 8, "text", "exact", False,
      r"'\nWith KV caching:\nInput: (B,1,E), kv_cache\nOutput: (B,1,E)\n\n'",
      r"'\nWith KV caching:\nInput: (B,1,E), kv_cache\nOutput: (B,1,E)\n\n'",
      "repr of the KV-caching docstring (with a cache: input (B,1,E), output (B,1,E))"),
    E("000", 29, 1, 8, "text", "exact", False,
      "torch.Size([2, 1, 16])", "torch.Size([2, 1, 16])",
      "shape of the new token z"),
    E("000", 29, 2, 8, "text", "exact", False,
      "torch.Size([2, 4, 16])", "torch.Size([2, 4, 16])",
      "shape of the earlier tokens z_old"),
    E("000", 29, 3, 8, "text", "exact", False,
      "torch.Size([2, 5, 16])", "torch.Size([2, 5, 16])",
      "shape of z_new = concat(z_old, z)"),
    E("000", 34, 0, 8, "text", "exact", False,
      "torch.Size([2, 1, 16])", "torch.Size([2, 1, 16])",
      "query shape with the KV cache (the new token only)"),
    E("000", 35, 0, 8, "text", "exact", False,
      "torch.Size([2, 5, 16])", "torch.Size([2, 5, 16])",
      "key shape with the KV cache (cached keys + new key)"),
    E("000", 36, 0, 8, "text", "exact", False,
      "RuntimeError: output with shape [2, 1, 5] doesn't match the broadcast shape [2, 5, 5]",
      "RuntimeError: output with shape [2, 1, 5] doesn't match the broadcast shape [2, 5, 5]",
      "error of the square causal mask when Sq != Sk (the KV-cache bug)"),
    E("000", 37, 1, 8, "text", "exact", False,
      "torch.Size([2, 5, 5])", "torch.Size([2, 5, 5])",
      "shape of the full causal mask [B, Sk, Sk]"),
    E("000", 37, 2, 8, "text", "exact", False,
      "torch.Size([2, 1, 5])", "torch.Size([2, 1, 5])",
      "causal mask trimmed to the last Sq rows [B, Sq, Sk] (the fix)"),
    E("000", 39, 0, 8, "torch", REL + "cached_equals_uncached", False,
      "tensor([[[ 0.0684, -0.0154, -0.0904, -0.2118,  0.2850,  0.2744,  0.3194,",
      "           0.0834,  0.1254]]], grad_fn=<SliceBackward0>)",
      "last-token output without the cache (output_new.attention_output[:,-1:,:])"),
    E("000", 40, 0, 8, "torch", REL + "cached_equals_uncached", False,
      "tensor([[[ 0.0684, -0.0154, -0.0904, -0.2118,  0.2850,  0.2744,  0.3194,",
      "           0.0834,  0.1254]]], grad_fn=<ViewBackward0>)",
      "output computed with the KV cache (same as In [39])"),
    E("000", 44, 0, 8, "torch", REL + "cached_equals_uncached", False,
      "tensor([[-0.0030,  0.2412,  0.3421,  0.2261,  0.1717, -0.2394,  0.0092,  0.1346,",
      "       grad_fn=<SliceBackward0>)",
      "merged class: last-token output without the cache (output_new.attention_output[:,-1,:])"),
    E("000", 45, 0, 8, "torch", REL + "cached_equals_uncached", False,
      "tensor([[[-0.0030,  0.2412,  0.3421,  0.2261,  0.1717, -0.2394,  0.0092,",
      "           0.4522, -0.0282]]], grad_fn=<ViewBackward0>)",
      "merged class: output with the KV cache (same values as In [44])"),
    E("000", 46, 0, 8, "torch", REL + "rounding_level_difference", False,
      "tensor([[[ 1.4901e-08,  1.4901e-08,  0.0000e+00,  0.0000e+00,  0.0000e+00,",
      "           0.0000e+00]]], grad_fn=<SubBackward0>)",
      "uncached minus cached output: differences at float32 rounding level only"),
    # ---------------------------------------------------------------- 001 "Causal Attention"
    E("001", 5, 0, 10, "torch", REL + "tokens_in_vocab_range", False,
      "(tensor([95, 11, 75, 30, 31]), torch.Size([5]))",
      "(tensor([95, 11, 75, 30, 31]), torch.Size([5]))",
      "random token ids randint(V=100, (T=5,)) and their shape"),
    E("001", 7, 0, 10, "text", "exact", False,
      "torch.Size([5, 768])", "torch.Size([5, 768])",
      "shape of q (T, d)"),
    E("001", 8, 0, 10, "torch", REL + "input_of_masking_chain", False,
      "(tensor([[-0.82, -0.36, -0.15,  0.76, -0.32],",
      " torch.Size([5, 5]))",
      "scaled scores q @ k.t() / sqrt(d) and their shape"),
    E("001", 9, 0, 10, "torch", REL + "tril_of_printed_scores", False,
      "(tensor([[-0.82,  0.00,  0.00,  0.00,  0.00],",
      " torch.Size([5, 5]))",
      "tril of the scores of In [8] (zeros above the diagonal)"),
    E("001", 10, 0, 10, "torch", REL + "neg_inf_where_zero", False,
      "(tensor([[-0.82,  -inf,  -inf,  -inf,  -inf],",
      " torch.Size([5, 5]))",
      "zeros of In [9] replaced by -inf (masked_fill where == 0)"),
    E("001", 11, 0, 10, "torch", REL + "softmax_of_printed_scores", False,
      "(tensor([[1.00, 0.00, 0.00, 0.00, 0.00],",
      " torch.Size([5, 5]))",
      "causal attention weights: softmax of the -inf-masked scores of In [10]"),
    E("001", 12, 0, 10, "torch", REL + "sdpa_equals_manual", False,
      "(tensor([[-0.55,  0.09, -0.22,  ..., -0.33, -0.84,  0.01],",
      " torch.Size([5, 768]))",
      "manual attention output masked_att @ v (columns summarised) and its shape"),
    E("001", 13, 0, 10, "torch", "exact", False,
      "tensor([[ True, False, False, False, False],",
      "        [ True,  True,  True,  True,  True]])",
      "boolean causal mask tril(ones(T, T)) == 1"),
    E("001", 14, 0, 10, "torch", REL + "sdpa_equals_manual", False,
      "tensor([[-0.55,  0.09, -0.22,  ..., -0.33, -0.84,  0.01],",
      "        [-0.48, -0.11, -0.08,  ..., -0.06, -0.19,  0.39]], grad_fn=<MmBackward0>)",
      "scaled_dot_product_attention with the boolean mask (equals In [12])"),
    E("001", 15, 0, 10, "text", REL + "sdpa_equals_manual", False,
      "True", "True",
      "allclose(sdpa with attn_mask, manual output) is True"),
    E("001", 16, 0, 10, "torch", REL + "sdpa_equals_manual", False,
      "tensor([[-0.55,  0.09, -0.22,  ..., -0.33, -0.84,  0.01],",
      "        [-0.48, -0.11, -0.08,  ..., -0.06, -0.19,  0.39]], grad_fn=<MmBackward0>)",
      "scaled_dot_product_attention with is_causal=True (equals In [12])"),
    E("001", 17, 0, 10, "text", REL + "sdpa_equals_manual", False,
      "True", "True",
      "allclose(sdpa with is_causal, manual output) is True"),
    E("001", 18, 0, 10, "text", "exact", False,
      "(torch.Size([5, 768]), Linear(in_features=768, out_features=100, bias=True))",
      "(torch.Size([5, 768]), Linear(in_features=768, out_features=100, bias=True))",
      "shape of new_v and the classification head's repr"),
    E("001", 19, 0, 10, "torch", REL + "argmax_in_vocab_range", False,
      "(tensor([ 0, 66, 81, 43, 87]), torch.Size([5, 100]), torch.Size([5]))",
      "(tensor([ 0, 66, 81, 43, 87]), torch.Size([5, 100]), torch.Size([5]))",
      "argmax of the classifier logits, logits shape and argmax shape"),
    E("001", 20, 0, 10, "torch", "exact", False,
      "tensor([0, 1, 2, 3, 4])", "tensor([0, 1, 2, 3, 4])",
      "dummy targets arange(0, T)"),
    E("001", 21, 0, 10, "torch", REL + "cross_entropy_near_log_vocab", False,
      "tensor(4.54, grad_fn=<NllLossBackward0>)",
      "tensor(4.54, grad_fn=<NllLossBackward0>)",
      "cross-entropy of the untrained logits with ignore_index=-1 (about ln 100)"),
    # ---------------------------------------------------------------- 002 "Masked / Causal Attention"
    E("002", 1, 0, 2, "torch", "exact", False,
      "tensor([[-0.0739,  0.0713],",
      "        [-0.0754,  0.0693]], grad_fn=<MmBackward0>)",
      "context vectors of SelfAttention_v2 (nn.Linear weights, seed 789)"),
    E("002", 3, 0, 3, "torch", "exact", False,
      "Attention weights:",
      "       grad_fn=<SoftmaxBackward0>)",
      "attention weights softmax(QK^T / sqrt(d_k)) with their label"),
    E("002", 4, 0, 3, "text", "exact", False,
      "torch.Size([6, 6])", "torch.Size([6, 6])",
      "shape of the attention scores"),
    E("002", 5, 0, 3, "torch", "exact", False,
      "(tensor([[1., 0., 0., 0., 0., 0.],",
      " torch.Size([6, 6]))",
      "simple mask tril(ones(6, 6)) and its shape"),
    E("002", 6, 0, 3, "torch", "exact", False,
      "tensor([[0.1921, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<MulBackward0>)",
      "attention weights times the simple mask (masked_simple)"),
    E("002", 7, 0, 3, "torch", "exact", False,
      "tensor([[0.1921],",
      "        [1.0000]], grad_fn=<SumBackward1>)",
      "row sums of the masked attention weights"),
    E("002", 8, 0, 3, "torch", "exact", False,
      "tensor([[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<DivBackward0>)",
      "renormalised masked attention weights (masked_simple / row_sums)"),
    E("002", 9, 0, 4, "torch", "exact", False,
      "tensor([[0., 1., 1., 1., 1., 1.],",
      "        [False, False, False, False, False, False]])",
      "triu mask (diagonal=1) and its bool form, in one print"),
    E("002", 10, 0, 4, "torch", "exact", False,
      "(tensor([[0.2899,   -inf,   -inf,   -inf,   -inf,   -inf],",
      " torch.Size([6, 6]))",
      "attention scores masked with -inf above the diagonal, and their shape"),
    E("002", 11, 0, 4, "torch", "exact", False,
      "tensor([[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<SoftmaxBackward0>)",
      "softmax of the -inf-masked scores / sqrt(d_k) (same as In [8])"),
    E("002", 12, 0, 5, "torch", "exact", False,
      "Example:",
      "        [0., 2., 0., 0., 0., 0.]])",
      "ones(6, 6) and dropout(0.5) of it after seed 123 (MKL Bernoulli path)"),
    E("002", 13, 0, 5, "torch", "exact", False,
      "tensor([[2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<MulBackward0>)",
      "dropout(0.5) of the causal attention weights after seed 123"),
    E("002", 14, 0, 6, "text", "exact", False,
      "torch.Size([6, 3])", "torch.Size([6, 3])",
      "shape of the inputs"),
    E("002", 15, 0, 6, "torch", "exact", False,
      "tensor([[[0.4300, 0.1500, 0.8900],",
      "torch.Size([2, 6, 3])",
      "batch = stack((inputs, inputs)) and its shape"),
    E("002", 17, 1, 6, "torch", "exact", False,
      "tensor([[[0.4300, 0.1500, 0.8900],",
      "torch.Size([2, 6, 3])",
      "batch = stack((inputs, inputs)) and its shape (again)"),
    E("002", 17, 2, 6, "text", "exact", False,
      "d_in: 3, d_out: 2", "d_in: 3, d_out: 2",
      "d_in and d_out of the CausalAttention"),
    E("002", 19, 0, 6, "torch", "exact", False,
      "Context vectors:",
      "Shape: torch.Size([2, 6, 2])",
      "CausalAttention context vectors of the batch (seed 123, dropout 0) and shape"),
    # ---------------------------------------------------------------- 003 GPT-2 attention
    E("003", 2, 0, 7, "text", "exact", False,
      "GPT2Attention(", ")",
      "repr of the GPT2Attention module (fused c_attn, c_proj, dropouts)"),
    E("003", 3, 0, 7, "text", "exact", False,
      "True", "True",
      "the layer's output has the size of its input"),
    E("003", 4, 0, 7, "text", "exact", False,
      "True", "True",
      "q, k and v split from c_attn have the size of the input"),
    E("003", 5, 0, 7, "text", "exact", False,
      "torch.Size([16, 3, 5, 4])", "torch.Size([16, 3, 5, 4])",
      "q split into heads (B, H, T, S // H)"),
    E("003", 6, 0, 7, "text", "exact", False,
      "torch.Size([16, 3, 5, 4])", "torch.Size([16, 3, 5, 4])",
      "per-head output y = softmax(masked scores) @ v"),
    E("003", 7, 0, 7, "text", "exact", False,
      "torch.Size([16, 5, 12])", "torch.Size([16, 5, 12])",
      "heads merged back into (B, T, S)"),
    E("003", 8, 0, 7, "text", "exact", False,
      "True", "True",
      "c_proj of the merged heads equals the layer's output (allclose)"),
    # ---------------------------------------------------------------- 004 "Attention"
    E("004", 16, 0, 2, "torch", "exact", False,
      "Context Vector for journey: tensor([0.3061, 0.8210])",
      "Context Vector for journey: tensor([0.3061, 0.8210])",
      "context vector of 'journey' with Parameter(rand) weights (seed 123)"),
    E("004", 27, 0, 2, "numpy", "ulp:4", False,
      "Context Matrix for all words:",
      " [-0.07544428  0.06930492]]",
      "SelfAttention context matrix (nn.Linear weights, seed 789)"),
    E("004", 30, 0, 3, "numpy", "ulp:4", False,
      "Attention Weight Matrix for all words:",
      " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]",
      "attention weight matrix of the SelfAttention"),
    E("004", 36, 0, 3, "numpy", "ulp:4", False,
      "Simple Mask:",
      " [1. 1. 1. 1. 1. 1.]]",
      "simple mask tril(ones(6, 6))"),
    E("004", 38, 0, 3, "numpy", "ulp:4", False,
      "Masked Attention-Weights:",
      " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]",
      "attention weights times the simple mask"),
    E("004", 39, 0, 3, "numpy", "ulp:4", False,
      "Normalized Masked Attention-Weights:",
      " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]",
      "renormalised masked attention weights (mask_attn / row_sums)"),
    E("004", 41, 0, 3, "numpy", "ulp:4", False,
      "Context Matrix from SMA:",
      " [-0.07544428  0.06930492]]",
      "context matrix from the simple-masked weights"),
    E("004", 43, 0, 4, "numpy", "ulp:4", False,
      "Masked Attention Scores:",
      " [0.34078205 0.12703359 0.12903105 0.01979299 0.12896936 0.00775672]]",
      "attention scores masked with -inf above the diagonal"),
    E("004", 44, 0, 4, "numpy", "ulp:4", False,
      "Normalized Masked Attention-Weights:",
      " [0.19347237 0.16633299 0.16656809 0.15418623 0.16656083 0.15287954]]",
      "softmax of the -inf-masked scores / sqrt(d_k)"),
    E("004", 46, 0, 4, "torch", "exact", False,
      "Context Matrix from -inf mask:",
      "        [-0.0754,  0.0693]], grad_fn=<MmBackward0>)",
      "context matrix from the -inf mask (printed as a tensor)"),
    E("004", 51, 0, 5, "numpy", "ulp:4", False,
      "Dropout applied to -inf Attention-Weights:",
      " [0.         0.         0.33313617 0.         0.         0.30575907]]",
      "dropout(0.5) of the -inf-masked weights (portable Bernoulli path)"),
    E("004", 62, 0, 6, "numpy", "ulp:4", False,
      "Batched Context Matrices:",
      "  [-0.6748546  -0.09838524]]]",
      "CausalAttention on the batch (dropout 0.5, seed 123)"),
    E("004", 64, 1, "A", "numpy", "ulp:4", False,
      "First head Context Matrix:",
      " [0.2399512  0.07629689]]",
      "MultiHeadAtt output for batch element 0 (labelled 'First head')"),
    E("004", 64, 2, "A", "numpy", "ulp:4", False,
      "Second head Context Matrix:",
      " [0.19460025 0.08155501]]",
      "MultiHeadAtt output for batch element 1 (labelled 'Second head')"),
    # ---------------------------------------------------------------- Raschka, chapter 3
    # Executed with torch 2.4.0 (portable Bernoulli path); seeds 123 and 789 as in 002/004.
    E("rch03", 1, 0, 1, "text", "unreproducible:torch_version_of_the_run", False,
      "torch version: 2.4.0", "torch version: 2.4.0",
      "the torch version the notebook ran with (2.4.0; this project mirrors 1.13)"),
    E("rch03", 3, 0, 1, "torch", "exact", False,
      "tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])",
      "tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])",
      "attn_scores_2: journey's dot product with each token (torch.dot loop)"),
    E("rch03", 4, 1, 1, "torch", "exact", False,
      "tensor(0.9544)", "tensor(0.9544)",
      "the dot product of inputs[0] and query written as a loop"),
    E("rch03", 4, 2, 1, "torch", "exact", False,
      "tensor(0.9544)", "tensor(0.9544)",
      "torch.dot(inputs[0], query): the same number"),
    E("rch03", 5, 0, 1, "torch", "exact", False,
      "Attention weights: tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])",
      "Sum: tensor(1.0000)",
      "attn_scores_2 / attn_scores_2.sum(), and its sum"),
    E("rch03", 6, 0, 1, "torch", "exact", False,
      "Attention weights: tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])",
      "Sum: tensor(1.)",
      "softmax_naive(attn_scores_2), and its sum"),
    E("rch03", 7, 0, 1, "torch", "exact", False,
      "Attention weights: tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])",
      "Sum: tensor(1.)",
      "torch.softmax(attn_scores_2, dim=0), and its sum"),
    E("rch03", 8, 0, 1, "torch", "exact", False,
      "tensor([0.4419, 0.6515, 0.5683])", "tensor([0.4419, 0.6515, 0.5683])",
      "context_vec_2: the inputs weighted by attn_weights_2, summed in a loop"),
    E("rch03", 9, 0, 1, "torch", "exact", False,
      "tensor([[0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],",
      "        [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450]])",
      "attn_scores from a double loop of torch.dot"),
    E("rch03", 10, 0, 1, "torch", "exact", False,
      "tensor([[0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],",
      "        [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450]])",
      "attn_scores = inputs @ inputs.T"),
    E("rch03", 11, 0, 1, "torch", "exact", False,
      "tensor([[0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],",
      "        [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896]])",
      "attn_weights = torch.softmax(attn_scores, dim=-1)"),
    E("rch03", 12, 1, 1, "text", "exact", False,
      "Row 2 sum: 1.0", "Row 2 sum: 1.0",
      "Python's sum of row 2's six printed weights (a float64: 1.0)"),
    E("rch03", 12, 2, 1, "torch", "exact", False,
      "All row sums: tensor([1.0000, 1.0000, 1.0000, 1.0000, 1.0000, 1.0000])",
      "All row sums: tensor([1.0000, 1.0000, 1.0000, 1.0000, 1.0000, 1.0000])",
      "attn_weights.sum(dim=-1): every row sums to 1"),
    E("rch03", 13, 0, 1, "torch", "exact", False,
      "tensor([[0.4421, 0.5931, 0.5790],",
      "        [0.4177, 0.6503, 0.5645]])",
      "all_context_vecs = attn_weights @ inputs"),
    E("rch03", 14, 0, 1, "torch", "exact", False,
      "Previous 2nd context vector: tensor([0.4419, 0.6515, 0.5683])",
      "Previous 2nd context vector: tensor([0.4419, 0.6515, 0.5683])",
      "context_vec_2 again: row 2 of all_context_vecs"),
    E("rch03", 17, 0, 2, "torch", "exact", False,
      "tensor([0.4306, 1.4551])", "tensor([0.4306, 1.4551])",
      "query_2 = x_2 @ W_query (Parameter(rand) weights, seed 123)"),
    E("rch03", 18, 0, 2, "text", "exact", False,
      "keys.shape: torch.Size([6, 2])", "values.shape: torch.Size([6, 2])",
      "shapes of keys and values"),
    E("rch03", 19, 0, 2, "torch", "exact", False,
      "tensor(1.8524)", "tensor(1.8524)",
      "attn_score_22 = query_2.dot(keys_2)"),
    E("rch03", 20, 0, 2, "torch", "exact", False,
      "tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])",
      "tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])",
      "attn_scores_2 = query_2 @ keys.T"),
    E("rch03", 21, 0, 2, "torch", "exact", False,
      "tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])",
      "tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])",
      "attn_weights_2 = softmax(attn_scores_2 / sqrt(d_k))"),
    E("rch03", 22, 0, 2, "torch", "exact", False,
      "tensor([0.3061, 0.8210])", "tensor([0.3061, 0.8210])",
      "context_vec_2 = attn_weights_2 @ values"),
    E("rch03", 23, 0, 2, "torch", "exact", False,
      "tensor([[0.2996, 0.8053],", "        [0.2990, 0.8040]], grad_fn=<MmBackward0>)",
      "SelfAttention_v1(d_in, d_out)(inputs) (Parameter(rand) weights, seed 123)"),
    E("rch03", 24, 0, 2, "torch", "exact", False,
      "tensor([[-0.0739,  0.0713],", "        [-0.0754,  0.0693]], grad_fn=<MmBackward0>)",
      "SelfAttention_v2(d_in, d_out)(inputs) (nn.Linear weights, seed 789)"),
    E("rch03", 25, 0, 3, "torch", "exact", False,
      "tensor([[0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],",
      "       grad_fn=<SoftmaxBackward0>)",
      "attention weights of sa_v2's queries and keys"),
    E("rch03", 26, 0, 3, "torch", "exact", False,
      "tensor([[1., 0., 0., 0., 0., 0.],", "        [1., 1., 1., 1., 1., 1.]])",
      "mask_simple = tril(ones(6, 6))"),
    E("rch03", 27, 0, 3, "torch", "exact", False,
      "tensor([[0.1921, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<MulBackward0>)",
      "masked_simple = attn_weights * mask_simple"),
    E("rch03", 28, 0, 3, "torch", "exact", False,
      "tensor([[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<DivBackward0>)",
      "masked_simple_norm = masked_simple / row_sums"),
    E("rch03", 29, 0, 4, "torch", "exact", False,
      "tensor([[0.2899,   -inf,   -inf,   -inf,   -inf,   -inf],",
      "       grad_fn=<MaskedFillBackward0>)",
      "attn_scores.masked_fill(mask.bool(), -inf)"),
    E("rch03", 30, 0, 4, "torch", "exact", False,
      "tensor([[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<SoftmaxBackward0>)",
      "softmax(masked / sqrt(d_k)): rows sum to 1 again"),
    E("rch03", 31, 0, "A", "torch", "exact", False,
      "tensor([[2., 2., 0., 2., 2., 0.],", "        [0., 2., 2., 2., 2., 0.]])",
      "dropout(0.5) of ones(6, 6) after seed 123 (portable Bernoulli path)"),
    E("rch03", 32, 0, "A", "torch", "exact", False,
      "tensor([[2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],",
      "       grad_fn=<MulBackward0>)",
      "dropout(0.5) of the causal attention weights after seed 123 (portable path)"),
    E("rch03", 33, 0, 6, "text", "exact", False,
      "torch.Size([2, 6, 3])", "torch.Size([2, 6, 3])",
      "batch.shape: two copies of the inputs"),
    E("rch03", 34, 0, 6, "torch", "exact", False,
      "tensor([[[-0.4519,  0.2216],", "context_vecs.shape: torch.Size([2, 6, 2])",
      "CausalAttention context vectors of the batch (seed 123, dropout 0) and shape"),
    E("rch03", 35, 0, 7, "torch", "exact", False,
      "tensor([[[-0.4519,  0.2216,  0.4772,  0.1063],",
      "context_vecs.shape: torch.Size([2, 6, 4])",
      "MultiHeadAttentionWrapper, two heads (seed 123, dropout 0), and shape"),
    E("rch03", 36, 0, 7, "torch", "exact", False,
      "tensor([[[0.3190, 0.4858],", "context_vecs.shape: torch.Size([2, 6, 2])",
      "MultiHeadAttention, d_out 2, two heads (seed 123, dropout 0), and shape"),
    E("rch03", 37, 0, "X", "torch", "exact", False,
      "tensor([[[[1.3208, 1.1631, 1.2879],", "          [0.5903, 1.0620, 0.9912]]]])",
      "a @ a.transpose(2, 3) for a (1, 2, 3, 4) tensor: one product per head"),
    E("rch03", 38, 1, "X", "torch", "exact", False,
      "First head:", "        [1.2879, 1.8424, 2.0402]])",
      "the first head's product first_head @ first_head.T"),
    E("rch03", 38, 2, "X", "torch", "exact", False,
      "Second head:", "        [0.5903, 1.0620, 0.9912]])",
      "the second head's product second_head @ second_head.T"),
    # ---------------------------------------------------------------- Raschka, exercises
    E("rch03x", 1, 0, "X", "text", "unreproducible:torch_version_of_the_run", False,
      "torch version: 2.4.0", "torch version: 2.4.0",
      "the torch version the notebook ran with (2.4.0; this project mirrors 1.13)"),
    E("rch03x", 6, 0, "X", "torch", "exact", False,
      "tensor([[-0.5337, -0.1051],", "        [-0.5299, -0.1081]], grad_fn=<MmBackward0>)",
      "exercise 3.1: SelfAttention_v1 with SelfAttention_v2's weights, transposed"),
    E("rch03x", 7, 0, "X", "torch", "exact", False,
      "tensor([[-0.5337, -0.1051],", "        [-0.5299, -0.1081]], grad_fn=<MmBackward0>)",
      "exercise 3.1: SelfAttention_v2 (seed 123), the same output"),
    E("rch03x", "Exercise 3.2", 0, "X", "torch",
      "unreproducible:values_outside_every_causal_average_of_the_chapter_values", False,
      "tensor([[[-9.1476e-02,  3.4164e-02],", "context_vecs.shape: torch.Size([2, 6, 2])",
      "exercise 3.2: MultiHeadAttentionWrapper with d_out 1, two heads (seed 123)"),
    E("rch03x", "Exercise 3.3", 0, "X", "text", "exact", False,
      "2360064  # (2.36 M)", "2360064  # (2.36 M)",
      "exercise 3.3: parameters of a GPT-2-sized MultiHeadAttention (768, 12 heads, 1024)"),
    # ---------------------------------------------------------------- oracle runs (chapters 15-16)
    E("oracle15", 2, 0, 15, "text", "exact", False,
      "MultiHeadLatentAttention(", ")",
      "repr of MultiHeadLatentAttention(3, 4, 0.0, 2, latent_dim=2) (seed 123)"),
    E("oracle15", 3, 0, 15, "torch", "exact", False,
      "tensor([[[ 0.4039,  0.0445, -0.0764,  0.0309],",
      "         [ 0.4191,  0.1478,  0.0155, -0.0535]]], grad_fn=<ViewBackward0>)",
      "MLA context vectors of the batch (seed 123, latent_dim 2)"),
    E("oracle15", 4, 0, 15, "torch", "exact", False,
      "tensor([[[-0.4519,  0.2216],",
      "         [-0.4213, -0.1501]]], grad_fn=<UnsafeViewBackward0>)",
      "the latent cache cache_c_kv after the batch, [b, T, latent_dim]"),
    E("oracle15", 5, 0, 15, "text", "exact", False,
      "MultiHeadLatentAttention(", ")",
      "repr of MultiHeadLatentAttention(3, 4, 0.0, 2) with the default latent_dim 16"),
    E("oracle15", 6, 0, 15, "torch", "exact", False,
      "tensor([[[-0.4895,  0.0977, -0.0882,  0.0184],",
      "         [-0.4971,  0.0141,  0.0180,  0.0203]]], grad_fn=<ViewBackward0>)",
      "MLA context vectors with the default latent_dim (seed 123)"),
    E("oracle15", 7, 0, 15, "text", "exact", False,
      "==== Config ====", "Savings (MLA vs MHA): 75.19%",
      "memory_estimator_mla.py with his README's arguments (MHA, GQA, MLA totals)"),
    E("oracle16", 2, 0, 16, "text", "exact", False,
      "MultiHeadAttentionWithKVSharing(", ")",
      "repr of the consumer MultiHeadAttentionWithKVSharing(3, 4, 0.0, 2)"),
    E("oracle16", 3, 0, 16, "torch", "exact", False,
      "tensor([[[ 0.1184,  0.3120, -0.0847, -0.5774],",
      "         [-0.0132,  0.2990, -0.0689, -0.3490]]], grad_fn=<ViewBackward0>)",
      "the producer's output (seed 123)"),
    E("oracle16", 4, 0, 16, "torch", "exact", False,
      "tensor([[[[-0.4519,  0.2216],",
      "          [ 0.3660,  0.4382]]]], grad_fn=<TransposeBackward0>)",
      "the producer's keys handed on, [b, num_heads, T, head_dim]"),
    E("oracle16", 5, 0, 16, "torch", "exact", False,
      "tensor([[[ 0.0373, -0.0512,  0.3153, -0.1244],",
      "         [ 0.2163,  0.1470,  0.1651, -0.0859]]], grad_fn=<ViewBackward0>)",
      "the consumer's output on the producer's keys and values"),
    E("oracle16", 6, 0, 16, "text", "exact", False,
      "None", "None",
      "a consumer hands on no keys and values"),
    E("oracle16", 7, 0, 16, "text", "exact", False,
      "==== Config ====", "Savings vs MHA            : 94.64%",
      "memory_estimator_kv_sharing.py, Gemma 3n E2B's arguments"),
    E("oracle16", 8, 0, 16, "text", "exact", False,
      "==== Config ====", "Savings vs MHA            : 85.71%",
      "memory_estimator_kv_sharing.py, E4B's arguments"),
]

COLUMNS = ["id", "notebook", "cell", "chapter", "style", "precision", "check", "file", "what"]
HEADER_RE = re.compile(r"^In \[(\d+)\]:$")
TRUNCATED = " (truncated in the export)"


class Mismatch(Exception):
    pass


def fail(msg: str) -> None:
    raise Mismatch(msg)


def blank(line: str) -> bool:
    return line.strip() == ""


def boundary(line: str, fenced: bool) -> bool:
    """What may stand before and after an output: a blank line, or in a fenced section the
    fence itself."""
    return blank(line) or (fenced and line.strip() == "```")


def entry_id(e: E) -> str:
    if isinstance(e.cell, str):  # a fenced section: `Exercise 3.2` -> `Ex32`
        base = f"{e.nb}-Ex{re.sub(r'[^0-9]', '', e.cell)}"
    else:
        base = f"{e.nb}-In{e.cell:02d}"
    return base if e.part == 0 else f"{base}-{e.part}"


def precision(e: E) -> str:
    if e.style == "torch":
        return "2" if e.nb == "001" else "4"
    if e.style == "numpy":
        return "8"
    return "-"


def split_cells(lines: list[str], fenced=()) -> dict:
    """Cell number (or fenced section name) -> (index of the header line, index one past the
    cell's last line)."""
    heads = []
    for i, line in enumerate(lines):
        m = HEADER_RE.match(line)
        if m:
            heads.append((int(m.group(1)), i))
        elif line.startswith("## ") and line[3:].strip() in fenced:
            heads.append((line[3:].strip(), i))
    cells = {}
    for k, (n, i) in enumerate(heads):
        end = heads[k + 1][1] if k + 1 < len(heads) else len(lines)
        if n in cells:
            fail(f"cell In [{n}] appears twice")
        cells[n] = (i, end)
    return cells


def brackets_balanced(text: str) -> bool:
    depth = {"(": 0, "[": 0}
    pairs = {")": "(", "]": "["}
    for ch in text:
        if ch in depth:
            depth[ch] += 1
        elif ch in pairs:
            depth[pairs[ch]] -= 1
    return all(v == 0 for v in depth.values())


def extract(nb: str, lines: list[str], cells: dict, entries: list[E]) -> dict[str, str]:
    """Blocks of one notebook, keyed by entry id, checked against the table."""
    blocks = {}
    by_cell = collections.OrderedDict()
    for e in entries:
        by_cell.setdefault(e.cell, []).append(e)
    for cell, parts in by_cell.items():
        where = f"{NOTEBOOKS[nb]} {cell_name(cell)}"
        fenced = isinstance(cell, str)
        if cell not in cells:
            fail(f"{where}: no such cell header")
        head, end = cells[cell]
        expected_parts = [0] if len(parts) == 1 else list(range(1, len(parts) + 1))
        if [p.part for p in parts] != expected_parts:
            fail(f"{where}: table parts {[p.part for p in parts]}, expected {expected_parts}")
        # The first output: its first line must occur once in the cell, after a blank line.
        first = parts[0].first.rstrip()
        hits = [i for i in range(head + 1, end)
                if lines[i].rstrip() == first and boundary(lines[i - 1], fenced)]
        if len(hits) != 1:
            fail(f"{where}: first output line {first!r} found {len(hits)} times in the cell "
                 "after a blank line")
        start = hits[0]
        if not boundary(lines[start - 1], fenced):
            fail(f"{where}: the output does not follow a blank line (line {start})")
        if start - 1 <= head:
            fail(f"{where}: no code before the output")
        for k, e in enumerate(parts):
            if k > 0:
                # A later print(): only blank lines (an empty print()) may separate it.
                i = start
                while i < end and blank(lines[i]):
                    i += 1
                if i >= end or lines[i].rstrip() != e.first.rstrip():
                    fail(f"{where}: output {e.part} should start with {e.first!r} "
                         f"at line {i + 1}")
                start = i
            elif lines[start].rstrip() != e.first.rstrip():
                fail(f"{where}: internal error")
            last = None
            for i in range(start, end):
                if lines[i].rstrip() == e.last.rstrip():
                    last = i
                    break
            if last is None:
                fail(f"{where}: last output line {e.last!r} not found")
            text = "\n".join(lines[start:last + 1]).rstrip()
            if not text:
                fail(f"{where}: empty output")
            if brackets_balanced(text) == e.truncated:
                fail(f"{where}: brackets {'balanced' if e.truncated else 'unbalanced'} "
                     f"but table says truncated={e.truncated}")
            blocks[entry_id(e)] = text
            start = last + 1
        # After the last output of the cell: a blank line (then prose or the next cell) or EOF.
        if start < len(lines) and not boundary(lines[start], fenced):
            fail(f"{where}: line {start + 1} right after the output is not blank: "
                 f"{lines[start]!r}")
    return blocks


def check_no_output_cells(nb: str, lines: list[str], cells: dict) -> None:
    """Cells declared silent must look silent: no printed-value line at column 0 after code."""
    suspicious = re.compile(r"^(tensor\(|\(tensor|torch\.Size|True$|False$|array\(|\[\[|"
                            r"[A-Za-z]+Error:)")
    for n in NO_OUTPUT[nb]:
        if n not in cells:
            fail(f"{NOTEBOOKS[nb]}: declared silent cell In [{n}] not found")
        if isinstance(n, str):
            fail(f"{NOTEBOOKS[nb]}: a fenced section cannot be silent: {n}")
        head, end = cells[n]
        for i in range(head + 1, end):
            if suspicious.match(lines[i]):
                fail(f"{NOTEBOOKS[nb]} In [{n}] is declared silent but line {i + 1} "
                     f"looks printed: {lines[i]!r}")


def cell_name(cell) -> str:
    """`In [8]`, or the fenced section's name: `Exercise 3.2 (markdown)`."""
    return f"{cell} (markdown)" if isinstance(cell, str) else f"In [{cell}]"


def field(value: str, name: str, eid: str) -> str:
    if not value or "\t" in value or "\n" in value:
        fail(f"{eid}: bad {name} field {value!r}")
    return value


def check_kind(check: str) -> str:
    return check.split(":", 1)[0]


def write_readme(rows: list[dict]) -> str:
    kinds = ["exact", "ulp", "relation", "unreproducible"]
    count = collections.Counter((r["nb"], check_kind(r["check"])) for r in rows)
    out = []
    out.append("# data/book: the book\n\n")
    out.append(
        "Every output printed by the five source notebooks (`data/sources/seeds/`, text exports\n"
        "of Jupyter notebooks) and by Raschka's chapter 3 and its exercise solutions\n"
        "(`data/sources/raschka/`, rasbt/LLMs-from-scratch, Apache License 2.0, run with torch\n"
        "2.4.0), and by the oracle runs of Raschka's bonus modules that chapters 15-16 reprint\n"
        "(`data/sources/oracle/`, Debian's PyTorch 1.13.1), stored verbatim with its\n"
        "provenance (`data/sources/README.md`). The chapters\n"
        "reprint these blocks and the golden tests compare the chapters' output with them.\n\n"
        "**Generated file tree: do not edit by hand.** Everything here is written by\n"
        "`tools/extract_book.py` (Python 3, standard library only) from `data/sources/`\n"
        "plus the table inside the script. To regenerate, from the repository root:\n\n"
        "    python3 tools/extract_book.py\n\n"
        "The script deletes and rewrites `data/book/` completely. It locates each cell by its\n"
        "`In [n]:` header, takes the output after the code (declared by its first and last line\n"
        "in the script's table) and stops with an error if the notebooks no longer match the\n"
        "table (a cell without a table row, a first line not found after a blank line, a\n"
        "truncation flag that disagrees with the brackets, and so on).\n\n")
    out.append("## Contents\n\n"
               "- `manifest.tsv`: one line per printed output (below).\n"
               "- `<nnn>/<id>.txt`: the output of one entry, exactly as printed in notebook `nnn`,\n"
               "  including labels printed by the same `print` call and `grad_fn=<...>` text;\n"
               "  trailing whitespace at the end of the block is removed and the file ends in\n"
               "  exactly one newline (whitespace at the end of inner lines is kept, e.g.\n"
               "  `Simple Mask: `).\n"
               "- `README.md`: this file.\n\n")
    out.append(
        "## manifest.tsv\n\n"
        "UTF-8, one entry per line, fields separated by a single TAB, no empty fields (`-`\n"
        "when nothing applies), no tabs inside fields. Lines starting with `#` are comments\n"
        "(the first names the columns). Columns, in order:\n\n"
        "| column | meaning |\n|---|---|\n"
        "| `id` | `<notebook number>-In<2-digit cell>`, e.g. `002-In08`; a cell that printed "
        "several separate outputs (separate `print` calls) gets `-1`, `-2`, ... in order "
        "(`004-In64-2`). A displayed tuple, or one `print` of several values, is one output. "
        "Raschka's are `rch03-In..` (chapter 3) and `rch03x-In..` (exercise solutions); an "
        "output shown in a markdown fence instead of a cell is named after its section "
        "(`rch03x-Ex32`: exercise 3.2). The oracle runs' are `oracle15-In..` and `oracle16-In..`. |\n"
        "| `notebook` | the source's file name in `data/sources/seeds/`, "
        "`data/sources/raschka/` or `data/sources/oracle/` |\n"
        "| `cell` | the cell, e.g. `In [8]`, or `Exercise 3.2 (markdown)` |\n"
        "| `chapter` | the chapter that reprints it (integer, 1-16; `A` for appendix A; `X` for "
        "the exercises program) |\n"
        "| `style` | `torch` (a PyTorch tensor repr, alone, in a tuple, or in a labelled print), "
        "`numpy` (NumPy array printing: notebook 004's `.detach().numpy()`), `text` (anything "
        "else: `torch.Size(...)` alone, `True`, dicts, module reprs, errors, strings) |\n"
        "| `precision` | printed fraction digits: torch `4` (notebook 001: `2`, from "
        "`set_printoptions(precision=2)`), numpy `8`, text `-` |\n"
        "| `check` | how a chapter's output is compared with the block, see below |\n"
        "| `file` | the block's path relative to `data/book/`: `<nnn>/<id>.txt` |\n"
        "| `what` | what the block shows, in a few words; `(truncated in the export)` marks a "
        "block the export cut short |\n\n"
        "Checks:\n\n"
        "- `exact`: byte for byte (after stripping `grad_fn=<...>`). Seeded torch-style and "
        "text outputs of notebooks 002 (seeds 789/123) and 004 (123/789), and deterministic "
        "outputs of every notebook (shapes, `True`, masks, token ids, module reprs, the "
        "`RuntimeError` of 000 In [36]); every seeded or deterministic output of Raschka's "
        "notebooks (seeds 123 and 789; dropout on the portable Bernoulli path).\n"
        "- `ulp:4`: notebook 004's NumPy-style blocks: same skeleton, every number within 4 "
        "float32 ulp (or 1e-7 absolute near zero).\n"
        "- `relation:<name>`: unseeded values (notebooks 000, 001, 003), not reproducible; the "
        "block is checked through the named relation instead:\n"
        "  - `softmax_of_printed_logits`: 000 In [16] is the softmax of In [14];\n"
        "  - `causal_neg_inf_above_diagonal`: 000 In [14] has `-inf` exactly above the "
        "diagonal (and is the input of In [16]);\n"
        "  - `masked_pattern_from_attention_mask`: the `-inf` pattern of 000 In [24] is the "
        "tokenizer's attention mask (In [22] shows the first text's): `-inf` on the key "
        "positions where the mask is 0;\n"
        "  - `cached_equals_uncached`: 000 In [39] = In [40], In [44] = In [45];\n"
        "  - `rounding_level_difference`: 000 In [46] is uncached minus cached, zero up to "
        "float32 rounding;\n"
        "  - `tokens_in_vocab_range`: 001 In [5] token ids lie in [0, 100);\n"
        "  - `input_of_masking_chain`: 001 In [8], the scores the next three blocks are "
        "derived from;\n"
        "  - `tril_of_printed_scores`: 001 In [9] = tril(In [8]);\n"
        "  - `neg_inf_where_zero`: 001 In [10] = In [9] with zeros replaced by `-inf`;\n"
        "  - `softmax_of_printed_scores`: 001 In [11] = softmax(In [10]);\n"
        "  - `sdpa_equals_manual`: 001 In [14] and In [16] (`scaled_dot_product_attention`) "
        "equal the manual In [12]; In [15] and In [17] print `True` for that;\n"
        "  - `argmax_in_vocab_range`: 001 In [19] predictions lie in [0, 100), shapes exact;\n"
        "  - `cross_entropy_near_log_vocab`: 001 In [21], the loss of untrained logits is "
        "about ln 100.\n"
        "- `unreproducible:<why>`: printed by the environment, not by the computation (000 In "
        "[18], the tail of a tqdm warning on stderr when `transformers` is imported; the "
        "`torch version: 2.4.0` line of both Raschka notebooks), or not by the code shown: "
        "Raschka's exercise 3.2 solution (`rch03x-Ex32`) prints values no causal average of "
        "the chapter's values can take (row 1 of each head is token 1's value itself, yet "
        "later rows grow past the largest value any `Linear(3, 1)` of the chapter's init can "
        "give), so it was printed by other code or inputs; the exercises program shows what the "
        "code computes and checks the shape.\n\n"
        "Blocks the export cut short (`(truncated in the export)`) end mid-tensor; compare only "
        "what is there.\n\n")
    out.append("## Counts\n\n")
    out.append("| notebook | " + " | ".join(kinds) + " | total |\n")
    out.append("|---|" + "---|" * (len(kinds) + 1) + "\n")
    for nb, name in NOTEBOOKS.items():
        cs = [count[(nb, k)] for k in kinds]
        out.append(f"| `{name}` | " + " | ".join(str(c) for c in cs) + f" | {sum(cs)} |\n")
    tot = [sum(count[(nb, k)] for nb in NOTEBOOKS) for k in kinds]
    out.append("| **all** | " + " | ".join(str(c) for c in tot) + f" | {sum(tot)} |\n\n")
    per_ch = collections.Counter(r["chapter"] for r in rows)
    out.append("| chapter | entries |\n|---|---|\n")
    for ch in [*range(1, 11), "A", "X"]:
        out.append(f"| {ch} | {per_ch.get(ch, 0)} |\n")
    trunc = [r["id"] for r in rows if r["what"].endswith(TRUNCATED)]
    out.append("\nTruncated in the export: " + ", ".join(f"`{t}`" for t in trunc) + ".\n")
    return "".join(out)


def main() -> int:
    for nb, name in NOTEBOOKS.items():
        if not os.path.isfile(os.path.join(SOURCES, FOLDER[nb], name)):
            print(f"extract_book: no source {FOLDER[nb]}/{name} in {SOURCES}", file=sys.stderr)
            return 1
    ids = [entry_id(e) for e in TABLE]
    dup = [i for i, c in collections.Counter(ids).items() if c > 1]
    if dup:
        print(f"extract_book: duplicate ids in the table: {dup}", file=sys.stderr)
        return 1

    rows = []
    try:
        for nb, name in NOTEBOOKS.items():
            with open(os.path.join(SOURCES, FOLDER[nb], name), encoding="utf-8",
                      newline="") as f:
                raw = f.read()
            if "\r" in raw:
                fail(f"{name}: carriage returns in the export")
            lines = raw.split("\n")
            cells = split_cells(lines, FENCED.get(nb, ()))
            entries = [e for e in TABLE if e.nb == nb]
            declared = {e.cell for e in entries} | set(NO_OUTPUT[nb])
            if set(FENCED.get(nb, ())) - {e.cell for e in entries}:
                fail(f"{name}: fenced sections without a table row")
            if {e.cell for e in entries} & set(NO_OUTPUT[nb]):
                fail(f"{name}: cells both silent and printing")
            if declared != set(cells):
                fail(f"{name}: cells in the notebook {sorted(cells, key=str)} != declared "
                     f"{sorted(declared, key=str)}")
            check_no_output_cells(nb, lines, cells)
            blocks = extract(nb, lines, cells, entries)
            for e in sorted(entries, key=lambda e: (isinstance(e.cell, str), str(e.cell)
                                                    if isinstance(e.cell, str) else e.cell, e.part)):
                eid = entry_id(e)
                text = blocks[eid]
                if text not in raw:
                    fail(f"{eid}: block not found verbatim in {name}")
                what = e.what + (TRUNCATED if e.truncated else "")
                if e.style not in ("torch", "numpy", "text"):
                    fail(f"{eid}: bad style {e.style}")
                if not re.fullmatch(r"exact|ulp:\d+|relation:[a-z0-9_]+|unreproducible:[a-z0-9_]+",
                                    e.check):
                    fail(f"{eid}: bad check {e.check}")
                if e.truncated and not e.check.startswith("relation:"):
                    fail(f"{eid}: truncated block must be checked through a relation")
                rows.append(dict(
                    id=eid, nb=nb, notebook=name, cell=cell_name(e.cell), chapter=e.chapter,
                    style=e.style, precision=precision(e), check=e.check,
                    file=f"{nb}/{eid}.txt", what=what, text=text))
    except Mismatch as err:
        print(f"extract_book: the notebooks do not match the table: {err}", file=sys.stderr)
        return 1

    # Rewrite data/book/ completely.
    if os.path.isdir(BOOK):
        for entry in os.listdir(BOOK):
            p = os.path.join(BOOK, entry)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.remove(p)
    os.makedirs(BOOK, exist_ok=True)

    manifest = ["# " + "\t".join(COLUMNS) + "\n",
                "# Generated by tools/extract_book.py from data/sources; "
                "do not edit by hand (run python3 tools/extract_book.py).\n"]
    for r in rows:
        fields = [field(str(r[c]), c, r["id"]) for c in COLUMNS]
        manifest.append("\t".join(fields) + "\n")
        path = os.path.join(BOOK, r["file"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(r["text"] + "\n")
    with open(os.path.join(BOOK, "manifest.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(manifest))
    with open(os.path.join(BOOK, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write(write_readme(rows))

    print(f"extract_book: wrote {len(rows)} entries to {os.path.relpath(BOOK, ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
