/// @file gqa.hpp
/// @brief Grouped-query attention (GQA; multi-query attention when one key/value head serves
/// every query head), its KV cache of `num_kv_groups` heads, and the KV-cache memory
/// estimator of Raschka's `memory_estimator_gqa.py` / `memory_estimator_swa.py`.
///
/// Source: rasbt/LLMs-from-scratch, ch04/04_gqa/gpt_with_kv_gqa.py, class
/// `GroupedQueryAttention` (checked at commit 28c65cdf, April 2026).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "attn/core/generator.hpp"
#include "attn/attention/multihead.hpp"
#include "attn/nn/nn.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

/// `x.repeat_interleave(repeats, dim)`: each slice along `dim` repeated `repeats` times in
/// place, `[K1, K2] -> [K1, K1, K2, K2]`. float32, any rank; `dim` may be negative.
/// @throws std::invalid_argument when `repeats` is 0 or `dim` is out of range.
Tensor repeat_interleave(const Tensor& x, std::size_t repeats, long dim);

/// `x.repeat(...)` along one dimension: the whole tensor tiled `repeats` times along `dim`,
/// `[K1, K2] -> [K1, K2, K1, K2]` (what GQA must not use). float32, any rank.
/// @throws std::invalid_argument when `repeats` is 0 or `dim` is out of range.
Tensor repeat_along(const Tensor& x, std::size_t repeats, long dim);

/// The arguments of Raschka's `GroupedQueryAttention(d_in, d_out, dropout, num_heads,
/// num_kv_groups, dtype=None, qkv_bias=False)`, plus `context_length`, the most positions
/// `forward` and the cache accept (the GPT model's position-embedding size; Raschka's module
/// has no such bound): `GroupedQueryAttention({.d_in = 3, .d_out = 8, .context_length = 6,
/// .num_heads = 4, .num_kv_groups = 2})`.
struct GroupedQueryAttentionConfig {
    std::size_t d_in = 0;            ///< input features per token
    std::size_t d_out = 0;           ///< output features (all query heads together)
    std::size_t context_length = 0;  ///< the most positions a sequence may have
    double dropout = 0.0;            ///< drop probability on the attention weights, in [0, 1]
    std::size_t num_heads = 0;       ///< query heads; must divide `d_out`
    std::size_t num_kv_groups = 0;   ///< key/value heads; must divide `num_heads`
    bool qkv_bias = false;           ///< biases in `W_key`, `W_value`, `W_query`
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< dropout's Bernoulli path

    /// @throws std::invalid_argument naming the field and its value when a size is 0,
    /// `d_out` is not divisible by `num_heads`, `num_heads` is not divisible by
    /// `num_kv_groups`, or `dropout` is NaN or outside [0, 1].
    void validate() const;
};

/// The keys and values a `GroupedQueryAttention` has seen: `[b, num_kv_groups, T, head_dim]`
/// float32 each (Raschka's `cache_k`, `cache_v`, grown by `torch.cat` along dim 2), and the
/// position of the next token (`ptr_current_pos`). Empty (`pos == 0`) at first.
struct GroupedKVCache {
    Tensor key;           ///< `[b, G, T, hd]` (unset while `pos == 0`)
    Tensor value;         ///< `[b, G, T, hd]`
    std::size_t pos = 0;  ///< tokens cached so far = the next token's position

    /// Tokens held: `pos`.
    std::size_t length() const { return pos; }
    /// Bytes held by keys and values: `2 * b * G * T * hd * sizeof(float)`.
    std::size_t bytes() const { return pos == 0 ? 0 : 2 * key.size() * sizeof(float); }
    /// `reset_cache()`.
    void reset() { *this = GroupedKVCache{}; }
};

/// Raschka's `GroupedQueryAttention` (ch04/04_gqa): `num_heads` query heads share
/// `num_kv_groups` key/value heads, each serving `group_size = num_heads / num_kv_groups`
/// consecutive query heads (`repeat_interleave`). `num_kv_groups == num_heads` is
/// `MultiHeadAttention` without the `out_proj` bias; `num_kv_groups == 1` is multi-query
/// attention.
///
/// Layers are created in Raschka's order, so a seed gives PyTorch's weights:
/// `W_key = Linear(d_in, num_kv_groups * head_dim, qkv_bias)`, `W_value` (same),
/// `W_query = Linear(d_in, d_out, qkv_bias)`, `out_proj = Linear(d_out, d_out, bias=False)`,
/// then `Dropout(dropout)`. The causal mask is built from positions (`q_pos < k_pos` is
/// masked), as Raschka's file does since PR #697.
class GroupedQueryAttention {
public:
    /// Builds the layers from `gen`: `2 * d_in * G * hd + d_in * d_out + d_out * d_out`
    /// 32-bit draws (plus `2 * G * hd + d_out` with `qkv_bias`). Nothing is drawn when the
    /// config is invalid.
    /// @throws std::invalid_argument as `GroupedQueryAttentionConfig::validate`.
    explicit GroupedQueryAttention(const GroupedQueryAttentionConfig& config,
                                   Generator& gen = default_generator());

    /// `forward(x)` (`use_cache=False`): `[b, T, d_in] -> [b, T, d_out]`, float32.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]` or `T > context_length`.
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)`: `x [b, T, d_in]` are the tokens at positions
    /// `cache.pos .. cache.pos + T - 1`; their keys and values `[b, G, T, hd]` are appended
    /// to `cache` and the queries attend to everything cached. Returns `[b, T, d_out]`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache holds another
    /// batch size, or a token would lie beyond `context_length` (nothing is changed then).
    Tensor forward(const Tensor& x, GroupedKVCache& cache,
                   Generator& gen = default_generator()) const;

    /// `module.train(mode)`: dropout is active in training mode (the default).
    void train(bool mode = true) { dropout.training = mode; }
    /// `module.eval()`: dropout off.
    void eval() { train(false); }

    std::size_t d_in() const { return W_query.in_features(); }   ///< input width
    std::size_t d_out() const { return W_query.out_features(); }  ///< output width

    std::size_t num_heads;       ///< query heads H
    std::size_t num_kv_groups;   ///< key/value heads G
    std::size_t group_size;      ///< `H / G` query heads per key/value head
    std::size_t head_dim;        ///< `d_out / H`
    std::size_t context_length;  ///< the most positions
    nn::Linear W_key;            ///< `Linear(d_in, G * hd)`
    nn::Linear W_value;          ///< `Linear(d_in, G * hd)`
    nn::Linear W_query;          ///< `Linear(d_in, d_out)`
    nn::Linear out_proj;         ///< `Linear(d_out, d_out, bias=False)`
    nn::Dropout dropout;         ///< on the attention weights

private:
    // The shared forward: x [b, T, d_in] at positions start.., attending to the cached
    // [b, G, S_past, hd] keys/values (if given) and its own; returns [b, T, d_out] and, if
    // asked, the new keys/values [b, G, T, hd] for the caller's cache.
    Tensor attend(const Tensor& x, const Tensor* past_k, const Tensor* past_v,
                  std::size_t start, Tensor* new_k, Tensor* new_v, Generator& gen) const;
};

/// `repr(module)` as PyTorch prints it: `GroupedQueryAttention(\n  (W_key): Linear(...)\n
/// ...  (dropout): Dropout(p=0.0, inplace=False)\n)`, layers in registration order.
std::string repr(const GroupedQueryAttention& module);

/// The `MultiHeadAttention` that computes what `gqa` computes: `W_key`'s and `W_value`'s
/// rows of group `g` (rows `g*hd .. (g+1)*hd - 1`) repeated for each of the `group_size`
/// query heads it serves (`repeat_interleave` of the weights), `W_query` and `out_proj`
/// (no bias) as they are. Exactly equal outputs with dropout 0 or in evaluation mode.
MultiHeadAttention expand_kv_groups(const GroupedQueryAttention& gqa);

// ---------------------------------------------------------------- memory estimator

/// `DTYPE_BYTES` of Raschka's estimators: fp32 4, bf16 2, fp16 2, fp8 1, int8 1.
/// @throws std::invalid_argument for another name.
std::size_t dtype_bytes(const std::string& dtype);

/// `calc_kv_bytes_per_layer` (memory_estimator_swa.py): keys and values (2) of `tokens`
/// positions: `batch * tokens * head_dim * n_kv_heads * 2 * bytes_per_elem`.
std::size_t kv_bytes_per_layer(std::size_t batch, std::size_t tokens, std::size_t head_dim,
                               std::size_t n_kv_heads, std::size_t bytes_per_elem);

/// `distribute_layers(n_layers, a, b)`: with an `a:b` SWA:full ratio, the numbers of
/// sliding-window and full layers (`{swa, full}`); 32 layers at 5:1 give 27 and 5.
/// @throws std::invalid_argument when `a + b == 0`.
std::pair<std::size_t, std::size_t> distribute_layers(std::size_t n_layers, std::size_t a,
                                                      std::size_t b);

/// A model's KV-cache footprint, the arguments of `estimate_totals` in
/// memory_estimator_swa.py, with `n_kv_heads` given directly (Raschka's `--n_kv_groups`
/// there is the group size: `n_kv_heads = n_heads / n_kv_groups`).
struct KVMemoryConfig {
    std::size_t batch = 1;                ///< sequences
    std::size_t context_length = 0;       ///< tokens per sequence
    std::size_t emb_dim = 0;              ///< model width
    std::size_t n_heads = 0;              ///< query heads (`head_dim = ceil(emb_dim / n_heads)`)
    std::size_t n_kv_heads = 0;           ///< key/value heads per layer
    std::size_t n_layers = 0;             ///< transformer blocks
    std::size_t bytes_per_elem = 2;       ///< 2 for bf16
    std::size_t sliding_window_size = 0;  ///< W of the SWA layers (0: no SWA layers)
    std::size_t swa_a = 0;                ///< SWA layers per block (ratio a:b)
    std::size_t swa_b = 1;                ///< full layers per block

    /// @throws std::invalid_argument naming the field when a size is 0, `n_kv_heads` does
    /// not divide `n_heads`, or the ratio is 0:0.
    void validate() const;
};

/// Total KV-cache bytes over all layers: SWA layers hold `min(context_length, W)` tokens,
/// full layers `context_length`.
/// @throws std::invalid_argument as `KVMemoryConfig::validate`.
std::size_t kv_cache_total_bytes(const KVMemoryConfig& config);

}  // namespace attn
