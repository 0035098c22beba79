/// @file gated_attention.hpp
/// @brief Gated attention (Qwen3-Next's full-attention layers): multi-head causal attention
/// whose merged heads are multiplied by `sigmoid(W_gate(x))` before the output projection.
///
/// Source: rasbt/LLMs-from-scratch, ch04/08_deltanet/README.md, class
/// `GatedMultiHeadAttention` (last changed at 57430d2a). His mask fills the hidden scores with
/// `finfo(float32).min` instead of -inf; both give the weights 0 exactly (`exp` of about
/// -2.4e38 is 0) for a causal row, which always sees its own token, so the core's causal mask
/// computes his bits.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/modules/skeleton.hpp"

namespace attn {

/// The arguments of his `GatedMultiHeadAttention(d_in, d_out, context_length, dropout,
/// num_heads, qkv_bias=False)`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `qkv_bias`, `backend` (config.hpp); every other field keeps its default.
using GatedMultiHeadAttentionConfig = AttentionConfig;

/// His `GatedMultiHeadAttention`: layers in his order `W_query`, `W_gate`, `W_key`, `W_value`
/// (`Linear(d_in, d_out, qkv_bias)`), `out_proj` (`Linear(d_out, d_out)`, with bias),
/// `Dropout(dropout)`. `out = out_proj(attention(x) * sigmoid(W_gate(x)))`, the attention
/// the core's (causal, scores divided by `sqrt(head_dim)`).
class GatedMultiHeadAttention : public ProjectedAttention {
public:
    /// The submodules in PyTorch's registration order: `W_query`, `W_gate`, `W_key`, `W_value`, `out_proj`, `dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_gate", &W_gate}, {"W_key", &W_key}, {"W_value", &W_value}, {"out_proj", &out_proj}, {"dropout", &dropout}};
    }

    /// Builds the layers from `gen`: `4 * d_in * d_out + d_out * d_out + d_out` draws (plus
    /// `4 * d_out` with `qkv_bias`). Nothing is drawn when the config is invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit GatedMultiHeadAttention(const GatedMultiHeadAttentionConfig& config,
                                     Generator& gen = default_generator());

    /// `forward(x)`: `[b, T, d_in] -> [b, T, d_out]`, float32.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// The forward with the one `KVCache` (full): `x [b, T, d_in]` are the tokens at positions
    /// `cache.pos ..`; their keys and values `[b, H, T, hd]` are appended. Returns
    /// `[b, T, d_out]`.
    /// @throws std::invalid_argument as `operator()`, or when the cache is a ring or holds
    /// another shape (nothing changed then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    nn::Linear W_gate{0, 0, false};  ///< `Linear(d_in, d_out, qkv_bias)`: the output gate

private:
    // Checks x and the public fields, W_gate too; returns x's shape.
    Shape check(const Tensor& x) const { return check_projections(x, num_heads, true, {{"W_gate", &W_gate}}); }
    // attention * sigmoid(gate), then out_proj.
    Tensor gated(const Tensor& x, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                 std::size_t start, Generator& gen) const;
};

}  // namespace attn
