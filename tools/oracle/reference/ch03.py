"""Raschka's chapter 3 modules (*Build a Large Language Model (From Scratch)*; the ground truth
of chapters 6, 7, 11 and 19 to 21): `CausalAttention`, `MultiHeadAttentionWrapper` and
`MultiHeadAttention`, rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb at commit
28c65cdfbc3338e2e040016eea4b7fdf556e4d57, In [34], [35] and [36] (ch. 3.5.3, 3.6.1, 3.6.2).

Nothing of them is written here: on import, his_code.define_blocks takes the three classes from
the project's copy of his text, data/sources/raschka/raschka_ch03.txt, and runs them in this
module, with the one edit declared below in each forward: `queries = self.W_query(x)` comes
before `keys = self.W_key(x)`, as notebooks 002 In [16] and 004 In [52] write it (he projects
the keys first). The forward's values do not depend on that order, the input's gradient does:
autograd sums the three projections' contributions to `x.grad` in the reverse order of their
creation. In his order data/oracle/backward.json's `x_grad` moves by up to 8 ulp, and through
the embeddings' gradients the training tools/oracle/attention_learns.py records (its printed
losses from step 300 on). The recorded data, and the library that matches it bit for bit, were
made with queries first.
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import os

import torch  # noqa: F401  (his cells use torch and nn)
import torch.nn as nn  # noqa: F401
from his_code import RASCHKA, define_blocks

# Queries first (see the docstring): his two lines, swapped.
EDITS = [
    ("CausalAttention",
     "        keys = self.W_key(x)\n"
     "        queries = self.W_query(x)",
     "        queries = self.W_query(x)\n"
     "        keys = self.W_key(x)"),
    ("MultiHeadAttention",
     "        keys = self.W_key(x) # Shape: (b, num_tokens, d_out)\n"
     "        queries = self.W_query(x)",
     "        queries = self.W_query(x)\n"
     "        keys = self.W_key(x) # Shape: (b, num_tokens, d_out)"),
]

CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention = define_blocks(
    globals(), os.path.join(RASCHKA, "raschka_ch03.txt"),
    ["CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"], EDITS)
