/// @file swa.hpp
/// @brief Sliding-window attention: Raschka's `MultiHeadAttentionWithSWA` (ch04/06_swa), cached
/// in the one `KVCache` configured as a ring of `W` slots (`KVCache::sliding_window`). The
/// window mask a reader prints is `sliding_window_mask` (masks.hpp); the module itself passes
/// the window to the attention core, whose kernels skip the keys outside it.
///
/// Source: rasbt/LLMs-from-scratch, ch04/06_swa/gpt_with_kv_swa.py (checked at commit
/// 28c65cdf, April 2026). Raschka's cache grows by `torch.cat` and is trimmed to the last `W`
/// tokens; here the same keys live in a ring buffer allocated once. The position checks are
/// those of "Optimized KV Cache (sliding window) bug fix" (ch04/03_kv-cache): no token beyond
/// the context, and a chunk longer than
/// the window leaves no negative pointer (here it cannot: slots are `pos % W`).
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/modules/skeleton.hpp"

namespace attn {

/// The arguments of Raschka's `MultiHeadAttentionWithSWA(d_in, d_out, dropout, num_heads,
/// qkv_bias=False, sliding_window_size=None)`, plus `context_length` (the most positions;
/// a GPT model's position-embedding size): `MultiHeadAttentionWithSWA({.d_in = 3, .d_out = 4,
/// .context_length = 6, .num_heads = 2, .sliding_window_size = 3})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `qkv_bias`, `sliding_window_size`, `backend` (config.hpp); every other field keeps its default.
using MultiHeadAttentionWithSWAConfig = AttentionConfig;

/// Raschka's `MultiHeadAttentionWithSWA` (ch04/06_swa): `MultiHeadAttention` whose mask
/// hides the future and every key `W` or more positions back. Built in Raschka's order:
/// `W_query`, `W_key`, `W_value` (`Linear(d_in, d_out, qkv_bias)`), `out_proj`
/// (`Linear(d_out, d_out)`, with bias), then `Dropout(dropout)`.
class MultiHeadAttentionWithSWA : public ProjectedAttention {
public:
    /// Builds the layers from `gen`: `3 * d_in * d_out + d_out * d_out + d_out` 32-bit draws
    /// (plus `3 * d_out` with `qkv_bias`). Nothing is drawn when the config is invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit MultiHeadAttentionWithSWA(const MultiHeadAttentionWithSWAConfig& config,
                                       Generator& gen = default_generator());

    /// `forward(x)` (`use_cache=False`): `[b, T, d_in] -> [b, T, d_out]`, windowed: the
    /// projections, the attention core (`is_causal` with `window`), `out_proj`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)`: `x [b, T, d_in]` at positions `cache.pos ..`; the queries
    /// attend to the `min(pos, W - 1)` most recent cached keys plus the chunk's own (chunked
    /// prefill: the chunk's first query keeps its whole window), then the chunk's keys enter
    /// the ring. Any `T` works, also `T > W`. Returns `[b, T, d_out]`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache does not fit
    /// (a full cache, or a ring of another window, batch, heads or head_dim), or a token would
    /// lie beyond `context_length` (the cache is unchanged then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    /// An empty ring of `sliding_window_size` slots; its `[batch, H, W, hd]` keys and values are
    /// allocated by the first `forward`.
    /// @throws std::invalid_argument when `sliding_window_size` (public) is 0.
    KVCache make_cache() const;

    std::size_t sliding_window_size;  ///< W

private:
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The core's options: causal within the window, positions, / sqrt(head_dim), dropout.
    SDPAOptions options(std::size_t query_start, std::size_t key_start, Generator& gen) const;
};

}  // namespace attn
