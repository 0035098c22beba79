/// @file functional.hpp
/// @brief Stateless tensor functions with PyTorch's names and semantics: the `torch.*` and
/// `torch.nn.functional.*` calls the notebooks make.
///
/// All take and return float32 (`Tensor`), bool (`BoolTensor`) or int64 (`LongTensor`)
/// tensors in row-major order. Dimension arguments accept negative values like PyTorch.
/// Shape mismatches throw `std::invalid_argument` naming the function, the expected shape and
/// the actual one.
#pragma once

#include <optional>
#include <vector>

#include "attn/core/reduce.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// ---------------------------------------------------------------- creation

/// `torch.ones(size)`: float32 ones of the given shape.
/// @throws std::length_error naming the shape when it cannot be allocated
/// (`check_allocation`: the size calculation overflows or exceeds `max_tensor_bytes()`).
Tensor ones(const Shape& size);

/// `torch.zeros(size)`: float32 zeros of the given shape.
/// @throws std::length_error as `ones`.
Tensor zeros(const Shape& size);

/// `torch.arange(0, n)`: int64 `[0, 1, ..., n-1]`, shape `[n]`.
/// @throws std::invalid_argument when `n < 0`; std::length_error when `[n]` cannot be
/// allocated.
LongTensor arange(std::int64_t n);

// ---------------------------------------------------------------- shape

/// `x.transpose(dim0, dim1)`: swaps two dimensions (returns a contiguous copy).
/// @throws std::invalid_argument when a dim is out of range.
Tensor transpose(const Tensor& x, long dim0, long dim1);

/// The backward pass of `transpose(x, dim0, dim1)`: the same transpose of `grad_output`
/// (a transpose only moves numbers, so its gradient moves them back).
/// @throws std::invalid_argument as `transpose`.
Tensor transpose_backward(const Tensor& grad_output, long dim0, long dim1);

/// `x.T` of a 2-D tensor: `[m, n] -> [n, m]`.
/// @throws std::invalid_argument when `x` is not 2-D.
Tensor T(const Tensor& x);

/// `x.reshape(size)` / `x.contiguous().view(size)`: same elements in row-major order, new
/// shape; one entry may be `-1` (inferred).
/// @throws std::invalid_argument when the element counts differ, a size is below -1, two
/// are -1, or -1 stands beside a 0 (ambiguous, as PyTorch says); std::length_error when the
/// sizes' product overflows.
Tensor view(const Tensor& x, const std::vector<long>& size);

/// The backward pass of `view` (and of `reshape`, `contiguous().view`, the merge of heads):
/// `grad_output` seen in the input's shape `input_shape`, the same numbers in the same order.
/// @throws std::invalid_argument when the element counts differ.
Tensor view_backward(const Tensor& grad_output, const Shape& input_shape);

/// `torch.stack(tensors, dim)`: `k` tensors of equal shape `[...]` -> a new dimension of
/// size `k` at `dim`.
/// @throws std::invalid_argument when the list is empty or the shapes differ.
Tensor stack(const std::vector<Tensor>& tensors, long dim = 0);

/// `torch.cat(tensors, dim)`: joins tensors along an existing dimension; all other
/// dimensions must agree.
/// @throws std::invalid_argument when the list is empty or the other dimensions differ;
/// std::length_error when the result cannot be allocated.
Tensor cat(const std::vector<Tensor>& tensors, long dim);

/// `x[index]` along the first dimension: `[n, ...] -> [...]` (`inputs[1]`).
/// @throws std::invalid_argument when `x` is 0-d or `index` is outside `[-n, n)`.
Tensor select(const Tensor& x, long index);

/// `x[..., start:stop, ...]` along `dim` (Python slice semantics for negative indices,
/// clamped to the size).
/// @throws std::invalid_argument when `dim` is out of range.
Tensor slice(const Tensor& x, long dim, long start, long stop);

// ---------------------------------------------------------------- arithmetic and products

/// `a @ b` (`torch.matmul`) for the cases the notebooks use, computed with BLAS sgemm:
/// `[n] @ [n] -> []`, `[n] @ [n, p] -> [p]`, `[m, n] @ [n] -> [m]`,
/// `[m, n] @ [n, p] -> [m, p]`, and batched `[..., m, n] @ [..., n, p] -> [..., m, p]` with
/// the batch dimensions broadcast.
/// @throws std::invalid_argument when the inner dimensions or the batch dimensions do not fit;
/// std::length_error when the result cannot be allocated (e.g. `[m, 0] @ [0, n]` with a
/// huge `m * n`).
Tensor matmul(const Tensor& a, const Tensor& b);

/// The gradients of `matmul(a, b)` with respect to both operands.
struct MatmulGradients {
    Tensor grad_a;  ///< `dL/da`, `a`'s shape
    Tensor grad_b;  ///< `dL/db`, `b`'s shape
};

/// The backward pass of `c = matmul(a, b)` (PyTorch's `MmBackward0` / `BmmBackward0`) for
/// `a [..., m, k]`, `b [..., k, n]` with the same batch dimensions (no broadcasting) and
/// `grad_output = dL/dc [..., m, n]`: `grad_a = grad_output @ b^T` (`[..., m, k]`, summed over
/// `n` in order) and `grad_b = a^T @ grad_output` (`[..., k, n]`, summed over `m` in order),
/// the reference BLAS's sums (`attn::fast::gemm`), as PyTorch's CPU kernels sum them.
/// @throws std::invalid_argument when the operands are not at least 2-D with equal batch
/// dimensions and fitting inner sizes, or `grad_output` is not `[..., m, n]`.
MatmulGradients matmul_backward(const Tensor& grad_output, const Tensor& a, const Tensor& b);

/// The matrix product under `matmul` and `nn::Linear`: row-major `C[m, n] = A[m, k] @ B`,
/// where `B` is `[k, n]`, or `[n, k]` read transposed when `transpose_b` is set (how PyTorch's
/// `addmm(bias, x, W.t())` passes a Linear weight to BLAS sgemm). Pointers to contiguous
/// float32 buffers; `C` is overwritten. No shape checks: callers check. NaN and infinities
/// propagate as in PyTorch: every product is added, so `0 * NaN` and `0 * inf` give NaN
/// (the reference BLAS's sgemm would skip a zero factor; tests/test_nan.cpp checks it).
void gemm_rowmajor(const float* A, const float* B, float* C, std::size_t m, std::size_t k,
                   std::size_t n, bool transpose_b);

/// `x.sum(dim, keepdim)`: float32 sum over one dimension. A contiguous row (the last
/// dimension) is added in PyTorch 1.13's one-thread CPU order (`detail::torch_sum`,
/// core/reduce.hpp: for 6 elements `row_sum`'s ((((x0 + x4) + x5) + x1) + x2) + x3, longer rows
/// its vectorised cascade); a sum over another dimension is accumulated in order.
/// @throws std::invalid_argument when `dim` is out of range.
Tensor sum(const Tensor& x, long dim, bool keepdim = false);

/// `x.sum()` of every element: a 0-d tensor, in the same order as `sum(x, -1)` of one row
/// (why chapter 1's naive softmax sums to exactly `tensor(1.)`, as PyTorch prints it).
Tensor sum(const Tensor& x);

/// `torch.norm(x, p)` of every element (a vector norm over the flattened tensor), a 0-d
/// float32 tensor, for `p = 2` (the default) and `p = inf`:
/// - 2: `sqrt(sum x^2)` in PyTorch 1.13's CPU order (`detail::torch_norm2`, core/reduce.hpp:
///   8 lanes of fused multiply-adds, float32 throughout), e.g. the per-gradient norms of
///   `torch.nn.utils.clip_grad_norm_`;
/// - inf: `max |x|` (`abs().max()`: NaN when an element is NaN, with `detail::torch_max`'s bits).
/// An empty tensor's norm is 0 (PyTorch's too).
/// @throws std::invalid_argument for another `p` (PyTorch accepts any; the other orders are
/// not offered here), or `p = inf` of an empty tensor (PyTorch's `abs().max()` of nothing).
/// Source: torch/functional.py `norm` → `linalg_vector_norm`, PyTorch 1.13.
Tensor norm(const Tensor& x, double p = 2.0);

/// `x.argmax(dim)`: int64 index of the first maximum along `dim`.
/// @throws std::invalid_argument when `dim` is out of range or that dimension is empty.
LongTensor argmax(const Tensor& x, long dim = -1);

/// `torch.allclose(a, b, rtol, atol)`: `|a - b| <= atol + rtol * |b|` everywhere (NaNs are
/// never close).
/// @throws std::invalid_argument when the shapes differ.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

/// `(a - b).abs().max().item()`: the largest elementwise difference, NaN when any
/// difference is NaN (so a NaN never passes a tolerance check); 0 for empty tensors.
/// @throws std::invalid_argument when the shapes differ.
float max_abs_diff(const Tensor& a, const Tensor& b);

/// `torch.exp(x)` elementwise.
Tensor exp(const Tensor& x);

// ---------------------------------------------------------------- repeat

/// `x.repeat_interleave(repeats, dim)`: each slice along `dim` repeated `repeats` times in
/// place, `[K1, K2] -> [K1, K1, K2, K2]`. float32, any rank; `dim` may be negative.
/// @throws std::invalid_argument when `repeats` is 0 or `dim` is out of range;
/// std::length_error when the repeated size overflows or cannot be allocated (PyTorch raises
/// at once for `repeat_interleave(x, 2**62, 0)`, so does this).
Tensor repeat_interleave(const Tensor& x, std::size_t repeats, long dim);

/// `x.repeat(...)` along one dimension: the whole tensor tiled `repeats` times along `dim`,
/// `[K1, K2] -> [K1, K2, K1, K2]` (what GQA must not use). float32, any rank.
/// @throws std::invalid_argument when `repeats` is 0 or `dim` is out of range;
/// std::length_error as `repeat_interleave`.
Tensor repeat_along(const Tensor& x, std::size_t repeats, long dim);

// ---------------------------------------------------------------- masks

/// `torch.tril(x, diagonal)`: keeps `x[..., i, j]` where `j - i <= diagonal`, zeros the rest.
/// @throws std::invalid_argument when `x` has fewer than 2 dimensions.
Tensor tril(const Tensor& x, long diagonal = 0);

/// `torch.triu(x, diagonal)`: keeps `x[..., i, j]` where `j - i >= diagonal`, zeros the rest.
/// @throws std::invalid_argument when `x` has fewer than 2 dimensions.
Tensor triu(const Tensor& x, long diagonal = 0);

/// `x.bool()`: true where `x != 0`.
BoolTensor to_bool(const Tensor& x);

/// `x == value` elementwise (`tril(...) == 0`, `attention_mask == 0`).
BoolTensor eq(const Tensor& x, float value);

/// `x == value` for an int64 tensor.
BoolTensor eq(const LongTensor& x, std::int64_t value);

/// `x.float()` of a bool tensor: 1.0 where true.
Tensor to_float(const BoolTensor& x);

/// `x.masked_fill(mask, value)`: `value` where `mask` is true; `mask` broadcasts against
/// `x` (e.g. `[T, T]` over `[B, T, T]`, or `[B, 1, S]` over `[B, S, S]`). The result has
/// `x`'s shape.
/// @throws std::invalid_argument when `mask` does not broadcast to `x`'s shape.
Tensor masked_fill(const Tensor& x, const BoolTensor& mask, float value);

/// `x.masked_fill_(mask, value)`, in place, with PyTorch's rule for in-place operations: the
/// mask may broadcast, but not grow `x`. The notebook's In [36] bug is this rule firing.
/// @throws std::invalid_argument with PyTorch's message `output with shape [2, 1, 5] doesn't
/// match the broadcast shape [2, 5, 5]` when `x` and `mask` broadcast to a shape other than
/// `x`'s, and `The size of tensor a (4) must match the size of tensor b (5) at non-singleton
/// dimension 2` when they do not broadcast at all (both as PyTorch words them; PyTorch raises
/// `RuntimeError`).
Tensor& masked_fill_(Tensor& x, const BoolTensor& mask, float value);

/// The backward pass of `masked_fill(x, mask, value)` and `masked_fill_` (PyTorch's
/// `MaskedFillBackward0`): `grad_output` with zeros where `mask` is true (a filled entry no
/// longer depends on `x`). `mask` broadcasts as in the forward; the result has
/// `grad_output`'s shape.
/// @throws std::invalid_argument when `mask` does not broadcast to `grad_output`'s shape.
Tensor masked_fill_backward(const Tensor& grad_output, const BoolTensor& mask);

/// The backward pass of `x / divisor` (PyTorch's `DivBackward0` for a number): `grad_output /
/// divisor`, one float32 division per element (Raschka's `/ keys.shape[-1]**0.5`).
Tensor div_backward(const Tensor& grad_output, float divisor);

/// The backward pass of `x * multiplier` for a number (`MulBackward0`): `grad_output *
/// multiplier` (GPT-2's `* (1.0 / math.sqrt(hs))`).
Tensor mul_backward(const Tensor& grad_output, float multiplier);

// ---------------------------------------------------------------- softmax and attention

/// `torch.softmax(x, dim=-1)` over the last dimension, as PyTorch's CPU kernel computes it:
/// subtract the row maximum, exponentiate, sum, multiply by the reciprocal of the sum.
/// `-inf` entries give 0; a row of all `-inf` gives NaN (as PyTorch does: `-inf - -inf`).
/// Shape: `[..., n] -> [..., n]`. Over another dimension `dim` (negative counts from the end),
/// PyTorch's kernel for that case (`detail::softmax_inner`: its bits on one thread).
/// @throws std::invalid_argument when `x` is 0-d or `dim` is out of range.
Tensor softmax(const Tensor& x, long dim = -1);

namespace detail {
/// `torch.softmax(x, dim)` (or `torch.log_softmax` with `log`) over a dimension `dim` that
/// is not the last, as PyTorch 1.13's CPU kernel computes it on one thread (`_vec_softmax`,
/// and for `log_softmax` its general path; checked against Debian's python3-torch): for each
/// position of the dimensions after `dim` (`inner` of them), the maximum along `dim`, then
/// `exp(x - max)` summed in order along `dim` in float32, then `e / sum` (a division, not the
/// last dimension's `* (1 / sum)`) or `(x - max) - log(sum)`. Inner positions are taken 8 at a
/// time with SLEEF's `exp` (AVX2's vectors); the last `inner % 8` of each outer row take the
/// scalar path, glibc's `expf`; the log is SLEEF's for all. With several threads PyTorch may
/// split the positions between its two paths differently. `x` contiguous float32, `dim <
/// x.dimension() - 1`; an empty `x` is returned as is. Never throws.
Tensor softmax_inner(const Tensor& x, std::size_t dim, bool log);

/// `row_fn(row, n)` on every row along the last dimension of a copy of `x` (float32
/// `[..., n]`; `row` points at the row's `n` contiguous floats), which it returns: the row loop
/// of `softmax`, `log_softmax` and chapter 12's online softmax. `row_fn` reads and writes its
/// row only, so a large tensor's rows (from `detail::kParallelFloats` floats) are shared among
/// the OpenMP threads, with the same bits.
/// @throws std::invalid_argument naming `where` when `x` is 0-d.
template <class RowFn>
Tensor map_rows(const std::string& where, const Tensor& x, RowFn row_fn) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error(where, "at least 1-D", s);
    Tensor y = x;
    const std::size_t n = s.back(), rows = n ? y.size() / n : 0;
    const bool shared = y.size() >= kParallelFloats;
    float* data = y.data();
#pragma omp parallel for schedule(static) if (shared)
    for (long r = 0; r < long(rows); ++r) row_fn(data + std::size_t(r) * n, n);
    return y;
}

/// `torch.softmax(x, dim)`, or `torch.log_softmax(x, dim)` with `log`: over the last
/// dimension `row_fn(row, n)` on each row of a copy of `x` (`map_rows`), over another
/// dimension `softmax_inner`. float32 `[..., n] -> [..., n]`.
/// @throws std::invalid_argument naming `where` when `x` is 0-d or `dim` is out of range.
template <class RowFn>
Tensor softmax_along(const std::string& where, const Tensor& x, long dim, bool log, RowFn row_fn) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error(where, "at least 1-D", s);
    const std::size_t d = wrap_dim(where, dim, s.size());
    if (d != s.size() - 1) return softmax_inner(x, d, log);
    return map_rows(where, x, row_fn);
}

/// The value of a 0-d `grad_output` (the gradient of a scalar: a mean, a loss), float32.
/// @throws std::invalid_argument naming `where` when `grad_output` is not 0-d. Implemented in
/// lib/attn/core/backward.cpp.
float scalar_grad(const std::string& where, const Tensor& grad_output);

/// The backward of a softmax over the last dimension, row by row: `dx` (float32 `[..., n]`,
/// returned) with `row_fn(dy, y, dx, n)` run on each row of `grad_output` (`dy`), `output`
/// (`y`) and `dx` (`softmax_backward`, `log_softmax_backward`).
/// @throws std::invalid_argument naming `where` when `output` is 0-d or `grad_output`'s shape
/// differs from it.
template <class RowFn>
Tensor backward_rows(const std::string& where, const Tensor& grad_output, const Tensor& output, RowFn row_fn) {
    const Shape s = shape_of(output);
    if (s.empty()) throw_shape_error(where + " (output)", "at least 1-D", s);
    check_same_shape(where + " (grad_output)", s, shape_of(grad_output));
    Tensor dx = Tensor::from_shape(s);
    const std::size_t n = s.back(), rows = n ? output.size() / n : 0;
    for (std::size_t r = 0; r < rows; ++r)
        row_fn(grad_output.data() + r * n, output.data() + r * n, dx.data() + r * n, n);
    return dx;
}
}  // namespace detail

/// The backward pass of `p = softmax(x, dim=-1)` (PyTorch's `SoftmaxBackward0`), row by row:
/// the Jacobian-vector product `dx = p * (dp - sum_j dp_j p_j)` (`diag(p) - p p^T`, the
/// `[n, n]` Jacobian of the row, is never formed: its product with `dp` is this one line).
/// `grad_output = dL/dp` and `output = p`, both `[..., n]` -> `dL/dx [..., n]`. In the float
/// order of PyTorch 1.13's AVX2 kernel (`_vec_host_softmax_backward_lastdim`, checked against
/// Debian's build): the row sum of `dp * p` in order for `n < 8`; for `n >= 8` in 8 lanes
/// (key `j` in lane `j % 8`, each further product added by a fused multiply-add), the lanes
/// added as a tree, `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`; then `(dp - sum) * p`.
/// @throws std::invalid_argument when the shapes differ or are 0-d.
Tensor softmax_backward(const Tensor& grad_output, const Tensor& output);

/// Softmax over the last dimension written out as `exp(x) / sum(exp(x))`, without the
/// max subtraction: chapter 1's "naive" softmax, which overflows for large inputs.
Tensor softmax_naive(const Tensor& x);

/// Softmax over the last dimension that returns a row of zeros where every entry is `-inf`
/// (a query that may attend to nothing: the pad tokens of a left-padded batch under the causal
/// mask). Every other row is exactly `attn::softmax` (same kernel, same bits). NaN inputs stay
/// NaN. `torch.softmax` returns NaN for such rows (`-inf - -inf`); this is the fix.
/// Shape: `[..., n] -> [..., n]`.
/// @throws std::invalid_argument when `x` is 0-d.
Tensor masked_softmax(const Tensor& x);

// ---------------------------------------------------------------- loss

/// `torch.log_softmax(x, dim=-1)` over the last dimension, in the order of PyTorch's CPU
/// kernel (`_vec_log_softmax_lastdim`): `(x - max) - log(sum(exp(x - max)))`, never
/// `log(softmax(x))`, so large logits do not overflow; the sum added in the kernel's 8 vector
/// lanes and their tree, `exp` and `log` SLEEF's u10 functions (AVX2 build: PyTorch's bits).
/// `-inf` entries give `-inf`; a row of
/// all `-inf` gives NaN. Shape: `[..., n] -> [..., n]`. Over another dimension `dim`, PyTorch's
/// kernel for that case (`detail::softmax_inner`). Implemented in lib/attn/nn/loss.cpp.
/// @throws std::invalid_argument when `x` is 0-d or `dim` is out of range.
Tensor log_softmax(const Tensor& x, long dim = -1);

/// The backward pass of `y = log_softmax(x, dim=-1)` (`LogSoftmaxBackward0`), row by row:
/// `dx = dy - exp(y) * sum_j dy_j`, with PyTorch 1.13's AVX2 order (the row sum as
/// `softmax_backward`'s, without products; `dy - exp(y) * sum` as one fused multiply-add; `exp`
/// SLEEF's `expf_u10`). `grad_output = dL/dy`, `output = y`, both `[..., n]`. Implemented in
/// lib/attn/nn/loss.cpp.
/// @throws std::invalid_argument when the shapes differ or are 0-d.
Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output);

/// `torch.nn.functional.cross_entropy(logits, targets, ignore_index)` with mean reduction:
/// the mean over the targets that are not `ignore_index` of `-log_softmax(logits)[t]`.
/// logits `[N, C]` float32, targets `[N]` int64 -> a 0-d tensor. All targets ignored gives
/// NaN (0 / 0), as PyTorch does.
/// @throws std::invalid_argument when the shapes do not fit or a target that is not
/// `ignore_index` lies outside `[0, C)`.
Tensor cross_entropy(const Tensor& logits, const LongTensor& targets,
                     std::int64_t ignore_index = -100);

/// The backward pass of `cross_entropy(logits, targets, ignore_index)` (mean reduction):
/// `nll_loss`'s backward puts `-grad_output / count` at `[i, targets[i]]` for each of the
/// `count` targets that are not `ignore_index` (0 elsewhere, and on every ignored row), then
/// `log_softmax_backward` turns it into `dL/dlogits = (softmax(logits) - onehot(targets)) *
/// grad_output / count` row by row. `grad_output` is `dL/dloss`, a 0-d tensor (1 for the loss
/// itself); logits `[N, C]`, targets `[N]` -> `[N, C]`. Implemented in lib/attn/nn/loss.cpp.
/// @throws std::invalid_argument as `cross_entropy`, or when `grad_output` is not 0-d.
Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& logits,
                              const LongTensor& targets, std::int64_t ignore_index = -100);

/// `cross_entropy(logits, targets)` and `cross_entropy_backward(1, logits, targets)` in one
/// pass over the rows, the gradient written into `grad` (resized to `[N, C]` only when its
/// shape differs, so a training loop reuses its storage): the same bits as the two calls (each
/// row's `log_softmax` once, its exponentials 8 at a time where the CPU has AVX2, the rows
/// shared among the OpenMP threads), without their three `[N, C]` temporaries. Returns the loss.
/// @throws std::invalid_argument as `cross_entropy` (nothing written to `grad` then).
float cross_entropy_with_grad(const Tensor& logits, const LongTensor& targets, Tensor& grad,
                              std::int64_t ignore_index = -100);

/// `torch.nn.functional.mse_loss(input, target)` with mean reduction: the mean of
/// `(input - target)^2` over every element (sum in PyTorch's order, `detail::torch_sum`, then
/// `/ numel`). Same shapes `[...]` -> a 0-d tensor; NaN for empty tensors (0 / 0), as PyTorch.
/// Implemented in lib/attn/nn/loss.cpp.
/// @throws std::invalid_argument when the shapes differ.
Tensor mse_loss(const Tensor& input, const Tensor& target);

/// The backward pass of `mse_loss(input, target)` with respect to `input` (PyTorch's
/// `mse_loss_backward`): `(2 / numel) * (input - target) * grad_output`, `2 / numel` computed in
/// double and rounded to float32, then two float32 products. `grad_output`: 0-d.
/// @throws std::invalid_argument when the shapes differ or `grad_output` is not 0-d.
Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target);

/// `x.mean()`: the sum of every element in PyTorch's order (`detail::torch_sum`) divided by
/// their count (float32), a 0-d tensor; NaN for an empty tensor.
Tensor mean(const Tensor& x);

/// `x.mean(dim, keepdim)`: `x.sum(dim, keepdim)` (PyTorch's order, `sum`) divided by the
/// dimension's size in float32, as PyTorch 1.13's CPU `mean` computes it (`sum_out(...)
/// .div_(dim_prod)`); NaN where the dimension is empty. Raschka ch. 4.2 In [7]:
/// `out.mean(dim=-1, keepdim=True)`.
/// @throws std::invalid_argument when `dim` is out of range.
Tensor mean(const Tensor& x, long dim, bool keepdim = false);

/// `x.var(dim, unbiased, keepdim)`: the variance over one dimension, as PyTorch 1.13's CPU
/// `var` computes it (`std_var_kernel_impl`: `WelfordOps` with a double accumulator, the
/// elements taken in order, one thread): for each element `delta = x - mean`, `mean += delta
/// / n`, `m2 += delta * (x - mean)`, all in double; then `m2 / (n - 1)` (`unbiased`, Bessel's
/// correction) or `m2 / n`, rounded to float32. A divisor of 0 gives `m2 / 0` (NaN or inf, as
/// PyTorch); an empty dimension NaN. Raschka ch. 4.2: `out.var(dim=-1, keepdim=True)` and his
/// `LayerNorm`'s `x.var(dim=-1, keepdim=True, unbiased=False)`.
/// @throws std::invalid_argument when `dim` is out of range.
Tensor var(const Tensor& x, long dim, bool unbiased = true, bool keepdim = false);

/// The backward pass of `x.mean()` (`MeanBackward0`): `grad_output` (0-d) broadcast to
/// `input_shape`, divided by the element count (`grad.expand(shape) / numel`).
/// @throws std::invalid_argument when `grad_output` is not 0-d.
Tensor mean_backward(const Tensor& grad_output, const Shape& input_shape);

/// `x.pow(exponent)` element by element: `x * x` for 2 and `(x * x) * x` for 3 (PyTorch's
/// special cases, `pow_tensor_scalar_optimized_kernel`), `x` for 1, `std::pow` otherwise.
/// Shape `[...] -> [...]`.
Tensor pow(const Tensor& x, float exponent);

/// The backward pass of `x.pow(exponent)` (`PowBackward0`): `grad_output * (exponent *
/// x.pow(exponent - 1))`, in that order; zeros for exponent 0.
/// @throws std::invalid_argument when the shapes differ.
Tensor pow_backward(const Tensor& grad_output, const Tensor& x, float exponent);

}  // namespace attn
