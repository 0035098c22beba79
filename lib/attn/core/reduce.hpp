/// @file reduce.hpp
/// @brief Sums in the order of PyTorch 1.13's CPU `sum` (`cascade_sum` in
/// aten/src/ATen/native/cpu/SumKernel.cpp, AVX2 build, one thread), for the backward passes and
/// losses that must give PyTorch's bits: a bias gradient is `grad.sum(0)`, a mean is
/// `sum / numel`; and the sum of two gradients, `grad += g` (`add_into`).
///
/// PyTorch's order, which these functions reproduce step for step (checked against Debian's
/// python3-torch 1.13.1 on random sizes up to 10^5 elements):
/// - `multi_row_sum`: rows added one by one into level 0; every `2^p` rows (`p = max(4,
///   ceil(log2 n) / 4)`) level 0 is folded into level 1, and so on up 4 levels (a cascade
///   that bounds the rounding error); at the end the levels are added into level 0;
/// - `row_sum`: 4 partial sums (rows `4i + k` into partial `k`, each a `multi_row_sum`), the
///   leftover rows added to partial 0, then `((p0 + p1) + p2) + p3`;
/// - a contiguous sum of `n >= 8` floats is a `row_sum` of `n / 8` vectors of 8 lanes; the
///   `n % 8` leftover floats are summed first, then the 8 lanes added to them in order;
/// - a column sum `x.sum(0)` of `[rows, cols]` runs `multi_row_sum` on groups of 32 columns
///   (or 4 when `cols < 8`), `row_sum` on the rest.
/// With several threads PyTorch splits large sums (over 32768 elements) differently; these are
/// its one-thread bits.
#pragma once

#include <cstddef>
#include <vector>

namespace attn::detail {

/// Floats from which an elementwise pass or a scan is shared among the OpenMP threads (2^18,
/// 1 MB: waking the threads costs microseconds, a pass over 1 MB tens of them). Used by this
/// file's passes and by `read_buffer`'s scan of a mask.
inline constexpr std::size_t kParallelFloats = std::size_t{1} << 18;

/// `x.sum()` of `n` contiguous float32 values in PyTorch's CPU order (see the file comment);
/// 0 for `n == 0`.
float torch_sum(const float* x, std::size_t n);

/// `torch.norm(x)` (p = 2) of `n` contiguous float32 values as PyTorch 1.13's CPU kernel
/// computes it: the vectorised path of `norm_kernel_tensor_iterator_impl`
/// (aten/src/ATen/native/cpu/ReduceOpsKernel.cpp, AVX2 build), taken for every contiguous
/// float32 tensor reduced whole, on one thread whatever the thread count (it parallelises over
/// outputs, and there is one). Order, found by testing candidate orders against Debian's
/// python3-torch 1.13.1 on sizes 0 to 2.4 million (7,461 vectors, every value alike):
/// - 8 float32 lanes: lane `l` accumulates `x[8 v + l]` over the `n / 8` vectors, each by a
///   fused multiply-add (`acc_vec += data_vec * data_vec`, contracted by the compiler);
/// - the lanes added in order, `((acc0 + acc1) + acc2) + ... + acc7`;
/// - the `n % 8` leftover values added in order: when there are 4 or more, the first 4 as
///   `acc + round(x * x)` (the compiler vectorised that part of the scalar loop by 4 lanes,
///   products then in-order adds), the rest by fused multiply-adds;
/// - `sqrtf` of the sum.
/// 0 for `n == 0`; NaN and infinities propagate (`x * x` overflows to inf above ~1.8e19).
float torch_norm2(const float* x, std::size_t n);

/// `x.max()` (or `x.abs().max()` with `absolute`) of `n >= 1` contiguous float32 values as
/// PyTorch 1.13's CPU kernel computes it on one thread (`max_all_kernel_impl`: `vec::reduce_all`
/// with AVX2's `maximum`, aten/src/ATen/native/cpu/ReduceAllOpsKernel.cpp), which decides which
/// zero a tie of `-0` and `+0` gives and which NaN comes out: `maximum(a, b)` is `a > b ? a : b`
/// (`_mm256_max_ps`), and on a NaN the NaN whose bits are all ones (`0xffffffff`: the unordered
/// comparison's mask ORed in). Fewer than 8 values are reduced in order, `m = maximum(m, x[i])`
/// (one value is itself, NaN payload and all); otherwise 8 lanes, lane `l` starting at `x[l]`
/// and taking `x[8 v + l]` by `maximum`, the leftover values into the first lanes, then the lanes
/// reduced as `maximum(maximum(maximum(l0, l4), maximum(l2, l6)), maximum(maximum(l1, l5),
/// maximum(l3, l7)))`. Checked against Debian's python3-torch 1.13.1 (zeros of both signs,
/// NaNs of any sign at every position, sizes 1 to 40000). With several threads PyTorch also
/// splits inputs of over 32768 values, which can only change which zero a tie gives. Needs
/// `n >= 1`.
float torch_max(const float* x, std::size_t n, bool absolute = false);

/// The variance of `n` float32 values `x[0], x[stride], ...` as PyTorch 1.13's CPU `var`
/// computes it (`WelfordOps`, double accumulator, in order; see `attn::var`), divided by
/// `n - correction` (0 when that is not positive), rounded to float32.
float welford_var(const float* x, std::size_t n, std::size_t stride, std::size_t correction);

/// `x.sum(0)` of a row-major `[rows, cols]` float32 matrix into `out [cols]`, in PyTorch's
/// CPU order (see the file comment): `outer_sum`, except that a single column (`cols == 1`,
/// contiguous) is summed as one row (`torch_sum`), as PyTorch coalesces it; zeros for
/// `rows == 0`. Never throws.
void column_sums(const float* x, std::size_t rows, std::size_t cols, float* out);

/// PyTorch's sum over the rows of a row-major `[rows, cols]` float32 block with a contiguous
/// output (`vectorized_outer_sum` for `cols >= 8`, `scalar_outer_sum` below), into
/// `out [cols]`: the columns in whole groups of 32 (of 4 when `cols < 8`) each a
/// `multi_row_sum` down all rows, the others a `row_sum`. Large blocks (from 2^18 floats) are
/// shared among the OpenMP threads by blocks of columns (each column's order unchanged).
/// Zeros for `rows == 0` (`x` may then be null). Never throws.
void outer_sum(const float* x, std::size_t rows, std::size_t cols, float* out);

/// One dimension of a strided view for `strided_sum`: its size, its stride in elements, and
/// whether the sum runs over it.
struct SumDim {
    std::size_t size = 0;    ///< elements along the dimension
    std::size_t stride = 0;  ///< elements from one index to the next
    bool reduced = false;    ///< summed over (else kept in the output)
};

/// `x.sum(dims)` of a strided float32 view (PyTorch's `sum_to` of a gradient that arrives as a
/// transposed view), in the order PyTorch 1.13's TensorIterator reduction gives it on one
/// thread: size-1 dimensions dropped; the reduced dimensions moved first and every group
/// sorted by stride (`reorder_dimensions`); neighbours merged where the strides allow
/// (`coalesce_dimensions`); then `cascade_sum` on the first two dimensions (a contiguous row of
/// 8 or more: `torch_sum`'s order; contiguous columns: `column_sums`'s; otherwise a plain or
/// 4-column cascade), each result added into its output, which starts at 0, the outer
/// dimensions in order. `out`: the kept dimensions, contiguous in the order given (one 0-d
/// value when every dimension is reduced); zeros when a size is 0. At most 4 dimensions.
void strided_sum(const float* x, const std::vector<SumDim>& dims, float* out);

/// `sum_j dp[j] * p[j]` of one row of `n` floats in the order of PyTorch 1.13's softmax
/// backward (`vec::map2_reduce_all` of the AVX2 build, checked against Debian's python3-torch):
/// for `n < 8` the products rounded, then added in order; for `n >= 8` lane `l` of 8 holds
/// key `l`'s product, then adds key `j`'s (`j % 8 == l`) by a fused multiply-add; the lanes
/// then added as a tree, `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`.
float softmax_backward_sum(const float* dp, const float* p, std::size_t n);

/// The 8-lane tree of `softmax_backward_sum` (AVX2's `vec_reduce_all`):
/// `((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))`.
float lane_tree_sum(const float* lanes);

/// `vec::reduce_all` of a row of `n` floats with `+` (PyTorch 1.13, AVX2 build), as
/// `_vec_softmax_lastdim` sums a row's exponentials and the cross-entropy backward its
/// gradient: below 8 elements added in order; otherwise 8 lanes (lane `l` adds `x[j]`,
/// `j % 8 == l`, in order), then the lanes' tree (`lane_tree_sum`). `x`: `[n]` contiguous
/// float32 (may be null when `n == 0`: the sum is then 0). Never throws.
float reduce_all_sum(const float* x, std::size_t n);

/// `into[i] = into[i] + from[i]` for `i < n` (float32, contiguous): autograd's accumulation of
/// a gradient, `grad += g`, one rounding per element as PyTorch's `add_`. From 2^18 floats
/// (1 MB) the elements are shared among the OpenMP threads (the bits do not depend on it).
/// Never throws.
void add_into(float* into, const float* from, std::size_t n);

/// `x[i] = +0` for `i < n` (float32): `grad.zero_()`, shared among the threads as `add_into`.
/// Never throws.
void zero_fill(float* x, std::size_t n);

/// `reduce_all_sum` of `term(0), ..., term(n - 1)`, each term computed where it is added (as
/// `vec::map_reduce_all` maps then sums: `_vec_log_softmax_lastdim`'s `exp(x - max)`).
/// `term`: `std::size_t -> float`. 0 for `n == 0`.
template <class Term>
float reduce_all_sum_of(std::size_t n, Term term) {
    constexpr std::size_t lanes = 8;
    float acc[lanes] = {};
    if (n < lanes) {
        for (std::size_t j = 0; j < n; ++j) acc[0] += term(j);
        return acc[0];
    }
    for (std::size_t l = 0; l < lanes; ++l) acc[l] = term(l);
    for (std::size_t j = lanes; j < n; ++j) acc[j % lanes] += term(j);
    return lane_tree_sum(acc);
}

}  // namespace attn::detail
