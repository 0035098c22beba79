"""The source notebooks' own modules (data/sources/seeds/).

- `MultiHeadAtt`: notebook 004 In [58], Raschka's weight-split multi-head attention with the
  out-projection `out` biased like the queries (`bias=qkv_bias`, False there); not written here:
  his_code.define_blocks takes it from the project's copy of the notebook's text export
  (data/sources/seeds/004_d8a07657e05181d5.txt) on import and runs it in this module, unedited.
- `GPT2Attention`: notebook 003's layer. The notebook imports it (`from gpt.model import
  GPT2Attention`, the pt-nlp-gpt repository, not part of this project), so it is written here
  from what the notebook prints of it and does with it: fused `c_attn`, a [1, 1, T, T] tril
  buffer named `bias`, `c_proj`, attention and residual dropout.
"""
import math
import os

import torch
from his_code import ROOT, define_blocks

(MultiHeadAtt,) = define_blocks(globals(), os.path.join(ROOT, "data", "sources", "seeds", "004_d8a07657e05181d5.txt"),
                                ["MultiHeadAtt"])


class GPT2Attention(torch.nn.Module):
    """Notebook 003's layer: fused c_attn, a [1, 1, T, T] tril buffer named bias, c_proj."""

    def __init__(self, n_embd, n_head, block_size, dropout=0.2, bias=False):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = torch.nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = torch.nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = torch.nn.Dropout(dropout)
        self.resid_dropout = torch.nn.Dropout(dropout)
        self.num_heads = n_head
        self.head_dim = n_embd // n_head
        tri = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", tri)

    def forward(self, x):
        B, T, S = x.size()
        q, k, v = self.c_attn(x).split(S, dim=2)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = torch.nn.functional.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, S)
        return self.resid_dropout(self.c_proj(y))
