/// @file dragon4.hpp
/// @brief NumPy's float32 digit generation (internal to lib/attn/print): `FormatPositional`
/// and `FormatScientific` of `numpy/core/src/multiarray/dragon4.c` (NumPy 1.24), in unique
/// digit mode, as `numpy.format_float_positional` / `format_float_scientific` call them.
#pragma once

#include <string>

namespace attn::print_detail {

/// NumPy's `TrimMode`: what happens to trailing zeros and the point (`'k'`: keep, `'.'`:
/// trim zeros, keep the point; `'0'`: leave one zero after the point; `'-'`: trim zeros and
/// the point).
enum class Trim { None, Zeros, LeaveOneZero, DptZeros };

/// `FormatPositional`: `x` with at most `precision` digits after the point (-1: as many as
/// identify the float32), at least `min_digits` (-1: none), trimmed by `trim`, padded on the
/// left to `digits_left` characters before the point and on the right to `digits_right`
/// digits after it (-1: no padding); the sign only when negative; `inf`, `-inf`, `nan`.
std::string format_positional(float x, int precision, int min_digits, Trim trim, int digits_left,
                              int digits_right);

/// `FormatScientific`: `x` as `d.ddde+XX` with at most `precision` digits after the point
/// (-1: as many as identify the float32), at least `min_digits`, trimmed by `trim`, padded on
/// the left to `digits_left` characters and an exponent of at least `exp_digits` digits
/// (-1: 2; at most 5); `inf`, `-inf`, `nan`.
std::string format_scientific(float x, int precision, int min_digits, Trim trim, int digits_left,
                              int exp_digits);

}  // namespace attn::print_detail
