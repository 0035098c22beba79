"""DeepSeek sparse attention (chapter 17): `LightningIndexer` and `MultiHeadAttentionWithDSA` of
the contributor's pull request to rasbt/LLMs-from-scratch (#1014, head
51805ca26f8201ccb6f0fef906138be66c86b403, ch04/09_dsa/gpt_with_kv_dsa.py, open in April 2026).

Condensed from the pull request's text (comments, blank lines, type annotations and `device=`
arguments dropped, a few statements joined, an unused `old_len` dropped); no edit to the
arithmetic. One edit of ours, marked: the indexer's scores are its own method (`scores`, so that
they can be recorded) and `select` chooses the top-k. His code calls `index_scores.topk(k)`,
whose choice among equal scores (the exact zeros ReLU makes) is whatever std::nth_element leaves
in place, and depends on the row's length, so his cached decoding can pick other keys than his
full forward. `LightningIndexer.rule` says which selection runs: his (`"topk"`, the default) or
the rule this library states (`"stable"`: `torch.sort(scores, descending=True, stable=True)`,
equal scores earliest position first).
"""
# Copyright (c) Sebastian Raschka and the pull request's contributor under Apache License 2.0
# (attribution: data/sources/README.md).
import torch
import torch.nn as nn


def select(index_scores, k, rule):
    """The top-k positions of each row: his `topk`, or the stable rule (ours)."""
    if rule == "topk":
        return index_scores.topk(k, dim=-1).indices
    return torch.sort(index_scores, dim=-1, descending=True, stable=True).indices[..., :k]


class LightningIndexer(nn.Module):
    def __init__(self, d_model, index_n_heads, index_head_dim):
        super().__init__()
        self.index_n_heads = index_n_heads
        self.index_head_dim = index_head_dim
        self.W_q_index = nn.Linear(d_model, index_n_heads * index_head_dim, bias=False)
        self.W_k_index = nn.Linear(d_model, index_head_dim, bias=False)
        self.W_weights = nn.Linear(d_model, index_n_heads, bias=False)
        self.scale = index_head_dim ** -0.5
        self.rule = "topk"  # edit: which selection forward runs (ours)

    def scores(self, x, x_ctx, causal_mask=None):  # edit: the first part of his forward
        b, T, _ = x.shape
        q = self.W_q_index(x).view(b, T, self.index_n_heads, self.index_head_dim)
        k = self.W_k_index(x_ctx)
        raw = torch.einsum("bthd,bsd->bths", q, k) * self.scale
        raw = torch.relu(raw)
        w = self.W_weights(x)
        w = w.softmax(dim=-1)
        index_scores = torch.einsum("bth,bths->bts", w, raw)
        if causal_mask is not None:
            index_scores = index_scores + causal_mask
        return index_scores

    def forward(self, x, x_ctx, topk, causal_mask=None):
        index_scores = self.scores(x, x_ctx, causal_mask)
        k_val = min(topk, x_ctx.shape[1])
        return select(index_scores, k_val, self.rule)  # edit: his line is .topk(k_val, dim=-1).indices


class MultiHeadAttentionWithDSA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False,
                 index_n_heads=4, index_head_dim=64, topk=64):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.topk = topk
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.indexer = LightningIndexer(d_in, index_n_heads, index_head_dim)
        self.register_buffer("cache_k", None, persistent=False)
        self.register_buffer("cache_v", None, persistent=False)
        self.register_buffer("cache_x", None, persistent=False)
        self.ptr_current_pos = 0

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.cache_x = None
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys_new = self.W_key(x)
        values_new = self.W_value(x)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys_new = keys_new.view(b, num_tokens, self.num_heads, self.head_dim)
        values_new = values_new.view(b, num_tokens, self.num_heads, self.head_dim)
        if use_cache:
            if self.cache_k is None:
                keys, values, x_ctx = keys_new, values_new, x
            else:
                keys = torch.cat([self.cache_k, keys_new], dim=1)
                values = torch.cat([self.cache_v, values_new], dim=1)
                x_ctx = torch.cat([self.cache_x, x], dim=1)
            self.cache_k, self.cache_v, self.cache_x = keys, values, x_ctx
            q_start = self.ptr_current_pos
            k_start = 0
            self.ptr_current_pos += num_tokens
        else:
            keys, values, x_ctx = keys_new, values_new, x
            q_start = 0
            k_start = 0
        queries_t = queries.transpose(1, 2)
        keys_t = keys.transpose(1, 2)
        values_t = values.transpose(1, 2)
        attn_scores = queries_t @ keys_t.transpose(2, 3)
        num_tokens_Q = queries_t.shape[-2]
        num_tokens_K = keys_t.shape[-2]
        q_positions = torch.arange(q_start, q_start + num_tokens_Q, dtype=torch.long)
        k_positions = torch.arange(k_start, k_start + num_tokens_K, dtype=torch.long)
        causal_bool = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0)
        causal_float = torch.zeros(num_tokens_Q, num_tokens_K, dtype=attn_scores.dtype)
        causal_float.masked_fill_(causal_bool, float("-inf"))
        topk_indices = self.indexer(x, x_ctx, self.topk, causal_mask=causal_float)
        sparse_mask = torch.full((b, num_tokens_Q, num_tokens_K), float("-inf"), dtype=attn_scores.dtype)
        sparse_mask.scatter_(-1, topk_indices, 0.0)
        combined_mask = causal_float.unsqueeze(0) + sparse_mask
        attn_scores = attn_scores + combined_mask.unsqueeze(1)
        attn_weights = torch.softmax(attn_scores / self.head_dim ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values_t
        context_vec = context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec
