/// @file attention.hpp
/// @brief The attention modules of the book, from the first trainable one on.
///
/// Each class mirrors a notebook class of the same name; `forward` is `operator()`.
#pragma once

#include <string>

#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

/// `SelfAttention_v1` of the book: three `nn.Parameter(torch.rand(d_in, d_out))` matrices,
/// drawn in the order `W_query`, `W_key`, `W_value`, used as `x @ W`.
/// Source: Raschka ch. 3; notebook 004 In [16] builds the same three matrices by hand.
class SelfAttention_v1 {
public:
    /// Draws the three `[d_in, d_out]` matrices from `gen` (3 * d_in * d_out 32-bit draws).
    /// @throws std::length_error (nothing drawn) when `[d_in, d_out]` cannot be allocated.
    SelfAttention_v1(std::size_t d_in, std::size_t d_out, Generator& gen = default_generator());

    /// `x: [T, d_in] -> context_vec: [T, d_out]`:
    /// `softmax((x W_query)(x W_key)^T / sqrt(d_out)) (x W_value)`.
    /// @throws std::invalid_argument when `x` is not `[T, d_in]`.
    Tensor operator()(const Tensor& x) const;

    Tensor W_query;  ///< `[d_in, d_out]`
    Tensor W_key;    ///< `[d_in, d_out]`
    Tensor W_value;  ///< `[d_in, d_out]`
};

/// `SelfAttention_v2` of notebook 002 In [1] (`SelfAttention` in 004 In [17]): three
/// `nn.Linear(d_in, d_out, bias=qkv_bias)` layers built in the order query, key, value.
class SelfAttention_v2 {
public:
    /// Builds the three layers from `gen`.
    SelfAttention_v2(std::size_t d_in, std::size_t d_out, bool qkv_bias = false,
                     Generator& gen = default_generator());

    /// `x: [T, d_in] -> context_vec: [T, d_out]`:
    /// `attn_weights = softmax(queries @ keys.T / sqrt(d_out))`, `attn_weights @ values`.
    /// @throws std::invalid_argument when `x` is not `[T, d_in]`.
    Tensor operator()(const Tensor& x) const;

    nn::Linear W_query;  ///< `Linear(d_in, d_out)`
    nn::Linear W_key;    ///< `Linear(d_in, d_out)`
    nn::Linear W_value;  ///< `Linear(d_in, d_out)`
};

/// The keyword arguments of `CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)`
/// (notebook 002 In [16], Raschka ch. 3.5.3), plus how dropout draws its masks. Written with
/// designated initialisers, a call reads like the Python one:
/// `CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5})`.
struct CausalAttentionConfig {
    std::size_t d_in = 0;            ///< input features per token
    std::size_t d_out = 0;           ///< output features per token
    std::size_t context_length = 0;  ///< the most tokens `forward` accepts (the mask's size)
    double dropout = 0.0;            ///< drop probability on the attention weights, in [0, 1]
    bool qkv_bias = false;           ///< biases in `W_query`, `W_key`, `W_value`
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< dropout's Bernoulli path

    /// @throws std::invalid_argument naming the field and its value when a size is 0 or
    /// `dropout` is NaN or outside [0, 1]; std::length_error when a weight or the
    /// `[context_length, context_length]` mask cannot be allocated.
    void validate() const;
};

/// `CausalAttention` of notebook 002 In [16] and 004 In [52] (Raschka ch. 3.5.3): batched
/// self-attention in which each token attends only to itself and the tokens before it, with
/// dropout on the attention weights.
///
/// Three `nn.Linear(d_in, d_out, bias=qkv_bias)` layers built in the order query, key, value,
/// then `nn.Dropout(dropout)` (which draws nothing when built), and the buffer
/// `mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)`.
class CausalAttention {
public:
    /// What `forward` computed, step by step, for a reader (shapes for `x: [b, T, d_in]`).
    struct Steps {
        Tensor queries;          ///< `W_query(x)`: `[b, T, d_out]`
        Tensor keys;             ///< `W_key(x)`: `[b, T, d_out]`
        Tensor values;           ///< `W_value(x)`: `[b, T, d_out]`
        Tensor attn_scores;      ///< `queries @ keys.transpose(1, 2)`, `-inf` above the
                                 ///< diagonal (after `masked_fill_`): `[b, T, T]`
        Tensor attn_weights;     ///< `softmax(attn_scores / sqrt(d_out))`: `[b, T, T]`
        Tensor dropped_weights;  ///< `dropout(attn_weights)`: `[b, T, T]`
        Tensor context_vec;      ///< `dropped_weights @ values`: `[b, T, d_out]`
    };

    /// Builds the three layers from `gen` (`3 * d_in * d_out` 32-bit draws, plus `3 * d_out`
    /// with `qkv_bias`). `config.backend` chooses how dropout masks are drawn (`nn::Dropout`).
    /// @throws std::invalid_argument as `CausalAttentionConfig::validate`.
    explicit CausalAttention(const CausalAttentionConfig& config,
                             Generator& gen = default_generator());

    /// `forward(x)`: `x: [b, T, d_in] -> context_vec: [b, T, d_out]`. In training mode with
    /// `dropout > 0` the dropout mask of the `[b, T, T]` weights is drawn from `gen`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, or when
    /// `T > context_length`: the mask has only `context_length` rows. (PyTorch fails there
    /// too, but later and less clearly: `masked_fill_` cannot broadcast the cut
    /// `[context_length, context_length]` mask over `[b, T, T]`.)
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate tensor (same draws, same result).
    /// @throws std::invalid_argument as `operator()`.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// `module.train(mode)`: dropout is active in training mode (the default).
    void train(bool mode = true) { dropout.training = mode; }
    /// `module.eval()`: dropout off.
    void eval() { train(false); }

    /// The input width `d_in`.
    std::size_t d_in() const { return W_query.in_features(); }
    /// The output width `d_out`.
    std::size_t d_out() const { return W_query.out_features(); }
    /// The most tokens `forward` accepts: the mask's size.
    /// @throws std::invalid_argument when `mask` (public) was replaced by a 0-d tensor.
    std::size_t context_length() const {
        if (mask.dimension() == 0) throw_shape_error("CausalAttention (mask)", "2-D", Shape{});
        return mask.shape()[0];
    }

    nn::Linear W_query;  ///< `Linear(d_in, d_out)`
    nn::Linear W_key;    ///< `Linear(d_in, d_out)`
    nn::Linear W_value;  ///< `Linear(d_in, d_out)`
    nn::Dropout dropout; ///< on the attention weights
    Tensor mask;         ///< `[context_length, context_length]`: 1 above the diagonal, else 0
};

/// Throws `std::invalid_argument("<where>: expected <field> > 0, got 0")` when `value` is 0:
/// the one check of a config's sizes, shared by every module config.
void require_positive(const std::string& where, const char* field, std::size_t value);

/// Throws `std::invalid_argument` naming `where`, `field` and the value when `p` is NaN or
/// outside [0, 1] (a dropout probability).
void require_probability(const std::string& where, const char* field, double p);

/// Checks that the `[n, n]` causal mask of a config (`context_length`, `block_size`) can be
/// allocated, before the module draws any weight.
/// @throws std::length_error `"<where> (mask [<field>, <field>]): cannot allocate ..."`.
void require_mask_size(const std::string& where, const char* field, std::size_t n);

/// Checks that a `[r, c]` weight of a config can be allocated, before anything is drawn.
/// @throws std::length_error `"<where> (weight [<rows>, <cols>]): cannot allocate ..."`.
void require_weight_size(const std::string& where, const char* rows, std::size_t r,
                         const char* cols, std::size_t c);

/// Throws `std::invalid_argument("<where>: <field> must be divisible by <divisor_field>, got
/// <field> = <value>, <divisor_field> = <divisor>")` when `divisor` is 0 or does not divide
/// `value`: the one check that heads split a width evenly (`d_out` by `num_heads`, `num_heads`
/// by `num_kv_groups`), shared by every module config.
void require_divisible(const std::string& where, const char* field, std::size_t value,
                       const char* divisor_field, std::size_t divisor);

/// `mask.bool()[:T, :T]`: the top-left `[T, T]` corner of a `[context_length, context_length]`
/// 0/1 mask, as booleans (true = masked). Used by `CausalAttention` and `MultiHeadAttention`.
/// @throws std::invalid_argument naming `where` when `T > context_length` (the book's
/// modules cannot attend over more tokens than their mask has rows), or when `mask` (a public
/// member) is not square 2-D.
BoolTensor causal_mask_for(const std::string& where, const Tensor& mask, std::size_t T);

}  // namespace attn
