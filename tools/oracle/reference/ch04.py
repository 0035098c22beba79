"""Raschka's chapter 4 modules (*Build a Large Language Model (From Scratch)*; the ground truth of
chapters 22 and 23): rasbt/LLMs-from-scratch ch04/01_main-chapter-code/ch04.ipynb at commit
28c65cdfbc3338e2e040016eea4b7fdf556e4d57, In [3] (`DummyGPTModel`, `DummyTransformerBlock`,
`DummyLayerNorm`), In [10] (`LayerNorm`), In [13] (`GELU`), In [15] (`FeedForward`), In [18]
(`ExampleDeepNeuralNetwork`, `print_gradients`), In [21] (`TransformerBlock`), In [23]
(`GPTModel`) and In [29] (`generate_text_simple`).

Nothing of them is written here: on import, his_code.define_blocks takes them from the project's
copy of his text, data/sources/raschka/raschka_ch04.txt, and runs them in this module, unedited.
`TransformerBlock` takes his chapter 3 `MultiHeadAttention` (reference/ch03.py, queries first),
imported below as his In [21] imports it from `previous_chapters`.
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import os

import torch  # noqa: F401  (his cells use torch and nn)
import torch.nn as nn  # noqa: F401
from his_code import RASCHKA, define_blocks

from .ch03 import MultiHeadAttention  # noqa: F401  (his In [21]: from previous_chapters import MultiHeadAttention)

(DummyGPTModel, DummyTransformerBlock, DummyLayerNorm, LayerNorm, GELU, FeedForward, ExampleDeepNeuralNetwork,
 print_gradients, TransformerBlock, GPTModel, generate_text_simple) = define_blocks(
    globals(), os.path.join(RASCHKA, "raschka_ch04.txt"),
    ["DummyGPTModel", "DummyTransformerBlock", "DummyLayerNorm", "LayerNorm", "GELU", "FeedForward",
     "ExampleDeepNeuralNetwork", "print_gradients", "TransformerBlock", "GPTModel", "generate_text_simple"])
