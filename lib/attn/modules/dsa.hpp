/// @file dsa.hpp
/// @brief DeepSeek sparse attention (DSA, DeepSeek-V3.2): a lightning indexer scores every
/// earlier token for each query, and the query attends only to its `topk` best, through the
/// attention core with a mask. Cached in the one `KVCache` plus the indexer's keys.
///
/// Source: the contributor's pull request "Add Deepseek Sparse Attention (DSA) implementation
/// (ch04/09_dsa)" to rasbt/LLMs-from-scratch,
/// ch04/09_dsa/gpt_with_kv_dsa.py (head 51805ca2, April 2026), classes `LightningIndexer` and
/// `MultiHeadAttentionWithDSA`; DeepSeek-V3.2's technical report for the indexer's formula.
///
/// Ties. ReLU makes many index scores exactly 0 (a key no index head votes for), so a query
/// often has to choose among equal scores. `torch.topk` leaves that choice to
/// `std::nth_element`, whose pick among equal elements depends on the row's length: the cached
/// forward (a row of the keys so far) and the full forward (a row of every key, the future
/// masked to -inf) can keep different keys, and his cached decoding then differs from his
/// recomputation (data/oracle/dsa.json, case dsa_ties_s31). This library breaks ties by
/// position, the earliest first (`IndexTies::earliest`, as
/// `torch.sort(scores, descending=True, stable=True)` would), among the keys the query may see:
/// a rule that looks only at (score, position), so a query keeps the same keys however the
/// sequence was fed. `IndexTies::torch_topk` reproduces his `topk` (the same libstdc++
/// algorithm on the same row), to show the difference.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/modules/skeleton.hpp"

namespace attn {

// IndexTies, how a query chooses among keys whose index scores are equal (see the file
// comment): attn/modules/config.hpp, beside the config field that holds it.

/// The top `topk` keys of each query under the causal mask: `index_scores [b, T, S]` are the
/// scores of queries at positions `query_start .. query_start + T - 1` against keys at
/// positions `0 .. S - 1`; key `s` is visible to query `t` when `s <= query_start + t`. Returns
/// `[b, T, S]`, true where the query keeps the key: `min(topk, visible)` keys per query, the
/// largest scores first (NaN above everything, as `torch.topk`), ties broken by `ties`. With
/// `torch_topk` the row is his (`scores + causal_float`, `S` long), and keys his `topk` picks
/// beyond the causal mask are dropped, as his `causal_float + sparse_mask` drops them.
/// @throws std::invalid_argument when `index_scores` is not 3-D or `topk` is 0.
BoolTensor topk_selection(const Tensor& index_scores, std::size_t topk, std::size_t query_start = 0,
                          IndexTies ties = IndexTies::earliest);

/// His `LightningIndexer(d_model, index_n_heads, index_head_dim)`: for a query token `t` and a
/// key token `s`, `I[t, s] = sum_j w[t, j] * ReLU(q[t, j] . k[s] * scale)` with
/// `q = W_q_index(x)` (`index_n_heads` heads of `index_head_dim`), one shared key
/// `k = W_k_index(x_ctx)` per token, `w = softmax(W_weights(x))` over the index heads, and
/// `scale = index_head_dim ** -0.5`. Layers in his order: `W_q_index`, `W_k_index`,
/// `W_weights`, all without bias.
class LightningIndexer : public nn::Module {
public:
    /// `"LightningIndexer"`, as repr prints it.
    std::string type_name() const override { return "LightningIndexer"; }
    /// The submodules in PyTorch's registration order: `W_q_index`, `W_k_index`, `W_weights`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_q_index", &W_q_index}, {"W_k_index", &W_k_index}, {"W_weights", &W_weights}};
    }

    /// Builds the layers from `gen`: `d_model * (index_n_heads * (index_head_dim + 1) +
    /// index_head_dim)` 32-bit draws.
    /// @throws std::invalid_argument naming the field when a size is 0; std::length_error (nothing
    /// drawn) when a weight cannot be allocated.
    LightningIndexer(std::size_t d_model, std::size_t index_n_heads, std::size_t index_head_dim,
                     Generator& gen = default_generator());

    /// `W_k_index(x_ctx)`: the indexer's keys `[b, S, index_head_dim]` of tokens
    /// `x_ctx [b, S, d_model]` (what a cache keeps).
    /// @throws std::invalid_argument when `x_ctx` is not `[b, S, d_model]` or a public field no
    /// longer fits.
    Tensor keys(const Tensor& x_ctx) const;

    /// The index scores `[b, T, S]` of queries `x [b, T, d_model]` against the indexer's keys
    /// `index_keys [b, S, index_head_dim]`, without any mask: `einsum("bthd,bsd->bths")`
    /// times `scale`, ReLU, then `einsum("bth,bths->bts")` with the softmaxed weights, each sum
    /// in order over its index as PyTorch's batched products add.
    /// @throws std::invalid_argument when the shapes do not fit (naming them) or a public field
    /// no longer fits.
    Tensor scores(const Tensor& x, const Tensor& index_keys) const;

    /// His `forward(x, x_ctx, topk, causal_mask)` as a selection: `topk_selection(scores(x,
    /// keys(x_ctx)), topk, query_start, ties)`, `[b, T, S]`, true where kept.
    /// @throws std::invalid_argument as `scores` and `topk_selection`.
    BoolTensor operator()(const Tensor& x, const Tensor& x_ctx, std::size_t topk,
                          std::size_t query_start = 0, IndexTies ties = IndexTies::earliest) const;

    /// Checks the public fields against the layers (naming the field), for a module whose
    /// tokens are `d_model` wide.
    /// @throws std::invalid_argument when a layer's shape, `index_n_heads`, `index_head_dim` or
    /// `scale` does not fit.
    void check(const std::string& where, std::size_t d_model) const;

    std::size_t d_model() const { return W_k_index.in_features(); }  ///< input width

    std::size_t index_n_heads;   ///< H_I, the index heads
    std::size_t index_head_dim;  ///< the width of an index head and of the shared key
    float scale;                 ///< `index_head_dim ** -0.5`
    nn::Linear W_q_index;        ///< `Linear(d_model, index_n_heads * index_head_dim, bias=False)`
    nn::Linear W_k_index;        ///< `Linear(d_model, index_head_dim, bias=False)`
    nn::Linear W_weights;        ///< `Linear(d_model, index_n_heads, bias=False)`

    /// `scores` into given memory: queries `x` (`b * T` rows of `d_model`), keys (`b * S` rows of
    /// `index_head_dim`) -> `out [b, T, S]`. No checks: for the module's forward, after
    /// `check`.
    void scores_into(const float* x, std::size_t b, std::size_t T, const float* index_keys,
                     std::size_t S, float* out) const;
};

/// The arguments of his `MultiHeadAttentionWithDSA(d_in, d_out, dropout, num_heads,
/// qkv_bias=False, index_n_heads=4, index_head_dim=64, topk=64)`, plus `context_length` (the
/// most positions, as the GQA and SWA modules of this library have) and the tie rule:
/// `MultiHeadAttentionWithDSA({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2,
/// .index_n_heads = 2, .index_head_dim = 4, .topk = 2})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `qkv_bias`, `index_n_heads`, `index_head_dim`, `topk`, `ties`, `backend` (config.hpp); every
/// other field keeps its default.
using MultiHeadAttentionWithDSAConfig = AttentionConfig;

/// DSA's cache: the one `KVCache` of the attention's keys and values (`[b, num_heads, S,
/// head_dim]`) and a second `KVCache` holding the indexer's keys (`[b, S, index_head_dim]`,
/// with values of width 0: the indexer only scores). His cache keeps the raw tokens instead
/// and projects them again at every step; the keys are the same numbers, `index_head_dim`
/// floats per token instead of `d_in` (DeepSeek's reference caches the keys too).
struct DSACache {
    KVCache kv;     ///< the attention's keys and values
    KVCache index;  ///< the indexer's keys

    /// Tokens held (both caches agree).
    /// @throws std::invalid_argument when the two caches disagree or are inconsistent.
    std::size_t length() const;
    /// Bytes held by both.
    /// @throws std::invalid_argument as `length`.
    std::size_t bytes() const;
    /// `reset_cache()`: empty.
    void reset();
    /// Checks both caches and that they hold the same tokens.
    /// @throws std::invalid_argument naming `where` and what does not fit.
    void validate(const std::string& where = "DSACache") const;
};

/// His `MultiHeadAttentionWithDSA`: multi-head causal attention whose queries each attend to
/// the `topk` keys their lightning indexer scores highest. Layers in his order: `W_query`,
/// `W_key`, `W_value` (`Linear(d_in, d_out, qkv_bias)`), `out_proj` (`Linear(d_out, d_out)`,
/// with bias), `Dropout(dropout)`, then `indexer`. The attention is the core's: scores
/// divided by `sqrt(head_dim)`, the causal mask and the indexer's selection as `attn_mask`
/// (his `causal_float + sparse_mask`, -inf where not kept).
class MultiHeadAttentionWithDSA : public ProjectedAttention {
public:
    /// The submodules in PyTorch's registration order: `W_query`, `W_key`, `W_value`, `out_proj`, `dropout`, `indexer`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_key", &W_key}, {"W_value", &W_value}, {"out_proj", &out_proj}, {"dropout", &dropout}, {"indexer", &indexer}};
    }

    /// Builds the layers from `gen`: `3 * d_in * d_out + d_out * d_out + d_out` draws (plus
    /// `3 * d_out` with `qkv_bias`), then the indexer's. Nothing is drawn when the config is
    /// invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit MultiHeadAttentionWithDSA(const MultiHeadAttentionWithDSAConfig& config,
                                       Generator& gen = default_generator());

    /// `forward(x)` (`use_cache=False`): `[b, T, d_in] -> [b, T, d_out]`, float32.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)`: `x [b, T, d_in]` are the tokens at positions
    /// `cache.kv.pos ..`; their keys, values and index keys are appended to `cache`, and each
    /// query attends to its top-k among everything cached. Returns `[b, T, d_out]`, equal to the
    /// rows of the full forward over the whole prefix (the tie rule looks at scores and
    /// positions only).
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, the cache holds another
    /// shape or is a ring, or a token would lie beyond `context_length` (nothing changed then).
    Tensor forward(const Tensor& x, DSACache& cache, Generator& gen = default_generator()) const;

    /// What the forward selects: the indexer's scores `[b, T, T]` (no mask) and the kept keys
    /// `[b, T, T]` (true = attended), for the chapter's heat map.
    struct Selection {
        Tensor index_scores;   ///< `I[t, s]` for every query and key
        BoolTensor selected;   ///< `topk_selection(index_scores, topk, 0, ties)`
    };
    /// The selection the full forward of `x` makes.
    /// @throws std::invalid_argument as `operator()`.
    Selection select(const Tensor& x) const;

    std::size_t topk;            ///< keys each query keeps
    IndexTies ties;              ///< the tie rule
    LightningIndexer indexer;    ///< scores the keys

private:
    // The index heads' width checked against d_in before anything is drawn; returns topk.
    static std::size_t checked_topk(const AttentionConfig& config);
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The attention of queries at `start ..` over `keys`/`values`, with the index scores of
    // x against `index_keys` selecting each query's keys.
    Tensor attend_selected(const Tensor& x, const HeadsView& queries, const HeadsView& keys,
                           const HeadsView& values, const float* index_keys, std::size_t S,
                           std::size_t start, Generator& gen) const;
};

}  // namespace attn
