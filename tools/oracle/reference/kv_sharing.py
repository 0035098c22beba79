"""Cross-layer KV sharing (chapter 16): `MultiHeadAttentionWithKVSharing` of
rasbt/LLMs-from-scratch ch04/10_kv-sharing/gpt_with_kv_sharing.py at commit
df1fcf8ee4bc5dced6527c31d80f5bb11a7f11ff (the class is the same at 32dc9717).

Condensed from his text (comments, blank lines and `device=` arguments dropped); no edit.
Producers return their keys and values, consumers take them (`shared_kv`) and compute none.
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import torch
import torch.nn as nn


class MultiHeadAttentionWithKVSharing(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False, shared_kv=None):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        if shared_kv is None:
            keys_new = self.W_key(x)
            values_new = self.W_value(x)
            keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
            values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
            if use_cache:
                if self.cache_k is None:
                    self.cache_k, self.cache_v = keys_new, values_new
                else:
                    self.cache_k = torch.cat([self.cache_k, keys_new], dim=1)
                    self.cache_v = torch.cat([self.cache_v, values_new], dim=1)
                keys, values = self.cache_k, self.cache_v
            else:
                keys, values = keys_new, values_new
                if self.cache_k is not None or self.cache_v is not None:
                    self.reset_cache()
            new_shared_kv = (keys, values)
        else:
            keys, values = shared_kv
            new_shared_kv = None
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        num_tokens_Q = queries.shape[-2]
        num_tokens_K = keys.shape[-2]
        if use_cache:
            q_positions = torch.arange(self.ptr_current_pos, self.ptr_current_pos + num_tokens_Q,
                                       dtype=torch.long)
            self.ptr_current_pos += num_tokens_Q
        else:
            q_positions = torch.arange(num_tokens_Q, dtype=torch.long)
            self.ptr_current_pos = 0
        k_positions = torch.arange(num_tokens_K, dtype=torch.long)
        mask_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec, new_shared_kv

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.ptr_current_pos = 0
