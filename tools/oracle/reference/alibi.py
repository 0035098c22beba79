"""ALiBi (chapter 24): Press, Smith and Lewis, "Train Short, Test Long: Attention with Linear
Biases Enables Input Length Extrapolation" (ICLR 2022).

- `get_slopes(n)`: the head slopes as their code computes them (ofirpress/attention_with_linear_biases,
  fairseq/models/transformer.py, `get_slopes` inside `TransformerDecoder.__init__`; MIT License,
  (c) Ofir Press): for n a power of 2 the geometric sequence starting at 2^(-8/n) with that
  ratio; otherwise the slopes of the closest smaller power of 2 and every other slope of twice it.
- `MultiHeadAttentionALiBi`: this project's, not theirs: Raschka's chapter 3 `MultiHeadAttention`
  (reference/ch03.py) with ALiBi's bias added to the scaled scores before the softmax, the bias
  `-(slope_h * |i - j|)` kept in a buffer `alibi` [num_heads, context_length, context_length]
  (Press et al. bias causal attention by `-m (i - j)`; the absolute distance is the symmetric
  form MosaicML's MPT uses, equal on every key a causal query sees).
"""
import math

import torch

from .ch03 import MultiHeadAttention


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = (2**(-2**-(math.log2(n)-3)))
        ratio = start
        return [start*ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    else:
        closest_power_of_2 = 2**math.floor(math.log2(n))
        return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2*closest_power_of_2)[0::2][:n-closest_power_of_2]


def alibi_bias(slopes, num_queries, num_keys):
    """-(slopes[h] * |i - j|) for every head h, query i and key j: [H, num_queries, num_keys]."""
    distance = (torch.arange(num_queries)[:, None] - torch.arange(num_keys)[None, :]).abs()
    return -(slopes[:, None, None] * distance)


class MultiHeadAttentionALiBi(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.register_buffer("alibi", alibi_bias(torch.Tensor(get_slopes(num_heads)), context_length, context_length))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        # ALiBi: the bias added to the scaled scores, before the softmax
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5 + self.alibi[:, :num_tokens, :num_tokens], dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
