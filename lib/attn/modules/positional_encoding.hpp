/// @file positional_encoding.hpp
/// @brief The sinusoidal position encoding as a module: the Annotated Transformer's
/// `PositionalEncoding(d_model, dropout, max_len=5000)` (harvardnlp, "The Annotated
/// Transformer"), which adds the table of Vaswani et al. (2017, §3.5) to its input and applies
/// dropout. Absolute positions enter before attention, added to the token embeddings, so this
/// is a module of its own and not an option of the attention modules (whose options are RoPE
/// and ALiBi: config.hpp's `PositionScheme`). GPT-2's learned positions are an `nn::Embedding`
/// of `context_length` rows read at `arange(T)`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The Annotated Transformer's `PositionalEncoding`: the buffer `pe` `[1, max_len, d_model]`
/// (`sinusoidal_encoding(max_len, d_model)`, attention/positions.hpp) and `Dropout(dropout)`.
class PositionalEncoding : public nn::Module {
public:
    /// `"PositionalEncoding"`, as repr prints it.
    std::string type_name() const override { return "PositionalEncoding"; }
    /// Its one submodule, `dropout` (`pe` is a buffer).
    std::vector<nn::NamedChild> children() override { return {{"dropout", &dropout}}; }

    /// `PositionalEncoding(d_model, dropout, max_len)`. Nothing is drawn.
    /// @throws std::invalid_argument when `d_model` is 0 or odd, `max_len` is 0 or beyond 2^24,
    /// or `dropout` is outside [0, 1]; std::length_error when `pe` cannot be allocated.
    PositionalEncoding(std::size_t d_model, double dropout, std::size_t max_len = 5000,
                       nn::BernoulliBackend backend = nn::BernoulliBackend::portable);

    /// `forward(x)`: `dropout(x + pe[:, start : start + T])` for `x` `[b, T, d_model]` (his
    /// forward with `start = 0`; a decoder fed one token at a time passes its position).
    /// Returns `[b, T, d_model]`; in training mode with `dropout > 0` the mask is drawn from `gen`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_model]` or positions `start ..
    /// start + T - 1` are beyond `max_len` (naming them), or `pe` was replaced by a tensor of
    /// another shape.
    Tensor operator()(const Tensor& x, std::size_t start = 0, Generator& gen = default_generator()) const;

    /// The width of the table, `pe`'s last dimension.
    /// @throws std::invalid_argument, naming `pe`'s shape, when `pe` was replaced by a tensor
    /// that is not `[1, max_len, d_model]`.
    std::size_t d_model() const;
    /// The most positions, `pe`'s middle dimension. @throws as `d_model`.
    std::size_t max_len() const;

    Tensor pe;            ///< `[1, max_len, d_model]`: sin in the even columns, cos in the odd ones
    nn::Dropout dropout;  ///< on the sum
};

}  // namespace attn
