// What grouped-query and sliding-window attention share (internal to lib/attn): splitting a
// projection into heads, attending with a boolean mask, merging the heads again.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/nn/nn.hpp"
#include "attn/core/tensor.hpp"

namespace attn::detail {

inline long to_long(std::size_t n) { return static_cast<long>(n); }

// [b, T, n * hd] -> view(b, T, n, hd).transpose(1, 2): [b, n, T, hd]
inline Tensor split_heads(const Tensor& t, std::size_t b, std::size_t T, std::size_t n,
                          std::size_t hd) {
    return attn::transpose(attn::view(t, {to_long(b), to_long(T), to_long(n), to_long(hd)}), 1, 2);
}

// softmax(masked(q @ k^T) / sqrt(hd)) -> dropout -> @ v, then heads merged:
// q [b, H, Tq, hd], k and v [b, H, Tk, hd], masked [Tq, Tk] (true = -inf) -> [b, Tq, H * hd]
inline Tensor attend_heads(const Tensor& queries, const Tensor& keys, const Tensor& values,
                           const BoolTensor& masked, const nn::Dropout& dropout, Generator& gen) {
    const auto& s = queries.shape();
    const long b = to_long(s[0]), H = to_long(s[1]), Tq = to_long(s[2]), hd = to_long(s[3]);
    const Tensor scores = attn::masked_fill(attn::matmul(queries, attn::transpose(keys, 2, 3)),
                                            masked, -std::numeric_limits<float>::infinity());
    const float d_k = static_cast<float>(hd);
    const Tensor weights = dropout(attn::softmax(Tensor(scores / std::sqrt(d_k)), -1), gen);
    const Tensor context = attn::transpose(attn::matmul(weights, values), 1, 2);  // [b, Tq, H, hd]
    return attn::view(context, {b, Tq, H * hd});
}

// Checks x is [b, T, width] and returns its shape.
inline Shape check_tokens(const std::string& where, const Tensor& x, std::size_t width) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != width)
        throw_shape_error(where, "[b, T, " + std::to_string(width) + "]", s);
    return s;
}

// Throws when positions start .. start + T - 1 do not fit in context_length.
inline void check_positions(const std::string& where, std::size_t start, std::size_t T,
                            std::size_t context_length) {
    if (start + T > context_length)
        throw std::invalid_argument(where + ": a token beyond the context: positions " +
                                    std::to_string(start) + ".." + std::to_string(start + T - 1) +
                                    " but context_length = " + std::to_string(context_length));
}

}  // namespace attn::detail
