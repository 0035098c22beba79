/// @file kv_sharing.hpp
/// @brief Keys and values shared across layers (cross-layer attention; Gemma 4's shared KV
/// cache): Raschka's `MultiHeadAttentionWithKVSharing` (ch04/10_kv-sharing). Producer layers
/// compute and cache their keys and values; consumer layers compute only their queries and
/// attend to the latest producer's cache, so only producers hold a cache. Both roles use the
/// one `KVCache` (`[b, H, S, hd]`): a producer appends to its own, a consumer reads its
/// producer's. What it saves is kv_memory.hpp's `num_kv_producing_layers`.
///
/// Source: rasbt/LLMs-from-scratch, ch04/10_kv-sharing/gpt_with_kv_sharing.py (read at
/// commit df1fcf8e, April 2026); Brandon et al., "Reducing Transformer Key-Value Cache Size
/// with Cross-Layer Attention" (arXiv:2405.12981).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/modules/skeleton.hpp"

namespace attn {

/// The arguments of Raschka's `MultiHeadAttentionWithKVSharing(d_in, d_out, dropout,
/// num_heads, qkv_bias=False)`, plus `context_length`, the most positions `forward` and the
/// cache accept (his module has no such bound): `MultiHeadAttentionWithKVSharing({.d_in = 3,
/// .d_out = 4, .context_length = 6, .num_heads = 2})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `qkv_bias`, `backend` (config.hpp); every other field keeps its default.
using MultiHeadAttentionWithKVSharingConfig = AttentionConfig;

/// What Raschka's `forward(x, shared_kv=...)` returns, `(context_vec, new_shared_kv)`: a
/// producer hands its keys and values on to the consumers after it, a consumer hands on none
/// (his `None`).
struct KVSharingOutput {
    Tensor context_vec;                    ///< `[b, T, d_out]`
    std::optional<KVCache> new_shared_kv;  ///< a producer's keys and values `[b, H, T, hd]`; none from a consumer
};

/// Raschka's `MultiHeadAttentionWithKVSharing` (ch04/10_kv-sharing): multi-head attention whose
/// forward either produces keys and values (`shared_kv=None`) or consumes a producer's
/// (`shared_kv=(keys, values)`). Every layer creates `W_key` and `W_value`, as his does (a
/// consumer draws them and never uses them, which keeps a seed's weights PyTorch's).
///
/// Layers in his `__init__` order: `W_query`, `W_key`, `W_value` (`Linear(d_in, d_out,
/// qkv_bias)`), `out_proj` (`Linear(d_out, d_out)`, with bias), then `Dropout(dropout)`. The
/// causal mask comes from positions (`q_pos < k_pos` is hidden), the scores are divided by
/// `sqrt(head_dim)`.
class MultiHeadAttentionWithKVSharing : public ProjectedAttention {
public:
    /// Builds the layers from `gen`: `3 * d_in * d_out + d_out * d_out + d_out` 32-bit draws
    /// (plus `3 * d_out` with `qkv_bias`). Nothing is drawn when the config is invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit MultiHeadAttentionWithKVSharing(const MultiHeadAttentionWithKVSharingConfig& config,
                                             Generator& gen = default_generator());

    /// A producer, `forward(x)` (`use_cache=False`, `shared_kv=None`): `[b, T, d_in] ->
    /// [b, T, d_out]`, as `MultiHeadAttention`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// A producer with a cache (`use_cache=True`, `shared_kv=None`): `x [b, T, d_in]` are the
    /// tokens at positions `cache.pos .. cache.pos + T - 1`; their keys and values
    /// `[b, H, T, hd]` are appended to `cache`, which is then what the consumers read (his
    /// `new_shared_kv`). Returns `[b, T, d_out]`. With a fresh cache this is `operator()`, and
    /// the cache holds the chunk's keys and values: his `shared_kv` without a cache.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache is a ring or
    /// holds another shape, or a token would lie beyond `context_length` (nothing changed then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    /// A consumer (`shared_kv=(keys, values)`): `x [b, T, d_in]` are the last `T` tokens of
    /// those `shared_kv` holds (positions `shared_kv.pos - T ..`, as the producer just ran
    /// them); its queries attend to the producer's keys and values; `W_key` and `W_value` are
    /// not used and nothing is cached. Returns `[b, T, d_out]`. (His consumer counts its own
    /// position; both agree when it sees every chunk its producer saw, as his GPTModel runs it.)
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `shared_kv` is a ring,
    /// holds fewer than `T` tokens or another shape than `[b, H, S, hd]`, or a public field no
    /// longer fits.
    Tensor forward_shared(const Tensor& x, const KVCache& shared_kv,
                          Generator& gen = default_generator()) const;

    /// His `forward(x, shared_kv=shared_kv)` (`use_cache=False`) with both results: without
    /// `shared_kv` (`nullptr`, his `None`) the layer produces, `forward` on a fresh cache, and
    /// returns that cache as `new_shared_kv`; with it the layer consumes (`forward_shared`) and
    /// returns no keys or values. `x [b, T, d_in]` -> `context_vec [b, T, d_out]`.
    /// @throws std::invalid_argument as `forward` (producer) or `forward_shared` (consumer).
    KVSharingOutput forward_with_kv(const Tensor& x, const KVCache* shared_kv = nullptr,
                                    Generator& gen = default_generator()) const;

};

/// The loop of his `GPTModel.forward` over the attention layers alone (without his norms,
/// feed-forward blocks and shortcuts, so every layer maps `d_out` to `d_out`): layer `i <
/// n_kv_producing_layers` produces, appending to `caches[i]`; every later layer consumes the
/// last producer's cache. `x [b, T, d_in]` -> `[b, T, d_out]`. `caches` holds one cache per
/// producer (filled with empty caches when empty): only producers hold keys and values. Fresh
/// caches at every call give his `use_cache=False`.
/// @throws std::invalid_argument when `n_kv_producing_layers` is not in `1 ..
/// layers.size()`, `caches` holds another number of caches, or a layer throws.
Tensor forward_kv_sharing(const std::vector<MultiHeadAttentionWithKVSharing>& layers,
                          std::size_t n_kv_producing_layers, const Tensor& x,
                          std::vector<KVCache>& caches, Generator& gen = default_generator());

}  // namespace attn
