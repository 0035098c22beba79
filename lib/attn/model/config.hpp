/// @file config.hpp
/// @brief The configuration of Raschka's GPT model (*Build a Large Language Model (From
/// Scratch)*, ch. 4.1, In [2]: `GPT_CONFIG_124M`), the sizes of GPT-2's four models (his
/// exercise 4.2, `get_config`), and their parameter counts without building them.
///
/// The model's room (lib/attn/model/, above the attention modules): `LayerNorm`
/// (layer_norm.hpp), `GELU` (gelu.hpp), `FeedForward` (feed_forward.hpp), `TransformerBlock`
/// (transformer_block.hpp), `GPTModel` (gpt_model.hpp), `generate_text_simple` and its cached
/// form (generate.hpp). A model is built from the library's layers (nn/) and its one attention
/// module (`MultiHeadAttention`, modules/), whose config `GPTConfig::attention()` gives.
#pragma once

#include <cstddef>
#include <string>

#include "attn/modules/config.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// Raschka's GPT config dict, field for field (his keys, in his order), plus the dropout's
/// Bernoulli backend: `GPTModel(GPT_CONFIG_124M)`, or with designated initialisers
/// `GPTModel({.vocab_size = 50257, .context_length = 1024, .emb_dim = 768, .n_heads = 12,
/// .n_layers = 12, .drop_rate = 0.1, .qkv_bias = false})`.
struct GPTConfig {
    std::size_t vocab_size = 0;      ///< tokens of the vocabulary (50,257 for GPT-2's BPE)
    std::size_t context_length = 0;  ///< the most positions (`pos_emb`'s rows)
    std::size_t emb_dim = 0;         ///< the embedding width `E`
    std::size_t n_heads = 0;         ///< attention heads per block; must divide `emb_dim`
    std::size_t n_layers = 0;        ///< transformer blocks
    double drop_rate = 0.0;          ///< every dropout's probability, in [0, 1]
    bool qkv_bias = false;           ///< biases in the query, key and value projections
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< the dropout masks' path

    /// Checks the config before anything is built: every size > 0, `n_heads` dividing
    /// `emb_dim`, `drop_rate` in [0, 1], a known backend, that the largest tensors
    /// (`[vocab_size, emb_dim]`, `[context_length, context_length]`, `[4 * emb_dim, emb_dim]`)
    /// can be allocated, and the whole model too (its parameters and `n_layers` masks, at most
    /// `max_tensor_bytes()`).
    /// @throws std::invalid_argument `"<where>: expected vocab_size > 0, got 0"`, `"<where>:
    /// emb_dim must be divisible by n_heads, got emb_dim = 768, n_heads = 5"`, ...;
    /// std::length_error when a tensor of the config, or the whole model, cannot be allocated
    /// (`"GPTModel: cannot allocate the model: N parameters and L masks of [C, C] take B bytes,
    /// more than M"`).
    void check(const std::string& where = "GPTConfig") const;

    /// The config of a block's attention, as his `TransformerBlock` passes it:
    /// `MultiHeadAttention(d_in=emb_dim, d_out=emb_dim, context_length, num_heads=n_heads,
    /// dropout=drop_rate, qkv_bias)` (the output projection with its bias), his keys projected
    /// first (`ProjectionOrder::key_query_value`).
    AttentionConfig attention() const;
};

/// `GPT_CONFIG_124M` (ch. 4.1 In [2]): GPT-2 small, 50,257 tokens, 1,024 positions, 768 wide,
/// 12 heads, 12 layers, dropout 0.1, no query/key/value bias.
inline constexpr GPTConfig GPT_CONFIG_124M{.vocab_size = 50257, .context_length = 1024, .emb_dim = 768,
                                           .n_heads = 12, .n_layers = 12, .drop_rate = 0.1,
                                           .qkv_bias = false};

/// His exercise 4.2's `get_config(base_config, model_name)`: `base` with the sizes of
/// `"gpt2-small"` (768 wide, 12 layers, 12 heads), `"gpt2-medium"` (1024, 24, 16),
/// `"gpt2-large"` (1280, 36, 20) or `"gpt2-xl"` (1600, 48, 25).
/// @throws std::invalid_argument `"Incorrect model name <name>"` (his `ValueError`) otherwise.
GPTConfig get_config(const GPTConfig& base, const std::string& model_name);

/// The parameters of a `GPTModel` of this config, counted without building it (a GPT-2 XL
/// holds 6.2 GB): his `sum(p.numel() for p in model.parameters())`, and the part of it in
/// `out_head` (`total - out_head` is the count with weight tying, ch. 4.6 In [27]).
struct GPTParameterCount {
    std::size_t total = 0;     ///< every parameter, `tok_emb` and `out_head` both counted
    std::size_t out_head = 0;  ///< `out_head.weight`: `vocab_size * emb_dim`
};

/// Counts `GPTModel(config)`'s parameters: `tok_emb` `V * E`, `pos_emb` `C * E`, per block
/// `3 * E * E` (+ `3 * E` with `qkv_bias`) for the queries, keys and values, `E * E + E` for
/// `out_proj`, `8 * E * E + 5 * E` for `FeedForward`, `4 * E` for two `LayerNorm`s; then
/// `final_norm` `2 * E` and `out_head` `V * E`.
/// @throws std::invalid_argument as `GPTConfig::check` (sizes, heads, dropout; the tensors'
/// allocation is not checked); std::length_error when a count overflows.
GPTParameterCount parameter_count(const GPTConfig& config);

}  // namespace attn
