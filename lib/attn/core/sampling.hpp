/// @file sampling.hpp
/// @brief `torch.topk` and `torch.multinomial` as PyTorch 1.13 computes them on the CPU: what
/// Raschka's decoding strategies (ch05 §5.3, In [31]-[40]) are built on. Both are checked
/// against Debian's torch 1.13 (data/oracle/decoding.json, tests/test_decoding.cpp).
#pragma once

#include <cstddef>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

/// `torch.return_types.topk`: the `k` largest values along the last dimension and their
/// indices, each of the input's shape with the last dimension `k`.
struct TopK {
    Tensor values;       ///< float32 `[..., k]`, descending
    LongTensor indices;  ///< int64 `[..., k]`, the positions of `values` in the input's last dimension
};

/// `torch.topk(x, k)` (largest, sorted, along the last dimension) as PyTorch 1.13's CPU kernel
/// (`topk_impl_loop`, aten/src/ATen/native/TopKImpl.h): each row's `(value, index)` pairs in
/// index order, then `std::partial_sort` of the first `k` when `k * 64 <= n`, otherwise
/// `std::nth_element` at `k - 1` and `std::sort` of the first `k - 1`; "greater" puts NaN above
/// every number. Which of several equal values comes first is whatever those libstdc++
/// algorithms leave (not the lowest index): calling the same algorithms on the same pairs
/// gives PyTorch's order (Debian's torch is built with GCC's libstdc++).
/// `x`: float32 `[..., n]`, at least 1-D; `k` in [0, n] (0 gives empty results, as PyTorch).
/// Source: his ch05 In [37] (`torch.topk(next_token_logits, 3)`) and his `generate` (In [40]).
/// @throws std::invalid_argument when `x` is 0-d or `k > n` ("selected index k out of range",
/// PyTorch's words).
TopK topk(const Tensor& x, std::size_t k);

/// `torch.multinomial(probs, num_samples, replacement)` on the CPU, PyTorch 1.13's path without
/// replacement or for one sample (`multinomial_out`, aten/src/ATen/native/Distributions.cpp,
/// the "Gumbel" trick): `q = torch.empty_like(probs).exponential_(1)` (every element, row-major:
/// one 64-bit draw each, `exponential_`), `q = probs / q` in float32, then for one sample the
/// first maximum of each row (`argmax(dim=-1, keepdim=True)`; a NaN counts as the maximum), for
/// more samples (without replacement) `topk(q, num_samples).indices`. The rows need not sum to
/// 1. `probs`: float32 `[V]` or `[B, V]`; returns int64 `[num_samples]` or `[B, num_samples]`
/// (`[0, num_samples]` for no rows, nothing drawn).
/// Source: his ch05 In [31], [32] (`torch.multinomial(probas, num_samples=1)`) and In [40].
/// @throws std::invalid_argument, with PyTorch's messages and in its order, when `probs` is not
/// 1-D or 2-D ("prob_dist must be 1 or 2 dim"), `num_samples` is 0 ("cannot sample n_sample <=
/// 0 samples"), `num_samples` exceeds `V` without replacement ("cannot sample n_sample >
/// prob_dist.size(-1) samples without replacement"), `V > 2^24`, any value is `inf`, NaN or
/// negative ("probability tensor contains either `inf`, `nan` or element < 0"), or a row sums
/// to 0 ("invalid multinomial distribution (sum of probabilities <= 0)"); and when
/// `replacement` is asked with `num_samples > 1` (PyTorch's other kernel,
/// `multinomial_with_replacement`, is not implemented here). Nothing is drawn when it throws.
LongTensor multinomial(const Tensor& probs, std::size_t num_samples = 1, bool replacement = false,
                       Generator& gen = default_generator());

}  // namespace attn
