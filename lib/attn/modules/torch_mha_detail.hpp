// Internal to lib/attn/modules: what torch_mha.cpp (construction, checks, forward, the
// cross-attention cache) and torch_mha_backward.cpp share about `MultiheadAttention`.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/modules/torch_mha.hpp"

namespace attn::detail {

/// One block of the in-projection, `[E, in]` row-major at `W` (a row block of the packed
/// `in_proj_weight` or one of `q/k/v_proj_weight`), and its bias `[E]` or null.
struct MhaBlock {
    const float* W = nullptr;  ///< `[E, in]`, row-major
    std::size_t in = 0;        ///< the input's width
    const float* b = nullptr;  ///< `[E]`, or null without bias
};

/// Checks the module's public fields: one layout of the in-projection (packed or separate),
/// the shapes of every weight and bias, `num_heads * head_dim == embed_dim`, `dropout` in
/// [0, 1], the backend. @throws std::invalid_argument naming `where` and the field.
void mha_check_parameters(const MultiheadAttention& m, const std::string& where);

/// Block `which` (0: q, 1: k, 2: v) of the in-projection (the module checked).
MhaBlock mha_block(const MultiheadAttention& m, int which);

/// `math.sqrt(head_dim)` as `q / math.sqrt(E)` divides a float32 tensor by it: the double
/// rounded to float32.
float mha_divisor(std::size_t head_dim);

/// `x [rows, in] @ W^T + b` into `y [rows, E]`: nn::Linear's bits (the sum, then the bias).
void mha_project(const float* x, std::size_t rows, const MhaBlock& block, std::size_t E, float* y);

/// `data`, or when it is null (the storage of an empty buffer) a placeholder the core may be
/// handed but never reads or writes (it refuses a null buffer even for an empty result).
float* mha_nonnull(float* data);

/// The core's options of a saved forward: its masks, scores multiplied by 1 (the queries were
/// scaled before), its dropout probability (nothing is drawn again).
SDPAOptions mha_saved_options(const MultiheadAttentionSaved& saved);

}  // namespace attn::detail
