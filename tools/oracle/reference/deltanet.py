"""Gated DeltaNet and gated attention (chapter 18): the two classes and `l2norm` of
rasbt/LLMs-from-scratch ch04/08_deltanet/README.md (last changed at
57430d2a13a25a868b306af6c8fdaca9d1387753, "Gated DeltaNet updates (#926)"; read at
28c65cdfbc3338e2e040016eea4b7fdf556e4d57), with the fix merged as pull request #1033 (the output gate is
not transposed: `gate` stays [b, T, H, hd], the layout of the context it multiplies; without
the fix the product raises a size mismatch unless T == H).

- `GatedMultiHeadAttention`: W_query, W_gate, W_key, W_value, out_proj with bias, dropout; the
  causal mask filled with finfo.min; context * sigmoid(gate) before out_proj.
- `GatedDeltaNet`: W_query, W_key, W_value, W_gate, W_beta, W_alpha, dt_bias = ones,
  A_log = log(uniform_(0, 16)), norm = RMSNorm(head_dim, eps=1e-6), out_proj with bias,
  dropout; the gated delta rule token by token; RMSNorm and SiLU gate; dropout; out_proj.
Condensed from his text (comments and blank lines dropped, a few statements joined). Edits for
torch 1.13, marked:
- `nn.RMSNorm` (torch >= 2.4) is replaced by `RMSNorm` below: a weight of ones and
  `x * rsqrt(mean(x ** 2, -1) + eps) * weight`, the arithmetic of torch's composite
  `rms_norm` (pow, mean = sum / n, add eps, rsqrt, mul, mul by the weight), printed as
  `nn.RMSNorm` prints itself;
- `GatedDeltaNet.forward` also keeps its final state `S` in `self.last_state` (one added line)
  so that the recurrent state can be compared.
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm(normalized_shape, eps) for torch 1.13 (edit: see the module docstring)."""

    def __init__(self, normalized_shape, eps=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,)
        self.eps = eps
        self.elementwise_affine = True
        self.weight = nn.Parameter(torch.ones(normalized_shape))

    def forward(self, x):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x.mul(r).mul(self.weight)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class GatedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_gate = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1),
                             persistent=False)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        gate = self.W_gate(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, torch.finfo(attn_scores.dtype).min)
        attn_weights = torch.softmax(attn_scores / (self.head_dim ** 0.5), dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2)
        context = context.reshape(b, num_tokens, self.d_out)
        context = context * torch.sigmoid(gate)
        return self.out_proj(context)


def l2norm(x, dim=-1, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)


class GatedDeltaNet(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_gate = nn.Linear(d_in, d_out, bias=False)
        self.W_beta = nn.Linear(d_in, d_out, bias=False)
        self.W_alpha = nn.Linear(d_in, num_heads, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(num_heads))
        A_init = torch.empty(num_heads).uniform_(0, 16)
        self.A_log = nn.Parameter(torch.log(A_init))
        self.norm = RMSNorm(self.head_dim, eps=1e-6)  # edit: his nn.RMSNorm (torch >= 2.4)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        beta = torch.sigmoid(self.W_beta(x))
        alpha_log = -self.A_log.exp().view(1, 1, -1) * F.softplus(self.W_alpha(x) + self.dt_bias)
        alpha = alpha_log.exp()
        gate = self.W_gate(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        beta = beta.view(b, num_tokens, self.num_heads, self.head_dim)
        gate = gate.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)
        beta = beta.transpose(1, 2)
        # PR #1033: no `gate = gate.transpose(1, 2)` here
        queries = l2norm(queries, dim=-1) / (self.head_dim ** 0.5)
        keys = l2norm(keys, dim=-1)
        S = x.new_zeros(b, self.num_heads, self.head_dim, self.head_dim)
        outs = []
        for t in range(num_tokens):
            k_t = keys[:, :, t]
            q_t = queries[:, :, t]
            v_t = values[:, :, t]
            b_t = beta[:, :, t]
            a_t = alpha[:, t].unsqueeze(-1).unsqueeze(-1)
            S = S * a_t
            kv_mem = (S * k_t.unsqueeze(-1)).sum(dim=-2)
            delta = (v_t - kv_mem) * b_t
            S = S + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
            y_t = (S * q_t.unsqueeze(-1)).sum(dim=-2)
            outs.append(y_t)
        self.last_state = S  # edit: keeps the state for the oracle
        context = torch.stack(outs, dim=2).transpose(1, 2).contiguous()
        context = context.view(b, num_tokens, self.num_heads, self.head_dim)
        context = self.norm(context)
        context = context * F.silu(gate)
        context = context.view(b, num_tokens, self.d_out)
        context = self.dropout(context)
        return self.out_proj(context)
