/// @file mla.hpp
/// @brief Multi-head latent attention (MLA, DeepSeek-V2/V3): keys and values rebuilt from one
/// small latent per token, so that a KV cache holds only the latent. Raschka's
/// `MultiHeadLatentAttention` (ch04/05_mla), and its inference form with the up-projections
/// absorbed into the query and output projections (`absorb`).
///
/// The latent cache is the one `KVCache` configured as a latent cache: `key` holds the latents
/// `[b, S, latent_dim]` (token axis second to last, as every cache of the book), `value` is
/// `[b, S, 0]`: nothing besides the latent is stored, and `bytes()` counts the latent alone.
/// What it costs per token of a model is kv_memory.hpp's `mla_bytes_total`.
///
/// Source: rasbt/LLMs-from-scratch, ch04/05_mla/gpt_with_kv_mla.py (checked at commit
/// 28c65cdf, April 2026), itself after huggingface.co/bird-of-paradise/deepseek-mla; DeepSeek-AI,
/// "DeepSeek-V2" (arXiv:2405.04434), section 2.1, for the absorption. Raschka's module keeps
/// no RoPE part (DeepSeek's decoupled rotary keys), and neither does this one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/modules/skeleton.hpp"

namespace attn {

struct AbsorbedLatentAttention;

/// The arguments of Raschka's `MultiHeadLatentAttention(d_in, d_out, dropout, num_heads,
/// qkv_bias=False, latent_dim=None)`, plus `context_length`, the most positions `forward` and
/// the cache accept (the GPT model's position-embedding size; his module has no such bound):
/// `MultiHeadLatentAttention({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2,
/// .latent_dim = 2})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `qkv_bias`, `latent_dim`, `backend` (config.hpp); every other field keeps its default.
using MultiHeadLatentAttentionConfig = AttentionConfig;

/// `latent_dim` as his `__init__` resolves it: `config.latent_dim` when set, or
/// `max(16, d_out // 8)` (his `None`).
std::size_t resolved_latent_dim(const AttentionConfig& config);

/// Raschka's `MultiHeadLatentAttention` (ch04/05_mla): each token is projected down to a
/// latent `c = W_DKV x` of `latent_dim` numbers; keys `W_UK c` and values `W_UV c` are rebuilt
/// from it, split into `num_heads` heads of `head_dim = d_out / num_heads`, and attended to
/// causally (scores divided by `sqrt(head_dim)`), then `out_proj`.
///
/// Layers are created in his `__init__` order, so a seed gives PyTorch's weights:
/// `W_query = Linear(d_in, d_out, qkv_bias)`, `W_DKV = Linear(d_in, latent_dim, qkv_bias)`,
/// `W_UK = Linear(latent_dim, d_out, qkv_bias)`, `W_UV` (same), `out_proj = Linear(d_out,
/// d_out)` (with bias), then `Dropout(dropout)`. The causal mask comes from positions
/// (`q_pos < k_pos` is hidden).
class MultiHeadLatentAttention : public AttentionSkeleton {
public:
    /// The submodules in PyTorch's registration order: `W_query`, `W_DKV`, `W_UK`, `W_UV`, `out_proj`, `dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_DKV", &W_DKV}, {"W_UK", &W_UK}, {"W_UV", &W_UV}, {"out_proj", &out_proj}, {"dropout", &dropout}};
    }

    /// Builds the layers from `gen`: `d_in * d_out + d_in * L + 2 * L * d_out + d_out * d_out +
    /// d_out` 32-bit draws for `L = latent_dim` (plus `2 * d_out + L` with `qkv_bias`). Nothing
    /// is drawn when the config is invalid.
    /// @throws std::invalid_argument, std::length_error as
    /// `MultiHeadLatentAttention`'s checks of `AttentionConfig`.
    explicit MultiHeadLatentAttention(const MultiHeadLatentAttentionConfig& config,
                                      Generator& gen = default_generator());

    /// `forward(x)` (`use_cache=False`): `[b, T, d_in] -> [b, T, d_out]`, float32: the query
    /// projection, the latent `[b, T, L]` and its up-projections, the attention core, `out_proj`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)`: `x [b, T, d_in]` are the tokens at positions
    /// `cache.pos .. cache.pos + T - 1`; their latents `[b, T, L]` are appended to `cache` (a
    /// latent cache, `make_cache()`), and keys and values for every cached token are rebuilt
    /// from the latents (as his module does at every step). Returns `[b, T, d_out]`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache is a ring or
    /// holds another shape (a latent cache holds `[b, pos, L]` and `[b, pos, 0]`), or a token
    /// would lie beyond `context_length` (nothing is changed then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    /// An empty latent cache (a full `KVCache`; the first `forward` gives it its shape).
    KVCache make_cache() const { return KVCache(); }

    std::size_t latent_dim;          ///< L: the numbers cached per token
    nn::Linear W_DKV{0, 0, false};   ///< `Linear(d_in, L)`: down to the latent
    nn::Linear W_UK{0, 0, false};    ///< `Linear(L, d_out)`: latent to per-head keys
    nn::Linear W_UV{0, 0, false};    ///< `Linear(L, d_out)`: latent to per-head values

private:
    // The latent width of a checked config, its weights' sizes checked before anything is drawn.
    static std::size_t checked_latent_dim(const AttentionConfig& config);
    friend AbsorbedLatentAttention absorb(const MultiHeadLatentAttention& mla);
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // Keys and values rebuilt from `tokens` latents, attended by the queries, out_proj.
    Tensor attend_latents(const Tensor& x, const float* latents, std::size_t tokens,
                          std::size_t query_start, Generator& gen) const;
};

/// Multi-head latent attention with `W_UK` folded into the query projection and `W_UV` into the
/// output projection (DeepSeek-V2's "absorbed" inference form). For head `h`, with
/// `W_UK_h = W_UK.weight[h*hd : (h+1)*hd, :]` (`[hd, L]`):
/// `q_h · (W_UK_h c) = (W_UK_hᵀ q_h) · c`, so the scores are those of `L`-wide queries against
/// the latents themselves, one key/value head shared by all `H` query heads; and
/// `out_proj(Σ_h W_UV_h o_h)` needs only `Σ_j p_j c_j`, the weights applied to the latents.
/// Nothing `[T, d_out]`-sized is rebuilt per token: the cache is read as it is stored.
///
/// Weights: `W_query.weight [H * L, d_in]` (block `h`: `W_UK_hᵀ W_query_h`, bias
/// `W_UK_hᵀ b_query_h`); `out_proj.weight [d_out, H * L]` (block `h`: `W_out_h W_UV_h`, bias
/// `b_out + W_out b_UV`); `W_DKV` as it is. `W_UK`'s bias adds `q_h · b_UK_h` to every score of
/// a row, which the softmax ignores, so it is dropped. Evaluation only: there is no dropout
/// (with dropout, `Σ_j p_j ≠ 1` and the `W_UV` bias would not fold).
struct AbsorbedLatentAttention {
    /// `[b, T, d_in] -> [b, T, d_out]`: `attend(W_query x as H heads of L, c, c)`, `out_proj`.
    /// Equals the module's `operator()` in evaluation mode up to float32 rounding.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x) const;

    /// The cached form: appends the latents of `x` to `cache` (the module's latent cache: the
    /// same cache serves both forms) and attends to every cached latent directly.
    /// @throws std::invalid_argument as `MultiHeadLatentAttention::forward`.
    Tensor forward(const Tensor& x, KVCache& cache) const;

    std::size_t num_heads = 0;       ///< H
    std::size_t head_dim = 0;        ///< the scores are still divided by `sqrt(head_dim)`
    std::size_t latent_dim = 0;      ///< L: the width of the absorbed queries and of the latent
    std::size_t context_length = 0;  ///< the most positions
    nn::Linear W_query;              ///< `[H * L, d_in]`: `W_UK` absorbed
    nn::Linear W_DKV;                ///< `[L, d_in]`, the module's
    nn::Linear out_proj;             ///< `[d_out, H * L]`: `W_UV` absorbed

private:
    Shape check(const Tensor& x) const;
    Tensor attend_latents(const float* latents, std::size_t tokens, const Tensor& x,
                          std::size_t query_start) const;
};

/// The absorbed form of `mla` (see `AbsorbedLatentAttention`): the products of its weights,
/// computed once in float32.
/// @throws std::invalid_argument when a public field of `mla` no longer fits (naming it).
AbsorbedLatentAttention absorb(const MultiHeadLatentAttention& mla);

}  // namespace attn
