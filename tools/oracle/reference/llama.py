"""RoPE and the attention modules that use it (chapter 24): Raschka's ch05/07_gpt_to_llama,
rasbt/LLMs-from-scratch at commit 28c65cdfbc3338e2e040016eea4b7fdf556e4d57:

- `precompute_rope_params` (converting-llama2-to-llama3.ipynb, In [5]): his Llama 3 version
  with `freq_config`; with `freq_config=None` it is the Llama 2 notebook's function (In [8] of
  converting-gpt-to-llama2.ipynb) line for line, so one serves both;
- `compute_rope` (converting-gpt-to-llama2.ipynb, In [8]);
- `MultiHeadAttention` (converting-gpt-to-llama2.ipynb, In [10]): chapter 3's module without
  biases and dropout, with RoPE buffers `cos` and `sin`;
- `GroupedQueryAttention` (converting-llama2-to-llama3.ipynb, In [8]): `forward(x, mask, cos,
  sin)`, the tables passed in.

Nothing of them is written here: on import, his_code.define_blocks takes them from the project's
copies of the two notebooks' text exports (data/sources/raschka/raschka_llama2_to_llama3.txt and
raschka_gpt_to_llama2.txt) and runs them in this module, unedited. `rope_inv_freq` below is not
his: it returns the `inv_freq` his function computes and does not return, by running his first
lines.
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import inspect
import os

import torch
import torch.nn as nn  # noqa: F401  (his cells use nn)
from his_code import RASCHKA, define_blocks

precompute_rope_params, GroupedQueryAttention = define_blocks(
    globals(), os.path.join(RASCHKA, "raschka_llama2_to_llama3.txt"),
    ["precompute_rope_params", "GroupedQueryAttention"])
compute_rope, MultiHeadAttention = define_blocks(
    globals(), os.path.join(RASCHKA, "raschka_gpt_to_llama2.txt"), ["compute_rope", "MultiHeadAttention"])


def rope_inv_freq(head_dim, theta_base=10_000, freq_config=None):
    """The `inv_freq` of precompute_rope_params(head_dim, theta_base, 1, freq_config): its lines up
    to the frequency adjustments, run as written (`cos` and `sin` of position 0 are discarded)."""
    src = inspect.getsource(precompute_rope_params).split("    # Generate position indices")[0]
    namespace = {"torch": torch}
    exec(src.replace("def precompute_rope_params(", "def _inv_freq(") + "    return inv_freq\n", namespace)
    return namespace["_inv_freq"](head_dim, theta_base, 1, freq_config)
