"""Raschka's `MultiHeadAttentionCombinedQKV` (chapter 11's fused projection):
rasbt/LLMs-from-scratch ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb at
commit 28c65cdfbc3338e2e040016eea4b7fdf556e4d57, retyped and condensed (his comments and blank
lines dropped, a few statements joined): the notebook is not among the project's copies of his
texts (data/sources/raschka/), so it cannot be loaded from there. Two edits, marked `# edit:`
(tools/oracle/efficient.py runs it with d_in = 3, d_out = 2 and dropout 0).
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import torch
import torch.nn as nn


class MultiHeadAttentionCombinedQKV(nn.Module):
    def __init__(self, d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out is indivisible by num_heads"
        self.num_heads = num_heads
        self.context_length = context_length
        self.head_dim = d_out // num_heads
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        batch_size, num_tokens, embed_dim = x.shape
        qkv = self.qkv(x).view(batch_size, num_tokens, 3, self.num_heads, self.head_dim)
        queries, keys, values = qkv.permute(2, 0, 3, 1, 4)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        # edit: his `attn_weights = self.dropout(attn_weights)` is left out (dropout 0 here)
        context_vec = (attn_weights @ values).transpose(1, 2)
        # edit: his view ends in embed_dim (x's d_in), which fails unless d_in == d_out
        context_vec = context_vec.contiguous().view(batch_size, num_tokens, self.proj.in_features)
        return self.proj(context_vec)
