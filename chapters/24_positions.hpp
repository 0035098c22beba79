// Chapter 24's helpers: chapter 1's attention as one function (the chapter permutes its input),
// PyTorch's row indexing `x[perm]`, and the largest difference as PyTorch prints it. Compiled
// with the chapter, in the chapters' unity file (chapters/meson.build): everything here is in
// namespace ch24.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"

namespace ch24 {

/// Chapter 1's self-attention without weights or mask: `softmax(x @ x.T, dim=-1) @ x` for
/// `x` `[T, d]` (Raschka ch. 3.3; the oracle's `attention(x)`). `weights`, when given,
/// receives the `[T, T]` attention weights.
inline attn::Tensor attention(const attn::Tensor& x, attn::Tensor* weights = nullptr) {
    const attn::Tensor w = attn::softmax(attn::matmul(x, attn::transpose(x, 0, 1)), -1);
    if (weights) *weights = w;
    return attn::matmul(w, x);
}

/// `x[perm]`: the rows of a `[T, d]` tensor in the order `perm` (PyTorch's indexing by a
/// LongTensor along dimension 0).
inline attn::Tensor rows(const attn::Tensor& x, const std::vector<std::size_t>& perm) {
    const std::size_t d = x.shape()[1];
    attn::Tensor out = attn::zeros({perm.size(), d});
    for (std::size_t i = 0; i < perm.size(); ++i) std::copy_n(x.data() + perm[i] * d, d, out.data() + i * d);
    return out;
}

/// `(a - b).abs().max()` as a 0-d float32 tensor.
inline attn::Tensor max_abs(const attn::Tensor& a, const attn::Tensor& b) {
    float worst = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a.data()[i] - b.data()[i]));
    return attn::scalar_tensor(worst);
}

}  // namespace ch24
