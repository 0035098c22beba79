/// @file swa.hpp
/// @brief Sliding-window attention: Raschka's `MultiHeadAttentionWithSWA` (ch04/06_swa), its
/// window mask, and a KV cache kept in a pre-allocated ring buffer of `W` slots.
///
/// Source: rasbt/LLMs-from-scratch, ch04/06_swa/gpt_with_kv_swa.py (checked at commit
/// 28c65cdf, April 2026). Raschka's cache grows by `torch.cat` and is trimmed to the last `W`
/// tokens; here the same keys live in a ring buffer allocated once. The position checks are
/// those of PR #925 (ch04/03_kv-cache): no token beyond the context, and a chunk longer than
/// the window leaves no negative pointer (here it cannot: slots are `pos % W`).
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

/// The window mask of Raschka's `forward`: `[Tq, Tk]` bool, true (masked) where
/// `diff = q_pos - k_pos` is `< 0` or `>= window`, with `q_pos = q_start + i`,
/// `k_pos = k_start + j`. A key is visible when `0 <= q_pos - k_pos < window`.
/// `window >= Tk + q_start` gives the causal mask.
/// @throws std::invalid_argument when `window` is 0.
BoolTensor sliding_window_mask(std::size_t q_start, std::size_t Tq, std::size_t k_start,
                               std::size_t Tk, std::size_t window);

/// The arguments of Raschka's `MultiHeadAttentionWithSWA(d_in, d_out, dropout, num_heads,
/// qkv_bias=False, sliding_window_size=None)`, plus `context_length` (the most positions;
/// a GPT model's position-embedding size): `MultiHeadAttentionWithSWA({.d_in = 3, .d_out = 4,
/// .context_length = 6, .num_heads = 2, .sliding_window_size = 3})`.
struct MultiHeadAttentionWithSWAConfig {
    std::size_t d_in = 0;                 ///< input features per token
    std::size_t d_out = 0;                ///< output features (all heads together)
    std::size_t context_length = 0;       ///< the most positions a sequence may have
    double dropout = 0.0;                 ///< drop probability on the attention weights
    std::size_t num_heads = 0;            ///< heads; must divide `d_out`
    bool qkv_bias = false;                ///< biases in `W_query`, `W_key`, `W_value`
    std::size_t sliding_window_size = 0;  ///< W: each query sees itself and W - 1 earlier keys
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< dropout's Bernoulli path

    /// @throws std::invalid_argument naming the field and its value when a size is 0
    /// (`sliding_window_size` included: a window of 0 sees nothing), `d_out` is not divisible
    /// by `num_heads`, or `dropout` is NaN or outside [0, 1].
    void validate() const;
};

/// A sliding-window KV cache: keys and values `[b, H, W, hd]` float32, allocated once;
/// the token at position `p` lives in slot `p % W`. Holds at most the last `W` tokens, so its
/// memory is the same after 1 token as after a million.
struct RingKVCache {
    /// Allocates `[batch, num_heads, window, head_dim]` zeros for keys and values.
    /// @throws std::invalid_argument when a size is 0.
    RingKVCache(std::size_t batch, std::size_t num_heads, std::size_t window,
                std::size_t head_dim);

    /// Tokens held: `min(pos, W)`.
    std::size_t length() const { return pos < window ? pos : window; }
    /// Bytes allocated for keys and values: `2 * b * H * W * hd * sizeof(float)`.
    std::size_t bytes() const { return 2 * key.size() * sizeof(float); }
    /// The `n` most recent cached keys (`n <= length()`), oldest first: `[b, H, n, hd]`.
    Tensor recent_keys(std::size_t n) const;
    /// The `n` most recent cached values, oldest first: `[b, H, n, hd]`.
    Tensor recent_values(std::size_t n) const;
    /// Writes keys/values `[b, H, T, hd]` of positions `pos .. pos + T - 1` (only the last
    /// `W` of them are kept) and advances `pos` by `T`.
    /// @throws std::invalid_argument when the shapes do not fit the buffer.
    void append(const Tensor& keys, const Tensor& values);
    /// `reset_cache()`: position 0 (the buffer stays allocated).
    void reset() { pos = 0; }

    Tensor key;           ///< `[b, H, W, hd]`
    Tensor value;         ///< `[b, H, W, hd]`
    std::size_t window;   ///< W
    std::size_t pos = 0;  ///< tokens seen = the next token's position
};

/// Raschka's `MultiHeadAttentionWithSWA` (ch04/06_swa): `MultiHeadAttention` whose mask
/// hides the future and every key `W` or more positions back. Built in Raschka's order:
/// `W_query`, `W_key`, `W_value` (`Linear(d_in, d_out, qkv_bias)`), `out_proj`
/// (`Linear(d_out, d_out)`, with bias), then `Dropout(dropout)`.
class MultiHeadAttentionWithSWA {
public:
    /// Builds the layers from `gen`: `3 * d_in * d_out + d_out * d_out + d_out` 32-bit draws
    /// (plus `3 * d_out` with `qkv_bias`). Nothing is drawn when the config is invalid.
    /// @throws std::invalid_argument as `MultiHeadAttentionWithSWAConfig::validate`.
    explicit MultiHeadAttentionWithSWA(const MultiHeadAttentionWithSWAConfig& config,
                                       Generator& gen = default_generator());

    /// `forward(x)` (`use_cache=False`): `[b, T, d_in] -> [b, T, d_out]`, windowed.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]` or `T > context_length`.
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)`: `x [b, T, d_in]` at positions `cache.pos ..`; the queries
    /// attend to the `min(pos, W - 1)` most recent cached keys plus the chunk's own (chunked
    /// prefill: the chunk's first query keeps its whole window), then the chunk's keys enter
    /// the ring. Any `T` works, also `T > W`. Returns `[b, T, d_out]`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache does not fit
    /// (batch, heads, head_dim, window), or a token would lie beyond `context_length`
    /// (the cache is unchanged then).
    Tensor forward(const Tensor& x, RingKVCache& cache, Generator& gen = default_generator()) const;

    /// A cache for `batch` sequences: `[batch, H, W, hd]` keys and values.
    RingKVCache make_cache(std::size_t batch) const;

    /// `module.train(mode)`; `eval()` turns dropout off.
    void train(bool mode = true) { dropout.training = mode; }
    /// `module.eval()`: dropout off.
    void eval() { train(false); }

    std::size_t d_in() const { return W_query.in_features(); }   ///< input width
    std::size_t d_out() const { return W_query.out_features(); }  ///< output width

    std::size_t num_heads;            ///< H
    std::size_t head_dim;             ///< `d_out / H`
    std::size_t context_length;       ///< the most positions
    std::size_t sliding_window_size;  ///< W
    nn::Linear W_query;               ///< `Linear(d_in, d_out)`
    nn::Linear W_key;                 ///< `Linear(d_in, d_out)`
    nn::Linear W_value;               ///< `Linear(d_in, d_out)`
    nn::Linear out_proj;              ///< `Linear(d_out, d_out)`, bias
    nn::Dropout dropout;              ///< on the attention weights
};

/// `repr(module)` as PyTorch prints it (`MultiHeadAttentionWithSWA(\n  (W_query): ...`).
std::string repr(const MultiHeadAttentionWithSWA& module);

}  // namespace attn
