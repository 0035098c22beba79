// Internal to lib/attn/attention: the training forward and the backward pass that
// CausalAttention and MultiHeadAttention share (project, attend, merge, out_proj), written
// once around the core's attend / attend_backward.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/saved.hpp"
#include "attn/nn/nn.hpp"

namespace attn::detail {

/// The core's options of a saved forward: the mask it read, `/ sqrt(head_dim)`, its dropout
/// probability (nothing is drawn again: the saved multipliers stand for the dropout), its
/// ALiBi slopes.
SDPAOptions saved_options(const AttentionSaved& saved);

/// The training forward: `W_query(x)`, `W_key(x)`, `W_value(x)` into `saved`, the core into
/// `saved.context` (keeping L and the dropout multipliers), then `out_proj` (or the context
/// itself when `out_proj` is null). Returns `saved.output` (or `saved.context`): the result in
/// `saved`'s memory, reused by the next forward with the same `saved`. `x` is `[b, T, d_in]`, already checked by the module;
/// `options` are the module's, `saved.mask` must already hold the mask they point into.
/// `positions` (null: none): under RoPE the queries and keys are rotated at positions `0 ..`
/// before the core; under ALiBi, `options` must carry its slopes, which `saved` copies.
const Tensor& train_forward(const nn::Linear& W_query, const nn::Linear& W_key, const nn::Linear& W_value,
                     const nn::Linear* out_proj, const Tensor& x, std::size_t num_heads,
                     std::size_t head_dim, double dropout_p, const SDPAOptions& options,
                     AttentionSaved& saved, const ModulePositions* positions = nullptr);

/// The backward pass of `train_forward`: accumulates every layer's `.grad`, returns `dL/dx`.
/// `grad_x_before`, when given, is what `x` received from its other uses before the module's
/// three shares arrive (`[b, T, d_in]`): dL/dx is then `((grad_x_before + dx_value) + dx_key)
/// + dx_query`, autograd's order of arrival (a residual connection's identity comes first);
/// with `order = key_query_value` (the forward projected the keys first) the key's and the
/// query's shares swap places.
/// Under RoPE (`saved.positions`) the gradients of the rotated queries and keys are rotated
/// back (`compute_rope_backward`) with the module's tables `positions` before the projections'
/// backward.
/// @throws std::invalid_argument naming `where` when `grad_output`, `saved` or `grad_x_before`
/// do not fit the layers, or the forward used RoPE and `positions` holds no tables that fit
/// (before any `.grad` changes).
Tensor train_backward(nn::Linear& W_query, nn::Linear& W_key, nn::Linear& W_value,
                      nn::Linear* out_proj, const AttentionSaved& saved, const Tensor& grad_output,
                      const std::string& where, const Tensor* grad_x_before = nullptr,
                      const ModulePositions* positions = nullptr,
                      ProjectionOrder order = ProjectionOrder::query_key_value);

/// `train_backward` writing `dL/dx` (`[b, T, d_in]`) into `grad_x`'s memory (`sized`): a
/// training step's in the last step's; `grad_output` is `[b, T, d_out]` (`out_proj`'s output
/// width when there is one). `grad_x` must not be `grad_output` or `*grad_x_before`. The same
/// bits as `train_backward`.
/// @throws std::invalid_argument as `train_backward` (`grad_x` unchanged then).
void train_backward_into(nn::Linear& W_query, nn::Linear& W_key, nn::Linear& W_value,
                         nn::Linear* out_proj, const AttentionSaved& saved, const Tensor& grad_output,
                         const std::string& where, const Tensor* grad_x_before,
                         const ModulePositions* positions, ProjectionOrder order, Tensor& grad_x);

}  // namespace attn::detail
