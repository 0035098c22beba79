/// @file config.hpp
/// @brief The checks every attention module shares: a config's fields when it is built, and
/// the public fields a user may have changed when it runs (a PyTorch user changes
/// `m.W_key = nn.Linear(...)` or `m.num_heads`, and PyTorch raises a shape error at the
/// forward; so does this library, before any buffer is sized).
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

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

// ---------------------------------------------------------------- at the forward

/// Checks that `x` is `[b, T, width]` and returns its shape.
/// @throws std::invalid_argument `"<where>: expected [b, T, <width>], got [...]"`.
Shape check_tokens(const std::string& where, const Tensor& x, std::size_t width);

/// Checks a module's layer, a public field: its weight `[out, in]` and its bias, if any,
/// `[out]`.
/// @throws std::invalid_argument `"<where> (<name>.weight): expected [out, in], got [...]"`
/// (or `.bias`).
void check_linear(const std::string& where, const char* name, const nn::Linear& layer,
                  std::size_t in, std::size_t out);

/// Checks a module's head fields (public): `num_heads > 0`, `head_dim > 0` and
/// `num_heads * head_dim == d_out`.
/// @throws std::invalid_argument naming the fields and their values otherwise.
void check_heads(const std::string& where, std::size_t num_heads, std::size_t head_dim,
                 std::size_t d_out);

/// Checks that positions `start .. start + T - 1` fit in `context_length`, without overflow
/// (`start` may be a cache's position, `SIZE_MAX` included).
/// @throws std::invalid_argument `"<where>: a token beyond the context: positions a..b but
/// context_length = n"`.
void check_positions(const std::string& where, std::size_t start, std::size_t T,
                     std::size_t context_length);

/// Checks a dropout layer's public fields: `p` in [0, 1] and a known Bernoulli backend.
/// @throws std::invalid_argument naming `where` and the field.
void check_dropout(const std::string& where, const nn::Dropout& dropout);

}  // namespace attn
