// Internal to lib/attn/kernels: what the per-head kernels (fused and tiled, forward and
// backward) share before they compute: their arguments' row strides checked, workspaces grown,
// and the test for non-finite values that decides whether a NaN path is needed; and what the
// fused forward and backward share per block of queries: the keys it may see and its softmax
// block with the dense masks gathered.
#pragma once

#include <algorithm>
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

/// The keys `[lo, hi)` that some query of `i0 .. i1-1` may see under the band masks of `m`
/// (causal, window) among `Tk` keys; `hi <= lo` when none.
inline void key_range(const HeadMask& m, std::size_t Tk, std::size_t i0, std::size_t i1, long& lo, long& hi) {
    lo = 0;
    hi = long(Tk);
    if (m.causal) hi = std::clamp(long(i1) - 1 + m.offset + 1, 0L, long(Tk));
    if (m.window) lo = std::clamp(long(i0) + m.offset - long(m.window) + 1, 0L, long(Tk));
}

/// The softmax block of the fused kernels (forward and backward alike) for queries
/// `i0 .. i0 + lanes - 1` (`lanes <= nr`) of query head `q` (a `QueryHead` or `QueryHeadGrad`:
/// its `allow`, `bias` and `alibi_slope`) against the `rows` keys from `jlo` of `keys`: the band
/// masks and the scaling of `m`; `q.allow` gathered into `At` and the additive mask and ALiBi's
/// term (`score_bias`) into `Bt`, each `[rows, nr]` keys by queries, when the head has them
/// (lanes past `lanes`: allowed, bias 0). `At` and `Bt` must hold `rows * nr` elements.
template <class Head>
SoftmaxBlock masked_block(const HeadMask& m, const Head& q, std::size_t keys, std::size_t i0, std::size_t lanes,
                          std::size_t jlo, std::size_t rows, std::size_t nr, unsigned char* At, float* Bt) {
    SoftmaxBlock b{.rows = rows, .j0 = jlo, .keys = keys, .causal = m.causal, .window = m.window,
                   .diag = long(i0) + m.offset, .allow = nullptr, .bias = nullptr,
                   .divide = m.divide, .scale = m.scale, .zero_fully_masked = m.zero_fully_masked};
    if (q.allow) {
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < nr; ++c)
                At[r * nr + c] = c < lanes ? q.allow[long(i0 + c) * m.allow_si + long(jlo + r) * m.allow_sj] : 1;
        b.allow = At;
    }
    if (q.bias || m.alibi) {
        // ALiBi alone: its terms in one vectorised pass (lanes past `lanes` too: unread)
        const bool done = !q.bias && alibi_block(Bt, rows, nr, long(i0) + m.offset - long(jlo), q.alibi_slope);
        bool has = false;
        for (std::size_t r = 0; r < rows && !done; ++r)
            for (std::size_t c = 0; c < nr; ++c)
                Bt[r * nr + c] = c < lanes ? score_bias(q.bias, m.bias_si, m.bias_sj, m.alibi, q.alibi_slope,
                                                        m.offset, long(i0 + c), long(jlo + r), has)
                                           : 0.0f;
        b.bias = Bt;
    }
    return b;
}

}  // namespace attn::fast::detail
