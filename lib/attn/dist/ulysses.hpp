/// @file ulysses.hpp
/// @brief DeepSpeed-Ulysses (chapter 29): a sequence split across the ranks of an MPI job,
/// turned by one all-to-all into a split of the heads, attended by each rank over the whole
/// sequence for its heads, and turned back by another all-to-all. Forward and backward.
///
/// Source: S. A. Jacobs et al., "DeepSpeed Ulysses: System Optimizations for Enabling Training
/// of Extreme Long Sequence Transformer Models" (2023, arXiv 2309.14509), section 3. A rank's
/// attention is the attention core's (`attn::scaled_dot_product_attention_forward` and its
/// backward) on `H / P` heads, the kernels one process runs.
#pragma once

#include <cstddef>

#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"
#include "attn/dist/communicator.hpp"

namespace attn::dist {

/// Rank `r`'s `[B, H, c, E]` block of a contiguous sequence split (tokens `[r c, (r + 1) c)`)
/// turned into its heads `[B, H / P, c P, E]` (heads `[r H / P, (r + 1) H / P)`, every token):
/// one all-to-all, each rank sending `(P - 1) / P` of its block.
/// @throws std::invalid_argument when `x` is not 4-D or `P` does not divide its heads, naming
/// both; std::runtime_error when MPI fails.
Tensor sequence_to_heads(const Communicator& comm, const Tensor& x);

/// The inverse of `sequence_to_heads`: `[B, H / P, c P, E]` back to `[B, H, c, E]`.
/// @throws std::invalid_argument when `x` is not 4-D or `P` does not divide its tokens.
Tensor heads_to_sequence(const Communicator& comm, const Tensor& x);

/// What Ulysses' forward keeps for its backward, on one rank: its heads over the whole
/// sequence, as the core's forward saved them.
struct UlyssesForward {
    Tensor output;  ///< this rank's tokens, every head: `[B, H, c, Ev]`
    Tensor query;   ///< this rank's heads, every token: `[B, H / P, T, E]`
    Tensor key;     ///< `[B, H_kv / P, T, E]`
    Tensor value;   ///< `[B, H_kv / P, T, Ev]`
    SDPAForward heads;  ///< the core's forward of this rank's heads (its output, `[B, H / P, T, Ev]`)
};

/// DeepSpeed-Ulysses' attention on the communicator's `P` ranks: this rank's contiguous block
/// of tokens, `query [B, H, c, E]`, `key [B, H_kv, c, E]`, `value [B, H_kv, c, Ev]`; three
/// all-to-alls to the heads, `scaled_dot_product_attention_forward` with `options` on `H / P`
/// query heads over all `T = c P` tokens, one all-to-all back. Each head is computed as one
/// process computes it, so the result is one process's bit for bit. Bytes sent per rank: four
/// all-to-alls of `(P - 1) / P` of a block, the paper's `4 N h / P` elements per all-to-all.
/// @throws std::invalid_argument when `P` divides neither the query heads nor the key/value
/// heads (Ulysses splits the heads: "heads must be divisible by the ranks"), or the shapes do
/// not fit (naming expected and actual shapes); std::runtime_error when MPI fails.
UlyssesForward ulysses_attention_forward(const Communicator& comm, const Tensor& query,
                                         const Tensor& key, const Tensor& value,
                                         const SDPAOptions& options = {});

/// The backward's result on one rank, this rank's tokens: `grad_query [B, H, c, E]`,
/// `grad_key [B, H_kv, c, E]`, `grad_value [B, H_kv, c, Ev]`.
using UlyssesGradients = SDPAGradients;

/// Ulysses' backward: `grad_output [B, H, c, Ev]` to the heads (one all-to-all), the core's
/// backward of this rank's heads (`scaled_dot_product_attention_backward`, one process's bits),
/// and the three gradients back to the tokens (three all-to-alls).
/// @throws std::invalid_argument as `ulysses_attention_forward`, or when `grad_output` does not
/// have the forward output's shape.
UlyssesGradients ulysses_attention_backward(const Communicator& comm, const Tensor& grad_output,
                                            const UlyssesForward& forward,
                                            const SDPAOptions& options = {});

}  // namespace attn::dist
