// Internal to lib/attn/attention: per-thread buffers that the modules' forwards reuse between
// calls (they only grow), so that a forward on the fast path allocates only its result:
// projections and merged heads live here, not in tensors allocated (and page-faulted) anew at
// every call.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn::detail {

/// Slot `slot` (0..7) of the calling thread's scratch, at least `floats` long (never null,
/// also for 0 floats). Valid until the next call with the same slot on this thread.
float* scratch(std::size_t slot, std::size_t floats);

/// `layer(x)` for `x [B, T, in_features]` into scratch slot `slot`, seen as `num_heads` heads
/// of `head_dim` columns (`.view(B, T, H, hd).transpose(1, 2)`).
/// @throws std::invalid_argument as `nn::Linear::forward_into`, or when
/// `num_heads * head_dim` is not the layer's `out_features`.
HeadsView project_heads(std::size_t slot, const nn::Linear& layer, const Tensor& x,
                        std::size_t num_heads, std::size_t head_dim);

/// The queries, keys and values of one input `x [B, T, in_features]`: `W_query(x)`,
/// `W_key(x)`, `W_value(x)` into scratch slots 0, 1, 2, seen as `num_heads` query heads and
/// `num_kv_heads` key/value heads of `head_dim` columns, the bits of `project_heads` (and of
/// `nn::Linear`). On the reference BLAS the three products are one `fast::gemm_multi`: `x` is
/// read once for all three and one team of threads computes them (Raschka ch. 3.6.2's three
/// `nn.Linear` calls on the same `x`).
/// With `positions` under RoPE, the queries and keys are then rotated in place at positions
/// `0 .. T - 1` (Raschka's `compute_rope` on both, after the split into heads).
/// @throws std::invalid_argument as `project_heads` for each layer.
struct QKVHeads {
    HeadsView queries;  ///< `[B, num_heads, T, head_dim]`
    HeadsView keys;     ///< `[B, num_kv_heads, T, head_dim]`
    HeadsView values;   ///< `[B, num_kv_heads, T, head_dim]`
};
QKVHeads project_qkv(const nn::Linear& W_query, const nn::Linear& W_key,
                     const nn::Linear& W_value, const Tensor& x, std::size_t num_heads,
                     std::size_t num_kv_heads, std::size_t head_dim,
                     const ModulePositions* positions = nullptr);

/// The cached forward's projections with the one full `KVCache`: checks the cache
/// (`check_full_cache`: full, keys `[b, num_kv_heads, cache.pos, head_dim]`, the new positions
/// within `context_length`), then appends `W_key(x)` and `W_value(x)` as
/// `[b, num_kv_heads, T, head_dim]` heads (Raschka's `torch.cat` along dim 2) and returns the
/// queries `W_query(x)` as `[b, num_heads, T, head_dim]` heads (scratch slot 0). The keys and
/// values to attend to are then the cache's. Under RoPE (`positions`) the new keys and the
/// queries are rotated at their own positions `cache.pos ..` before the keys are cached, so the
/// cache holds rotated keys and no key is rotated twice. `x`: `[b, T, d_in]`, checked by the
/// module.
/// @throws std::invalid_argument as `check_full_cache` or `project_heads` (nothing changed).
HeadsView project_into_cache(const std::string& where, KVCache& cache, const nn::Linear& W_query,
                             const nn::Linear& W_key, const nn::Linear& W_value, const Tensor& x,
                             std::size_t num_heads, std::size_t num_kv_heads, std::size_t head_dim,
                             std::size_t context_length, const ModulePositions* positions = nullptr);

/// The tokens a full or preallocated cache holds in `t` (its `key` or `value`, `[B, H, S, hd]`)
/// as heads `[B, H, pos, hd]`: the first `pos` slots, viewed without a copy (his optimized
/// cache's `cache_k[:, :, :ptr]`).
/// @throws std::invalid_argument when `t` is not 4-D or holds fewer than `pos` tokens.
HeadsView held_heads(const KVCache& cache, const Tensor& t);

/// `out_proj(attend(q, k, v))`: the heads merged into scratch, then the output projection into
/// the one tensor the forward allocates, `[B, Tq, out_features]`. `out_proj` null: the merged
/// heads themselves (a module without output projection).
Tensor attend_project(const HeadsView& q, const HeadsView& k, const HeadsView& v,
                      const nn::Linear* out_proj, const SDPAOptions& options);

/// `attend_project` with `out_proj` into `y`, a tensor the caller keeps between calls: given the
/// shape `[B, Tq, out_features]` by `sized` (its memory reused when it holds that many floats).
/// @throws std::invalid_argument as `attend_project`, and when `out_proj` is null.
void attend_project_into(const HeadsView& q, const HeadsView& k, const HeadsView& v,
                         const nn::Linear* out_proj, const SDPAOptions& options, Tensor& y);

}  // namespace attn::detail
