/// @file base_self_attention.hpp
/// @brief Notebook 000's `BaseSelfAttention` with an optional attention mask and KV cache,
/// and token-by-token decoding helpers.
///
/// During generation every step adds one token. Its query must see the keys and values of all
/// earlier tokens, which do not change: keep them (the KV cache, 000 In [30]) and compute
/// query, key and value for the new token only (003 "Key-Value Caching"). The logits are then
/// `[B, Sq, Sk]` with `Sq` new queries and `Sk = S_past + Sq` keys, and the causal mask must be
/// the last `Sq` rows of the `[Sk, Sk]` lower triangle (000 In [37], `causal_mask` in
/// masks.hpp).
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// `BaseOutput` of 000 In [25]: what `BaseSelfAttention::forward` returns.
struct BaseOutput {
    Tensor attention_output;   ///< `[B, Sq, E]`, after `output_proj`
    Tensor attention_weights;  ///< `[B, Sq, Sk]`
    Tensor key;    ///< `[B, Sk, E]`: the cached keys followed by the new ones (the next cache)
    Tensor value;  ///< `[B, Sk, E]`
};

/// The arguments of `BaseSelfAttention(embed_dim)` (000 In [41]), plus what a fully masked
/// query row becomes: `BaseSelfAttention({.embed_dim = 16})`.
struct BaseSelfAttentionConfig {
    std::size_t embed_dim = 0;  ///< `E`: the width of tokens, queries, keys and values
    /// `nan` (default) is the notebook's `torch.softmax`; `zero` the masked softmax that left
    /// padding needs (chapter 9).
    FullyMaskedRows fully_masked_rows = FullyMaskedRows::nan;

    /// @throws std::invalid_argument naming the field when `embed_dim` is 0.
    void validate() const;
};

/// `BaseSelfAttention(embed_dim)` of 000 In [41] (In [26] without the cache): single-head causal
/// self-attention with four biased projections `Linear(E, E)`, an optional `attention_mask`
/// `[B, Sk]` and an optional `KVCache`. The steps are public so a chapter can run them one by
/// one as the notebook does.
class BaseSelfAttention {
public:
    /// Builds `query_proj`, `key_proj`, `value_proj`, `output_proj` in that order from `gen`
    /// (each weight then bias: 4 * (E * E + E) 32-bit draws, as PyTorch).
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit BaseSelfAttention(const BaseSelfAttentionConfig& config,
                               Generator& gen = default_generator());

    /// Query, key and value; the keys and values of the cache come first.
    struct QueryKeyValue {
        Tensor query;  ///< `[B, Sq, E]`
        Tensor key;    ///< `[B, S_past + Sq, E]`
        Tensor value;  ///< `[B, S_past + Sq, E]`
    };

    /// `construct_query_key_value(x, kv_cache)`: `x [B, Sq, E]`; with a cache, `key` and
    /// `value` are `torch.concat([kv_cache.key, key_proj(x)], dim=1)` (000 In [32]/[33]).
    /// @throws std::invalid_argument when `x` is not `[B, Sq, E]`, the cache's `key` is not
    /// 3-D or its `value` differs from it in shape (`KVCache::validate`), or the cache's batch
    /// size or width differs from `x`'s (naming both shapes); std::length_error when the
    /// concatenation cannot be allocated.
    QueryKeyValue construct_query_key_value(const Tensor& x,
                                            const KVCache* kv_cache = nullptr) const;

    /// `query @ key.transpose(1, 2) / sqrt(E)`: `[B, Sq, E]`, `[B, Sk, E]` -> `[B, Sq, Sk]`.
    /// One BLAS sgemm per batch element reads `key` as transposed (no `[B, E, Sk]` copy, as
    /// PyTorch's matmul of a transposed view), then each logit is divided by `float(sqrt(E))`.
    /// @throws std::invalid_argument when the shapes do not fit.
    Tensor calculate_unmasked_attention_logits(const Tensor& query, const Tensor& key) const;

    /// The fixed `apply_causal_mask` of 000 In [41]: `mask_value` where
    /// `causal_mask(Sq, Sk) == 0`. `[B, Sq, Sk] -> [B, Sq, Sk]`.
    /// @throws std::invalid_argument when the logits are not 3-D or `Sq > Sk`.
    Tensor apply_causal_mask(const Tensor& attention_logits,
                             float mask_value = -std::numeric_limits<float>::infinity()) const;

    /// The first `apply_causal_mask` of 000 In [26], kept to show its bug: Python's
    /// `B,S,S = attention_logits.shape` leaves `S = Sk`, so the mask is `tril(ones(B, Sk, Sk))`,
    /// applied in place with `masked_fill_`. Works when `Sq == Sk`; with a cache (`Sq < Sk`) the
    /// mask would grow the logits and it throws PyTorch's In [36] error.
    /// @throws std::invalid_argument `output with shape [B, Sq, Sk] doesn't match the broadcast
    /// shape [B, Sk, Sk]` when `Sq != Sk`; when the logits are not 3-D.
    Tensor& apply_causal_mask_square_(Tensor& attention_logits,
                                      float mask_value = -std::numeric_limits<float>::infinity()) const;

    /// `apply_attention_mask(attention_mask, logits)`: `attn::apply_attention_mask` (padding.hpp).
    /// @throws std::invalid_argument when the mask is not `[B, Sk]`.
    Tensor apply_attention_mask(const LongTensor& attention_mask,
                                const Tensor& masked_attention_logits) const;

    /// `torch.softmax(logits, dim=-1)` or `masked_softmax`, by `fully_masked_rows`.
    Tensor calculate_attention_weights(const Tensor& masked_attention_logits) const;

    /// `output_proj(attention_weights @ value)`: `[B, Sq, Sk]`, `[B, Sk, E]` -> `[B, Sq, E]`.
    /// @throws std::invalid_argument when the shapes do not fit.
    Tensor calculate_final_output(const Tensor& attention_weights, const Tensor& value) const;

    /// `forward(x, attention_mask, kv_cache)` of 000 In [41]: `x [B, Sq, E]`;
    /// `attention_mask [B, S_past + Sq]` int64 (1 = real token) if given; `kv_cache` with
    /// `[B, S_past, E]` keys and values if given. The returned `key`/`value` make the next cache.
    /// Runs the projections and the attention core's step backend (the output includes the
    /// weights), with the notebook's causal mask for `Sq` new queries among `S_past + Sq` keys
    /// (`query_start = S_past`), the padding mask and `fully_masked_rows`; equal bit for bit
    /// to running the methods above one by one.
    /// @throws std::invalid_argument when `x`, the mask or the cache do not fit (naming the
    /// expected and actual shapes).
    BaseOutput forward(const Tensor& x,
                       const std::optional<LongTensor>& attention_mask = std::nullopt,
                       const KVCache* kv_cache = nullptr) const;

    /// Same as `forward`.
    BaseOutput operator()(const Tensor& x,
                          const std::optional<LongTensor>& attention_mask = std::nullopt,
                          const KVCache* kv_cache = nullptr) const {
        return forward(x, attention_mask, kv_cache);
    }

    std::size_t embed_dim;    ///< `E`
    nn::Linear query_proj;    ///< `Linear(E, E)`, bias
    nn::Linear key_proj;      ///< `Linear(E, E)`, bias
    nn::Linear value_proj;    ///< `Linear(E, E)`, bias
    nn::Linear output_proj;   ///< `Linear(E, E)`, bias
    /// `nan` (default) is the notebook's `torch.softmax`; set `zero` for the masked softmax
    /// that left padding needs (chapter 9).
    FullyMaskedRows fully_masked_rows = FullyMaskedRows::nan;
};

// ---------------------------------------------------------------- decoding token by token

/// Runs `prompt [B, S0, E]` (S0 >= 1) to fill the cache, then feeds `tokens [B, N, E]` in
/// chunks of `chunk` tokens (the last chunk may be shorter), each with the cache of everything
/// before it: the outputs of generation with a KV cache. Returns `[B, N, E]`.
/// @throws std::invalid_argument when the shapes do not fit (`[B, *, E]` for both) or `chunk`
/// is 0 or `S0` is 0.
Tensor decode_with_cache(const BaseSelfAttention& attention, const Tensor& prompt,
                         const Tensor& tokens, std::size_t chunk = 1);

/// The same outputs without a cache: for each chunk, a full forward over
/// `concat([prompt, tokens[:, :end]])`, keeping the chunk's rows (000 In [43]'s `output_new`).
/// @throws std::invalid_argument as `decode_with_cache`.
Tensor decode_without_cache(const BaseSelfAttention& attention, const Tensor& prompt,
                            const Tensor& tokens, std::size_t chunk = 1);

}  // namespace attn
