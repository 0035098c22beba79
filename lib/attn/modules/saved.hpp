/// @file saved.hpp
/// @brief What a module's training forward keeps for its backward pass (`AttentionSaved`),
/// shared by `CausalAttention`, `MultiHeadAttention` and the modules built from them.
#pragma once

#include <cstddef>

#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/config.hpp"

namespace attn {

/// What an attention module's training forward keeps for its backward pass: PyTorch's saved
/// tensors of the autograd graph, written out. Filled by `forward(x, saved)`, read by
/// `backward(saved, grad_output)` of `CausalAttention` and `MultiHeadAttention`; reusing one
/// object across steps reuses its storage. Shapes for `x: [b, T, d_in]`.
struct AttentionSaved {
    Tensor x;        ///< the input `[b, T, d_in]` (a copy)
    Tensor queries;  ///< `W_query(x)` (rotated under RoPE): `[b, T, d_out]`
    Tensor keys;     ///< `W_key(x)` (rotated under RoPE): `[b, T, d_out]`
    Tensor values;   ///< `W_value(x)`: `[b, T, d_out]`
    Tensor context;  ///< the attention's output, heads merged: `[b, T, d_out]`
    Tensor output;   ///< `out_proj(context)`: `[b, T, out_features]`, the forward's result (kept between steps)
    AttendSaved attention;  ///< each query row's log-sum-exp and the dropout multipliers drawn
    BufferMask mask;        ///< the mask the forward read from the module's buffer
    std::size_t num_heads = 0;  ///< the forward's heads
    std::size_t head_dim = 0;   ///< the forward's head width
    double dropout_p = 0.0;     ///< the forward's dropout probability (0 in evaluation mode)
    /// The forward's position scheme: under RoPE `queries` and `keys` hold the rotated
    /// projections (what the core attended to), and the backward rotates their gradients back.
    PositionScheme positions = PositionScheme::none;
    Tensor alibi_slopes;  ///< under ALiBi, the slopes the forward used (a copy); empty otherwise
};

}  // namespace attn
