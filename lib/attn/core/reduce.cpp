// attn::detail::torch_sum and column_sums (reduce.hpp): PyTorch's cascade sum, one column at a
// time. PyTorch runs several columns (or vector lanes) in lockstep, but each column's
// additions depend only on its own values, so summing one column after the other gives the
// same bits.
#include "attn/core/reduce.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace attn::detail {

namespace {

// c10's CeilLog2 as SumKernel.cpp uses it (1 for x <= 2).
std::size_t ceil_log2(std::size_t x) {
    if (x <= 2) return 1;
    std::size_t bits = 0;
    for (std::size_t v = x - 1; v != 0; v >>= 1) ++bits;
    return bits;
}

// multi_row_sum for one column: element i at x[i * stride], i < n.
float cascade(const float* x, std::size_t stride, std::size_t n) {
    constexpr std::size_t levels = 4;
    const std::size_t power = std::max<std::size_t>(4, ceil_log2(n) / levels);
    const std::size_t step = std::size_t{1} << power, mask = step - 1;
    std::array<float, levels> acc{};
    std::size_t i = 0;
    while (i + step <= n) {
        for (std::size_t j = 0; j < step; ++j, ++i) acc[0] += x[i * stride];
        for (std::size_t j = 1; j < levels; ++j) {
            acc[j] += acc[j - 1];
            acc[j - 1] = 0.0f;
            if ((i & (mask << (j * power))) != 0) break;
        }
    }
    for (; i < n; ++i) acc[0] += x[i * stride];
    for (std::size_t j = 1; j < levels; ++j) acc[0] += acc[j];
    return acc[0];
}

// row_sum for one column: four partial cascades over rows 4i + k, the rest into partial 0.
float ilp_sum(const float* x, std::size_t stride, std::size_t n) {
    const std::size_t quads = n / 4;
    std::array<float, 4> partial{};
    if (quads > 0)  // (no pointer is formed past a short row, nor from a null one)
        for (std::size_t k = 0; k < 4; ++k) partial[k] = cascade(x + k * stride, 4 * stride, quads);
    for (std::size_t i = quads * 4; i < n; ++i) partial[0] += x[i * stride];
    for (std::size_t k = 1; k < 4; ++k) partial[0] += partial[k];
    return partial[0];
}

}  // namespace

float torch_sum(const float* x, std::size_t n) {
    constexpr std::size_t lanes = 8;
    if (n == 0) return 0.0f;  // an empty tensor's data pointer may be null
    if (n < lanes) return ilp_sum(x, 1, n);
    // vectorized_inner_sum: lane l sums x[8 v + l] over the n / 8 vectors as a row_sum.
    const std::size_t vectors = n / lanes;
    float total = 0.0f;
    for (std::size_t k = vectors * lanes; k < n; ++k) total += x[k];
    for (std::size_t l = 0; l < lanes; ++l) total += ilp_sum(x + l, lanes, vectors);
    return total;
}

void column_sums(const float* x, std::size_t rows, std::size_t cols, float* out) {
    if (rows == 0) {  // x may be null
        std::fill_n(out, cols, 0.0f);
        return;
    }
    if (cols == 1) {  // a contiguous column: PyTorch reduces it as one row
        out[0] = torch_sum(x, rows);
        return;
    }
    // vectorized_outer_sum (cols >= 8): 4 vectors of 8 columns at a time; scalar_outer_sum
    // (cols < 8): 4 columns at a time. Either way those columns get a plain cascade, the others
    // a row_sum.
    const std::size_t group = cols >= 8 ? 32 : 4;
    const std::size_t grouped = cols / group * group;
    for (std::size_t c = 0; c < grouped; ++c) out[c] = cascade(x + c, cols, rows);
    for (std::size_t c = grouped; c < cols; ++c) out[c] = ilp_sum(x + c, cols, rows);
}

float lane_tree_sum(const float* l) {
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

float reduce_all_sum(const float* x, std::size_t n) {
    return reduce_all_sum_of(n, [x](std::size_t j) { return x[j]; });
}

float softmax_backward_sum(const float* dp, const float* p, std::size_t n) {
    constexpr std::size_t lanes = 8;
    if (n < lanes) {
        float s = 0.0f;
        for (std::size_t j = 0; j < n; ++j) s += dp[j] * p[j];
        return s;
    }
    std::array<float, lanes> acc{};
    for (std::size_t l = 0; l < lanes; ++l) acc[l] = dp[l] * p[l];
    for (std::size_t j = lanes; j < n; ++j) acc[j % lanes] = std::fma(dp[j], p[j], acc[j % lanes]);
    return lane_tree_sum(acc.data());
}

}  // namespace attn::detail
