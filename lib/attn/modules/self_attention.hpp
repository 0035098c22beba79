/// @file self_attention.hpp
/// @brief The first trainable self-attention of the book, in its two forms: weights as
/// `nn.Parameter(torch.rand(d_in, d_out))` matrices (`SelfAttention_v1`) and as `nn.Linear`
/// layers (`SelfAttention_v2`). Single sequence `[T, d_in]`, no mask: the lesson before the
/// causal mask (Raschka ch. 3.4). Each `forward` projects and calls the attention core
/// (sdpa.hpp) without a mask.
#pragma once

#include <cstddef>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// `SelfAttention_v1` of the book: three `nn.Parameter(torch.rand(d_in, d_out))` matrices,
/// drawn in the order `W_query`, `W_key`, `W_value`, used as `x @ W`.
/// Source: Raschka ch. 3; notebook 004 In [16] builds the same three matrices by hand.
class SelfAttention_v1 {
public:
    /// Draws the three `[d_in, d_out]` matrices from `gen` (3 * d_in * d_out 32-bit draws).
    /// @throws std::length_error (nothing drawn) when `[d_in, d_out]` cannot be allocated.
    SelfAttention_v1(std::size_t d_in, std::size_t d_out, Generator& gen = default_generator());

    /// `x: [T, d_in] -> context_vec: [T, d_out]`:
    /// `softmax((x W_query)(x W_key)^T / sqrt(d_out)) (x W_value)`.
    /// @throws std::invalid_argument when `x` is not `[T, d_in]`, or the (public) matrices are
    /// not all `[d_in, d_out]`.
    Tensor operator()(const Tensor& x) const;

    Tensor W_query;  ///< `[d_in, d_out]`
    Tensor W_key;    ///< `[d_in, d_out]`
    Tensor W_value;  ///< `[d_in, d_out]`
};

/// `SelfAttention_v2` of notebook 002 In [1] (`SelfAttention` in 004 In [17]): three
/// `nn.Linear(d_in, d_out, bias=qkv_bias)` layers built in the order query, key, value.
class SelfAttention_v2 {
public:
    /// Builds the three layers from `gen`.
    SelfAttention_v2(std::size_t d_in, std::size_t d_out, bool qkv_bias = false,
                     Generator& gen = default_generator());

    /// `x: [T, d_in] -> context_vec: [T, d_out]`:
    /// `attn_weights = softmax(queries @ keys.T / sqrt(d_out))`, `attn_weights @ values`.
    /// @throws std::invalid_argument when `x` is not `[T, d_in]`.
    Tensor operator()(const Tensor& x) const;

    nn::Linear W_query;  ///< `Linear(d_in, d_out)`
    nn::Linear W_key;    ///< `Linear(d_in, d_out)`
    nn::Linear W_value;  ///< `Linear(d_in, d_out)`
};

}  // namespace attn
