// Internal to lib/attn/kernels: what the per-head kernels (fused and tiled, forward and
// backward) share before they compute: their arguments' row strides checked, workspaces grown,
// and the test for non-finite values that decides whether a NaN path is needed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/kernels/attention_backward.hpp"
#include "attn/kernels/fused_attention.hpp"

namespace attn::fast::detail {

/// Throws `std::invalid_argument("<kernel>: expected <name> >= <row> (the row it holds), got
/// <ld>")` when a row stride `ld` is shorter than the row it must hold.
inline void check_stride(const char* kernel, const char* name, std::size_t ld, std::size_t row) {
    if (ld < row)
        throw std::invalid_argument(std::string(kernel) + ": expected " + name + " >= " + std::to_string(row) +
                                    " (the row it holds), got " + std::to_string(ld));
}

/// The forward's strides: queries and keys hold `hd` columns, values and outputs `dv`.
/// @throws std::invalid_argument as `check_stride`.
inline void check_strides(const char* kernel, const HeadArgs& a) {
    check_stride(kernel, "ldq", a.ldq, a.hd);
    check_stride(kernel, "ldk", a.ldk, a.hd);
    check_stride(kernel, "ldv", a.ldv, a.dv);
    check_stride(kernel, "ldo", a.ldo, a.dv);
}

/// The backward's strides: the forward's, and the gradients' (`dQ`, `dK` of `hd` columns,
/// `dV` of `dv`).
/// @throws std::invalid_argument as `check_stride`.
inline void check_strides(const char* kernel, const HeadGradArgs& a) {
    check_stride(kernel, "ldq", a.ldq, a.hd);
    check_stride(kernel, "ldk", a.ldk, a.hd);
    check_stride(kernel, "ldv", a.ldv, a.dv);
    check_stride(kernel, "ldo", a.ldo, a.dv);
    check_stride(kernel, "lddq", a.lddq, a.hd);
    check_stride(kernel, "lddk", a.lddk, a.hd);
    check_stride(kernel, "lddv", a.lddv, a.dv);
}

/// A workspace buffer of at least `floats` floats (it only grows, so reuse allocates nothing).
inline float* grow(std::vector<float>& buf, std::size_t floats) {
    if (buf.size() < floats) buf.resize(floats);
    return buf.data();
}

/// Whether every element of the `[rows, cols]` block with row stride `ld` is finite: no
/// exponent field of all ones (infinity, NaN), tested row by row without an early exit, so
/// that the compiler can test a vector of elements at once.
inline bool all_finite(const float* x, std::size_t rows, std::size_t cols, std::size_t ld) {
    for (std::size_t i = 0; i < rows; ++i) {
        unsigned bad = 0;
        for (std::size_t j = 0; j < cols; ++j) {
            std::uint32_t u;
            std::memcpy(&u, x + i * ld + j, sizeof u);
            bad |= (u & 0x7F800000u) == 0x7F800000u;
        }
        if (bad) return false;
    }
    return true;
}

}  // namespace attn::fast::detail
