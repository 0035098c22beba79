"""The source notebooks' own modules (data/sources/seeds/).

- `MultiHeadAtt`: notebook 004 In [58], character for character as the notebook writes it
  (reference/__init__.py checks it on import): Raschka's weight-split multi-head attention
  with the out-projection `out` biased like the queries (`bias=qkv_bias`, False there).
- `GPT2Attention`: notebook 003's layer. The notebook imports it (`from gpt.model import
  GPT2Attention`, the pt-nlp-gpt repository, not part of this project), so it is written here
  from what the notebook prints of it and does with it: fused `c_attn`, a [1, 1, T, T] tril
  buffer named `bias`, `c_proj`, attention and residual dropout.
"""
import math

import torch


class MultiHeadAtt(torch.nn.Module):
  def __init__(self, d_in, d_out, dropout, conlen, num_heads, qkv_bias=False):
    super().__init__()
    self.d_out = d_out
    self.num_heads = num_heads
    self.head_dim = d_out//num_heads
    self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
    self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
    self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
    self.dropout = torch.nn.Dropout(dropout)
    self.out = torch.nn.Linear(d_out, d_out, bias=qkv_bias)
    self.register_buffer(
        'mask',
        torch.triu(torch.ones((conlen, conlen)), diagonal=1)
        )


  def forward(self, X):
    batch, num_tokes, d_in = X.shape
    queries = self.W_query(X)
    keys = self.W_key(X)
    values = self.W_value(X)

    keys=keys.view(batch, num_tokes, self.num_heads, self.head_dim)
    values=values.view(batch, num_tokes, self.num_heads, self.head_dim)
    queries=queries.view(batch, num_tokes, self.num_heads, self.head_dim)

    keys=keys.transpose(1, 2)
    values=values.transpose(1, 2)
    queries=queries.transpose(1, 2)

    attn_scores = queries @ keys.transpose(2,3)
    mask_attn_scores = attn_scores.masked_fill_(self.mask.bool()[:num_tokes, :num_tokes], value=-torch.inf)
    attn_weights = torch.nn.functional.softmax(
        input=mask_attn_scores/keys.shape[-1]**0.5,
        dim=-1
    )
    attn_weights=self.dropout(attn_weights)

    context_vec = (attn_weights @ values).transpose(1,2)
    context_vec = context_vec.contiguous().view(
        batch, num_tokes, self.d_out
    )
    context_vec = self.out(context_vec)
    return context_vec


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
