// attn::detail::torch_sum and column_sums (reduce.hpp): PyTorch's cascade sum. PyTorch runs
// several columns (or vector lanes) in lockstep; each column's additions depend only on its own
// values, so any grouping of the columns (one at a time, 32 in lockstep, blocks of columns on
// different threads) gives the same bits.
#include "attn/core/reduce.hpp"

#include <algorithm>
#include <array>
#include <bit>
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

// multi_row_sum for the columns c < w (w <= W) of x (row stride `stride`, n rows) in
// lockstep, as PyTorch runs a group of columns: each column's additions in its order, run
// across the columns, so that one pass reads whole rows (one column at a time would read one
// float of every cache line, of a matrix larger than the cache, W times over).
template <std::size_t W>
void cascade_columns(const float* x, std::size_t stride, std::size_t n, std::size_t w, float* out) {
    constexpr std::size_t levels = 4;
    const std::size_t power = std::max<std::size_t>(4, ceil_log2(n) / levels);
    const std::size_t step = std::size_t{1} << power, mask = step - 1;
    float acc[levels][W] = {};
    const auto add_row = [&](std::size_t i) {
        for (std::size_t c = 0; c < w; ++c) acc[0][c] += x[i * stride + c];
    };
    std::size_t i = 0;
    while (i + step <= n) {
        for (std::size_t j = 0; j < step; ++j, ++i) add_row(i);
        for (std::size_t j = 1; j < levels; ++j) {
            for (std::size_t c = 0; c < w; ++c) {
                acc[j][c] += acc[j - 1][c];
                acc[j - 1][c] = 0.0f;
            }
            if ((i & (mask << (j * power))) != 0) break;
        }
    }
    for (; i < n; ++i) add_row(i);
    for (std::size_t c = 0; c < w; ++c) {
        float total = acc[0][c];
        for (std::size_t j = 1; j < levels; ++j) total += acc[j][c];
        out[c] = total;
    }
}

// multi_row_sum for one column: element i at x[i * stride], i < n.
float cascade(const float* x, std::size_t stride, std::size_t n) {
    float out = 0.0f;
    cascade_columns<1>(x, stride, n, 1, &out);
    return out;
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

void outer_sum(const float* x, std::size_t rows, std::size_t cols, float* out) {
    if (rows == 0) {  // x may be null
        std::fill_n(out, cols, 0.0f);
        return;
    }
    // vectorized_outer_sum (cols >= 8): 4 vectors of 8 columns at a time; scalar_outer_sum
    // (cols < 8): 4 columns at a time. Either way those columns get a plain cascade, the others
    // a row_sum.
    constexpr std::size_t block = 32;
    const std::size_t group = cols >= 8 ? 32 : 4;
    const std::size_t grouped = cols / group * group;
    const long blocks = static_cast<long>((grouped + block - 1) / block);
    // The blocks of columns are independent: a large matrix is shared among the threads.
#pragma omp parallel for schedule(static) if (double(rows) * double(cols) >= double(kParallelFloats))
    for (long b = 0; b < blocks; ++b) {
        const std::size_t c0 = std::size_t(b) * block;
        cascade_columns<block>(x + c0, cols, rows, std::min(block, grouped - c0), out + c0);
    }
    for (std::size_t c = grouped; c < cols; ++c) out[c] = ilp_sum(x + c, cols, rows);
}

void column_sums(const float* x, std::size_t rows, std::size_t cols, float* out) {
    if (cols == 1 && rows > 0) {  // a contiguous column: PyTorch reduces it as one row
        out[0] = torch_sum(x, rows);
        return;
    }
    outer_sum(x, rows, cols, out);
}

namespace {

// TensorIterator's reorder_dimensions for one reduction (operands: the output, then the
// input): -1 keeps dim0 before dim1, 1 swaps them, 0 has no preference.
int should_swap(const SumDim& a, std::size_t out_a, const SumDim& b, std::size_t out_b) {
    if ((out_a == 0) != (out_b == 0)) return out_b == 0 ? 1 : -1;  // reduced dimensions first
    if (out_a != 0 && out_b != 0) {
        if (out_a != out_b) return out_a < out_b ? -1 : 1;
        if (a.size > b.size) return 1;
    }
    if (a.stride != 0 && b.stride != 0) {
        if (a.stride != b.stride) return a.stride < b.stride ? -1 : 1;
        if (a.size > b.size) return 1;
    }
    return 0;
}

// cascade_sum's 2-D loop: dims (size0, s0, o0) and (size1, s1, o1), o the output strides
// (0 for a reduced dimension); every result added into out[j * o].
void reduce_2d(const float* x, float* out, std::size_t size0, std::size_t s0, std::size_t o0,
               std::size_t size1, std::size_t s1, std::size_t o1) {
    if (o0 != 0 && o1 == 0) {  // the reduction first
        std::swap(size0, size1);
        std::swap(s0, s1);
        std::swap(o0, o1);
    }
    if (o0 != 0) {  // not a reduction: copied (added to 0)
        for (std::size_t j = 0; j < size1; ++j)
            for (std::size_t i = 0; i < size0; ++i) out[i * o0 + j * o1] += x[i * s0 + j * s1];
        return;
    }
    constexpr std::size_t lanes = 8;
    for (std::size_t j = 0; j < size1; ++j) {
        const float* row = x + j * s1;
        float v = 0.0f;
        if (s0 == 1 && size0 >= lanes) {
            v = torch_sum(row, size0);  // vectorized_inner_sum
        } else if (s1 == 1 && size1 >= lanes) {  // vectorized_outer_sum: 4 vectors at a time
            v = j < size1 / 32 * 32 ? cascade(row, s0, size0) : ilp_sum(row, s0, size0);
        } else if (s0 < s1) {  // scalar_inner_sum
            v = ilp_sum(row, s0, size0);
        } else {  // scalar_outer_sum: 4 columns at a time
            v = j < size1 / 4 * 4 ? cascade(row, s0, size0) : ilp_sum(row, s0, size0);
        }
        out[j * o1] += v;
    }
}

}  // namespace

void strided_sum(const float* x, const std::vector<SumDim>& dims, float* out) {
    // The output: the kept dimensions, contiguous in the order given.
    std::vector<std::size_t> out_stride(dims.size(), 0);
    std::size_t n_out = 1, total = 1;
    for (std::size_t i = dims.size(); i-- > 0;) {
        total *= dims[i].size;
        if (!dims[i].reduced) {
            out_stride[i] = n_out;
            n_out *= dims[i].size;
        }
    }
    std::fill_n(out, n_out, 0.0f);
    if (total == 0) return;
    // Size-1 dimensions dropped; TensorIterator's order: it starts from the last dimension.
    std::vector<std::size_t> perm;
    for (std::size_t i = dims.size(); i-- > 0;)
        if (dims[i].size != 1) perm.push_back(i);
    for (std::size_t i = 1; i < perm.size(); ++i)
        for (std::size_t d1 = i, d0 = i; d0-- > 0;) {
            const int c = should_swap(dims[perm[d0]], out_stride[perm[d0]], dims[perm[d1]], out_stride[perm[d1]]);
            if (c > 0) {
                std::swap(perm[d0], perm[d1]);
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    struct D { std::size_t size, stride, out; };
    std::vector<D> d;
    for (std::size_t i : perm) {
        const D next{dims[i].size, dims[i].stride, out_stride[i]};
        if (!d.empty() && d.back().size * d.back().stride == next.stride &&
            d.back().size * d.back().out == next.out) {
            d.back().size *= next.size;  // coalesced
        } else {
            d.push_back(next);
        }
    }
    while (d.size() < 2) d.push_back({1, 0, 0});
    // The outer dimensions (third and beyond), the third fastest.
    std::size_t outer = 1;
    for (std::size_t i = 2; i < d.size(); ++i) outer *= d[i].size;
    for (std::size_t o = 0; o < outer; ++o) {
        std::size_t rest = o, xo = 0, oo = 0;
        for (std::size_t i = 2; i < d.size(); ++i) {
            const std::size_t k = rest % d[i].size;
            rest /= d[i].size;
            xo += k * d[i].stride;
            oo += k * d[i].out;
        }
        reduce_2d(x + xo, out + oo, d[0].size, d[0].stride, d[0].out, d[1].size, d[1].stride, d[1].out);
    }
}

void add_into(float* into, const float* from, std::size_t n) {
    const long count = static_cast<long>(n);
#pragma omp parallel for schedule(static) if (n >= kParallelFloats)
    for (long i = 0; i < count; ++i) into[i] = into[i] + from[i];
}

void zero_fill(float* x, std::size_t n) {
    const long count = static_cast<long>(n);
#pragma omp parallel for schedule(static) if (n >= kParallelFloats)
    for (long i = 0; i < count; ++i) x[i] = 0.0f;
}

float lane_tree_sum(const float* l) {
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// torch_norm2 (reduce.hpp): compiled for CPUs with FMA too, where std::fma is one instruction
// and the 8 lanes become one vector (the same bits: the lanes are independent, every fused
// multiply-add is written, nothing else is contracted).
__attribute__((target_clones("arch=x86-64-v3", "default"), optimize("fp-contract=off")))
float torch_norm2(const float* x, std::size_t n) {
    constexpr std::size_t lanes = 8;
    float acc[lanes] = {};
    const std::size_t vectors_end = n - n % lanes;
    for (std::size_t d = 0; d < vectors_end; d += lanes)
        for (std::size_t l = 0; l < lanes; ++l) acc[l] = std::fma(x[d + l], x[d + l], acc[l]);
    float total = acc[0];
    for (std::size_t l = 1; l < lanes; ++l) total = total + acc[l];
    const std::size_t by_four_end = vectors_end + (n - vectors_end) / 4 * 4;
    std::size_t d = vectors_end;
    for (; d < by_four_end; ++d) {
        const float square = x[d] * x[d];
        total = total + square;
    }
    for (; d < n; ++d) total = std::fma(x[d], x[d], total);
    return std::sqrt(total);
}

float torch_max(const float* x, std::size_t n, bool absolute) {
    const auto value = [&](std::size_t i) { return absolute ? std::fabs(x[i]) : x[i]; };
    // maximum(a, b): _mm256_max_ps (a > b ? a : b, so b on a tie of zeros) ORed with the
    // unordered mask (all ones on a NaN)
    const auto maximum = [](float a, float b) {
        if (std::isnan(a) || std::isnan(b)) return std::bit_cast<float>(std::uint32_t{0xffffffff});
        return a > b ? a : b;
    };
    constexpr std::size_t lanes = 8;
    if (n < lanes) {  // the loaded lanes reduced into lane 0 in order
        float m = value(0);
        for (std::size_t i = 1; i < n; ++i) m = maximum(m, value(i));
        return m;
    }
    float acc[lanes];
    for (std::size_t l = 0; l < lanes; ++l) acc[l] = value(l);
    std::size_t d = lanes;
    for (; d < n - n % lanes; d += lanes)
        for (std::size_t l = 0; l < lanes; ++l) acc[l] = maximum(acc[l], value(d + l));
    for (std::size_t l = 0; d + l < n; ++l) acc[l] = maximum(acc[l], value(d + l));  // the tail's lanes
    // the lanes reduced by shuffles: halves, then pairs, then neighbours
    return maximum(maximum(maximum(acc[0], acc[4]), maximum(acc[2], acc[6])),
                   maximum(maximum(acc[1], acc[5]), maximum(acc[3], acc[7])));
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
