/// @file kv_cache.hpp
/// @brief One KV cache for every attention module of the book: the keys and values of the
/// tokens a layer has seen, so that a new token computes its own query, key and value only
/// (notebook 000 In [30]; notebook 003 "Key-Value Caching").
///
/// The token axis is the second to last: `[B, S, E]` for notebook 000's single head,
/// `[B, num_kv_heads, S, head_dim]` for the multi-head and grouped layers (Raschka's
/// `cache_k`). Three configurations of the same cache:
/// - full (`window == 0`, `capacity == 0`): every token is kept; `key` and `value` hold exactly
///   the `pos` tokens seen, grown by `torch.cat` along the token axis (his
///   ch04/03_kv-cache/gpt_with_kv_cache.py): every append allocates and copies the whole cache;
/// - preallocated (`capacity = N`): every token is kept in `N` slots allocated (zeroed) at the
///   first `append`, the token at position `p` in slot `p`; `key` and `value` are
///   `[..., N, hd]`, of which the first `pos` slots hold tokens (his
///   gpt_with_kv_cache_optimized.py: `cache_k[:, :, ptr:ptr + T] = keys_new` into a
///   `max_seq_len` buffer): an append copies only its own tokens and allocates nothing;
/// - sliding window (`window = W`, chapter 14): a ring of `W` slots, allocated at the first
///   `append`; the token at position `p` lives in slot `p % W`, so the memory is the same
///   after `W` tokens as after a million.
/// What either costs per token of a model is `kv_memory.hpp`'s estimate.
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/tensor.hpp"

namespace attn {

/// The keys and values of the tokens seen so far (see the file comment).
class KVCache {
public:
    /// An empty full cache: `key` and `value` get their shape from the first `append`.
    KVCache() = default;

    /// Notebook 000's `KVCache(key=..., value=...)`: a full cache holding these tokens,
    /// `[B, S, E]` (or `[B, H, S, hd]`: any rank >= 2, tokens second to last); `pos = S`.
    /// @throws std::invalid_argument when `key` has rank < 2 or `value` differs from it in
    /// every dimension but the last.
    KVCache(Tensor key, Tensor value);

    /// An empty sliding-window cache of `window` slots.
    /// @throws std::invalid_argument when `window` is 0.
    static KVCache sliding_window(std::size_t window);

    /// An empty preallocated cache of `capacity` slots (his `max_seq_len`).
    /// @throws std::invalid_argument when `capacity` is 0.
    static KVCache preallocated(std::size_t capacity);

    /// Adds the keys and values `[..., T, *]` of the tokens at positions `pos .. pos + T - 1`
    /// (a ring keeps only the last `W` of them) and advances `pos` by `T`. The first append
    /// of an empty cache fixes every dimension but the tokens'.
    /// @throws std::invalid_argument when the shapes do not fit the cache (naming both), or
    /// the cache's public fields were changed into an inconsistent state (`validate`);
    /// std::length_error when the positions or the grown cache overflow, the tokens do not
    /// fit a preallocated cache's `capacity`, or its slots would exceed what can be allocated
    /// (`check_allocation`; nothing is changed then).
    void append(const Tensor& keys, const Tensor& values);

    /// The `n` most recent keys, oldest first: `[..., n, *]`.
    /// @throws std::invalid_argument when `n > length()` or nothing was appended yet.
    Tensor recent_keys(std::size_t n) const;
    /// The `n` most recent values, oldest first: `[..., n, *]`.
    /// @throws std::invalid_argument when `n > length()` or nothing was appended yet.
    Tensor recent_values(std::size_t n) const;

    /// Tokens held: `pos` for a full or preallocated cache, `min(pos, W)` for a ring.
    /// @throws std::invalid_argument as `validate` (the fields are public).
    std::size_t length() const;
    /// Bytes allocated for keys and values: `(key.size() + value.size()) * sizeof(float)`.
    /// @throws std::invalid_argument as `validate`.
    std::size_t bytes() const;
    /// `B`: the batch size (0 while empty).
    /// @throws std::invalid_argument as `validate` (the fields are public).
    std::size_t batch_size() const;
    /// `reset_cache()`: position 0, nothing held (a ring and a preallocated cache keep their
    /// slots allocated).
    void reset();

    /// Checks the invariants of the public fields: `key` and `value` of one shape but the
    /// last dimension, rank >= 2 (or both empty while nothing was appended), and for a full
    /// cache `pos` tokens on the token axis, for a ring `window` slots, for a preallocated cache
    /// `capacity` slots and `pos <= capacity`; a cache is not both a ring and preallocated. Each of `key` and
    /// `value` is checked against `pos` (or `window`) before they are compared, so that the
    /// one that was replaced is the one named.
    /// @throws std::invalid_argument naming `where`, the field, and what does not fit.
    void validate(const std::string& where = "KVCache") const;

    Tensor key;                ///< `[..., S, hd]`: `pos` tokens (full), `W` or `N` slots (ring, preallocated)
    Tensor value;              ///< `[..., S, dv]`
    std::size_t pos = 0;       ///< tokens seen = the next token's position
    std::size_t window = 0;    ///< 0: every token kept; W: a ring of W slots
    std::size_t capacity = 0;  ///< 0: grown by `torch.cat`; N: N slots preallocated
};

}  // namespace attn
