// Internal to lib/attn/attention: per-thread buffers that the modules' forwards reuse between
// calls (they only grow), so that a forward on the fast path allocates only its result:
// projections and merged heads live here, not in tensors allocated (and page-faulted) anew at
// every call.
#pragma once

#include <cstddef>

#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/nn.hpp"

namespace attn::detail {

/// Slot `slot` (0..7) of the calling thread's scratch, at least `floats` long. Valid until the
/// next call with the same slot on this thread.
float* scratch(std::size_t slot, std::size_t floats);

/// `layer(x)` for `x [B, T, in_features]` into scratch slot `slot`, seen as `num_heads` heads
/// of `head_dim` columns (`.view(B, T, H, hd).transpose(1, 2)`).
/// @throws std::invalid_argument as `nn::Linear::forward_into`, or when
/// `num_heads * head_dim` is not the layer's `out_features`.
HeadsView project_heads(std::size_t slot, const nn::Linear& layer, const Tensor& x,
                        std::size_t num_heads, std::size_t head_dim);

/// `out_proj(attend(q, k, v))`: the heads merged into scratch, then the output projection into
/// the one tensor the forward allocates, `[B, Tq, out_features]`. `out_proj` null: the merged
/// heads themselves (a module without output projection).
Tensor attend_project(const HeadsView& q, const HeadsView& k, const HeadsView& v,
                      const nn::Linear* out_proj, const SDPAOptions& options);

}  // namespace attn::detail
