/// @file config.hpp
/// @brief The checks every attention module shares: a config's fields when it is built, and
/// the public fields a user may have changed when it runs (a PyTorch user changes
/// `m.W_key = nn.Linear(...)` or `m.num_heads`, and PyTorch raises a shape error at the
/// forward; so does this library, before any buffer is sized).
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/require.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

// The checks of a config's fields (require_positive, ...): attn/core/require.hpp.

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
