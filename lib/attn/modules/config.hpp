/// @file config.hpp
/// @brief One config for every attention module, as nanoGPT keeps one config whose fields the
/// variants read: the keyword arguments of Raschka's classes, each module taking the ones its
/// constructor has. Written with designated initialisers, a call reads like the Python one:
/// `GroupedQueryAttention({.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 4,
/// .num_kv_groups = 2})`. A field a module does not take must keep its default (PyTorch raises
/// `TypeError: unexpected keyword argument`); `AttentionConfig::check` says which.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "attn/attention/positions.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// How a query of DeepSeek sparse attention chooses among keys whose index scores are equal
/// (dsa.hpp explains why it matters).
enum class IndexTies {
    earliest,    ///< by position, earliest first, among the visible keys (the default)
    torch_topk,  ///< as his `index_scores.topk(k)` on PyTorch's CPU: depends on the row length
};

/// Where a module's attention gets position from (attention/positions.hpp). Absolute encodings
/// (GPT-2's learned `pos_emb`, the sinusoidal table) are added to the input before any module,
/// so they are not a module's option.
enum class PositionScheme {
    none,   ///< nothing inside attention (the causal mask aside): positions come with the input
    rope,   ///< queries and keys rotated by their position (RoPE, Raschka's `compute_rope`)
    alibi,  ///< the scores biased by `-m_h |i - j|` (ALiBi), one slope per head
};

/// The order in which the PyTorch code a module mirrors projects its input into queries, keys
/// and values. Nothing in the forward depends on it; autograd adds the three projections'
/// shares of `x.grad` in the reverse order of their creation (the last made delivers first), so
/// it decides the last bits of `dL/dx`.
enum class ProjectionOrder {
    /// `queries = W_query(x)` first: notebooks 002 and 004, and this project's oracle runs of his
    /// chapter 3 class (tools/oracle/reference/ch03.py); `x.grad = (value + key) + query`.
    query_key_value,
    /// `keys = self.W_key(x)` first, as Raschka writes his chapter 3-5 classes (his GPT's);
    /// `x.grad = (value + query) + key`.
    key_query_value,
};

/// The fields of `AttentionConfig`, to say which ones a module takes.
enum class ConfigField {
    d_in, d_out, context_length, dropout, num_heads, num_kv_groups, qkv_bias, out_bias,
    sliding_window_size, latent_dim, index_n_heads, index_head_dim, topk, ties, backend,
    positions, rope_base, rope_freq, projection_order,
};

/// The arguments of the attention modules, in the order of Raschka's constructors (designated
/// initialisers must follow it). Sizes are counts of features, heads or tokens.
struct AttentionConfig {
    std::size_t d_in = 0;            ///< input features per token
    /// Output features per token, all heads together (`MultiHeadAttentionWrapper`: each
    /// head's, as in Raschka's wrapper).
    std::size_t d_out = 0;
    std::size_t context_length = 0;  ///< the most positions a sequence may have (the mask's size)
    double dropout = 0.0;            ///< drop probability on the attention weights, in [0, 1]
    std::size_t num_heads = 0;       ///< query heads; must divide `d_out`
    std::size_t num_kv_groups = 0;   ///< key/value heads (GQA); must divide `num_heads`
    bool qkv_bias = false;           ///< biases in the query, key and value projections
    bool out_bias = true;            ///< a bias in `out_proj` (`MultiHeadAttention`)
    std::size_t sliding_window_size = 0;     ///< W: the keys a query sees (SWA)
    std::optional<std::size_t> latent_dim{};  ///< the latent width (MLA; unset: `max(16, d_out / 8)`)
    std::size_t index_n_heads = 4;   ///< the lightning indexer's heads H_I (DSA; his default)
    std::size_t index_head_dim = 64; ///< the indexer's head width (DSA; his default)
    std::size_t topk = 64;           ///< keys each query attends to, k (DSA; his default)
    IndexTies ties = IndexTies::earliest;  ///< how DSA breaks ties among equal index scores
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< dropout's Bernoulli path
    /// Where position comes from inside attention: RoPE (Llama's `compute_rope` on queries and
    /// keys), ALiBi, or nothing (the default, Raschka's chapter 3 and 4 modules).
    PositionScheme positions = PositionScheme::none;
    /// RoPE's `theta_base` (Llama 2: 10 000, Llama 3: 500 000); with `positions = rope` only.
    double rope_base = 10000.0;
    /// RoPE's frequency smoothing (Llama 3.1 and 3.2: `RopeFreqConfig::llama3_1()`,
    /// `llama3_2()`); with `positions = rope` only.
    std::optional<RopeFreqConfig> rope_freq{};
    /// Which projection the mirrored PyTorch code makes first (`MultiHeadAttention`): the order
    /// in which its backward adds the three shares of `dL/dx`.
    ProjectionOrder projection_order = ProjectionOrder::query_key_value;

    /// Checks the config for a module that takes `takes` (every other field must keep its
    /// default): each taken size > 0 (`latent_dim` when set), `num_heads` dividing `d_out`
    /// (unless `heads_split_d_out` is false: the wrapper's `d_out` is each head's) and
    /// `num_kv_groups` dividing `num_heads` when taken, `dropout` in [0, 1], `ties`,
    /// `backend` and `positions` enumerators; with `positions = rope`, an even head width
    /// (`d_out / num_heads`), `rope_base` finite and > 0 and `rope_freq` valid; `rope_base`
    /// and `rope_freq` left at their defaults otherwise.
    /// @throws std::invalid_argument naming `module`, the field and its value:
    /// `"GroupedQueryAttention: num_heads must be divisible by num_kv_groups, got ..."`,
    /// `"MultiHeadAttention: sliding_window_size is not one of its arguments (got 4)"`,
    /// `"GroupedQueryAttention: RoPE rotates pairs of a head's columns: head_dim must be even,
    /// got head_dim = 3 (d_out = 12, num_heads = 4)"`.
    void check(const std::string& module, std::initializer_list<ConfigField> takes,
               bool heads_split_d_out = true) const;
    /// `check` with the fields taken listed at run time (a variant's own added to its base's).
    /// @throws std::invalid_argument as `check`.
    void check(const std::string& module, const std::vector<ConfigField>& takes, bool heads_split_d_out = true) const;
};

}  // namespace attn
