/// @file ulp.hpp
/// @brief Distances between float32 values in units in the last place (ulp): how the book's
/// NumPy-style blocks, the oracle checks and the online softmax measure last-bit differences.
#pragma once

#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn {

/// How many float32 values lie between `a` and `b` (IEEE-754 binary32, ordered through their
/// bit patterns): 0 when they are equal (`+0` and `-0` are equal), 1 for neighbours such as
/// `1.0f` and `nextafter(1.0f, 2.0f)`; infinities are the values after the largest finite
/// ones. NaN rule: two NaNs are at distance 0 (a printed `nan` matches a `nan`), a NaN and a
/// number at `INT64_MAX` (never within any bound).
std::int64_t ulp_distance(float a, float b);

/// The largest `ulp_distance` between corresponding elements of two float32 tensors of one
/// shape (0 for empty tensors).
/// @throws std::invalid_argument naming both shapes when they differ.
std::int64_t max_ulp_distance(const Tensor& a, const Tensor& b);

/// `max |a - b|` over two tensors of one shape, in units of the float32 spacing at `scale`
/// (`ulp(scale) = nextafter(scale, inf) - scale`). Attention outputs are weighted averages of
/// the values, so `scale = max |v|` measures their rounding where raw ulps near 0 would not
/// (chapter 12's tiled against step-by-step attention).
/// @throws std::invalid_argument when the shapes differ or `scale` is not finite and > 0.
double max_diff_in_ulps(const Tensor& a, const Tensor& b, float scale);

}  // namespace attn
