/// @file gqa.hpp
/// @brief Grouped-query attention (GQA; multi-query attention when one key/value head serves
/// every query head), cached in the one `KVCache` with `num_kv_heads` heads. Its memory is
/// estimated by kv_memory.hpp.
///
/// Source: rasbt/LLMs-from-scratch, ch04/04_gqa/gpt_with_kv_gqa.py, class
/// `GroupedQueryAttention` (checked at commit 28c65cdf, April 2026).
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/modules/skeleton.hpp"
#include "attn/modules/multihead.hpp"

namespace attn {

/// The arguments of Raschka's `GroupedQueryAttention(d_in, d_out, dropout, num_heads,
/// num_kv_groups, dtype=None, qkv_bias=False)`, plus `context_length`, the most positions
/// `forward` and the cache accept (the GPT model's position-embedding size; Raschka's module
/// has no such bound): `GroupedQueryAttention({.d_in = 3, .d_out = 8, .context_length = 6,
/// .num_heads = 4, .num_kv_groups = 2})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `num_kv_groups`, `qkv_bias`, `backend`, and the position scheme `positions`, `rope_base`,
/// `rope_freq` (config.hpp); every other field keeps its default. With RoPE it is Raschka's
/// Llama 3 `GroupedQueryAttention` (converting-llama2-to-llama3.ipynb, cell 8, his `forward(x,
/// mask, cos, sin)` with the tables of `precompute_rope_params(head_dim, rope_base,
/// context_length, rope_freq)`): `{.d_in = 3, .d_out = 16, .context_length = 6, .num_heads =
/// 4, .num_kv_groups = 2, .positions = PositionScheme::rope, .rope_base = 500000, .rope_freq =
/// RopeFreqConfig::llama3_2()}`.
using GroupedQueryAttentionConfig = AttentionConfig;

/// Raschka's `GroupedQueryAttention` (ch04/04_gqa): `num_heads` query heads share
/// `num_kv_heads` key/value heads, each serving `group_size = num_heads / num_kv_heads`
/// consecutive query heads (`repeat_interleave`). `num_kv_groups == num_heads` is
/// `MultiHeadAttention` without the `out_proj` bias; `num_kv_groups == 1` is multi-query
/// attention.
///
/// Layers are created in Raschka's order, so a seed gives PyTorch's weights:
/// `W_key = Linear(d_in, num_kv_groups * head_dim, qkv_bias)`, `W_value` (same),
/// `W_query = Linear(d_in, d_out, qkv_bias)`, `out_proj = Linear(d_out, d_out, bias=False)`,
/// then `Dropout(dropout)`. The causal mask is built from positions (`q_pos < k_pos` is
/// masked), as Raschka's file does since "Fix bug in masking when kv cache is used.". Under RoPE the queries and keys are rotated
/// after the split into heads (before `repeat_interleave`), each at its own position: a cached
/// forward rotates the new keys at `cache.pos ..` before caching them. Under ALiBi the core
/// biases the scores (`SDPAOptions::alibi_slopes`).
class GroupedQueryAttention : public ProjectedAttention {
public:
    /// The submodules in PyTorch's registration order: `W_key`, `W_value`, `W_query`, `out_proj`, `dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_key", &W_key}, {"W_value", &W_value}, {"W_query", &W_query}, {"out_proj", &out_proj}, {"dropout", &dropout}};
    }

    /// Builds the layers from `gen`: `2 * d_in * G * hd + d_in * d_out + d_out * d_out`
    /// 32-bit draws (plus `2 * G * hd + d_out` with `qkv_bias`). Nothing is drawn when the
    /// config is invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit GroupedQueryAttention(const GroupedQueryAttentionConfig& config,
                                   Generator& gen = default_generator());

    /// `forward(x)` (`use_cache=False`): `[b, T, d_in] -> [b, T, d_out]`, float32: the
    /// projections, the attention core with `num_kv_heads` key/value heads (each serving
    /// `group_size` query heads, no `repeat_interleave` copy on the fast backend), `out_proj`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)`: `x [b, T, d_in]` are the tokens at positions
    /// `cache.pos .. cache.pos + T - 1`; their keys and values `[b, G, T, hd]` are appended
    /// to `cache` (a full `KVCache`) and the queries attend to everything cached. Returns
    /// `[b, T, d_out]`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache is a ring or
    /// holds another shape, or a token would lie beyond `context_length` (nothing is changed
    /// then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    std::size_t num_kv_heads;    ///< key/value heads G (Raschka's `num_kv_groups`)
    std::size_t group_size;      ///< `H / G` query heads per key/value head
    /// The position scheme and its state: RoPE's `cos`, `sin` `[context_length, head_dim]`, or
    /// ALiBi's `[num_heads]` slopes.
    ModulePositions positions;

private:
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The core's options: causal from positions, / sqrt(head_dim), dropout.
    SDPAOptions options(std::size_t query_start, Generator& gen) const;
};

/// The `MultiHeadAttention` that computes what `gqa` computes: `W_key`'s and `W_value`'s
/// rows of group `g` (rows `g*hd .. (g+1)*hd - 1`) repeated for each of the `group_size`
/// query heads it serves (`repeat_interleave` of the weights), `W_query` and `out_proj`
/// (no bias) as they are, the position scheme too. Exactly equal outputs with dropout 0 or in
/// evaluation mode.
MultiHeadAttention expand_kv_groups(const GroupedQueryAttention& gqa);

}  // namespace attn
