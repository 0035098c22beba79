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

/// `x.T` of a 2-D tensor: `[m, n] -> [n, m]`.
/// @throws std::invalid_argument when `x` is not 2-D.
Tensor T(const Tensor& x);

/// `x.reshape(size)` / `x.contiguous().view(size)`: same elements in row-major order, new
/// shape; one entry may be `-1` (inferred).
/// @throws std::invalid_argument when the element counts differ, a size is below -1, two
/// are -1, or -1 stands beside a 0 (ambiguous, as PyTorch says); std::length_error when the
/// sizes' product overflows.
Tensor view(const Tensor& x, const std::vector<long>& size);

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

/// The matrix product under `matmul` and `nn::Linear`: row-major `C[m, n] = A[m, k] @ B`,
/// where `B` is `[k, n]`, or `[n, k]` read transposed when `transpose_b` is set (how PyTorch's
/// `addmm(bias, x, W.t())` passes a Linear weight to BLAS sgemm). Pointers to contiguous
/// float32 buffers; `C` is overwritten. No shape checks: callers check. NaN and infinities
/// propagate as in PyTorch: every product is added, so `0 * NaN` and `0 * inf` give NaN
/// (the reference BLAS's sgemm would skip a zero factor; tests/test_nan.cpp checks it).
void gemm_rowmajor(const float* A, const float* B, float* C, std::size_t m, std::size_t k,
                   std::size_t n, bool transpose_b);

/// `x.sum(dim, keepdim)`: float32 sum over one dimension. A contiguous row (the last
/// dimension) shorter than 8 is added in PyTorch's order (`row_sum`: four partial sums, then
/// the rest, then the partial sums: for 6 elements ((((x0 + x4) + x5) + x1) + x2) + x3);
/// everything else is accumulated in order.
/// @throws std::invalid_argument when `dim` is out of range.
Tensor sum(const Tensor& x, long dim, bool keepdim = false);

/// `x.sum()` of every element: a 0-d tensor, in the same order as `sum(x, -1)` of one row
/// (why chapter 1's naive softmax sums to exactly `tensor(1.)`, as PyTorch prints it).
Tensor sum(const Tensor& x);

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

// ---------------------------------------------------------------- softmax and attention

/// `torch.softmax(x, dim=-1)` over the last dimension, as PyTorch's CPU kernel computes it:
/// subtract the row maximum, exponentiate, sum, multiply by the reciprocal of the sum.
/// `-inf` entries give 0; a row of all `-inf` gives NaN (as PyTorch does: `-inf - -inf`).
/// Shape: `[..., n] -> [..., n]`.
/// @throws std::invalid_argument when `x` is 0-d.
Tensor softmax(const Tensor& x, long dim = -1);

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
/// `log(softmax(x))`, so large logits do not overflow. `-inf` entries give `-inf`; a row of
/// all `-inf` gives NaN. Shape: `[..., n] -> [..., n]`. Implemented in lib/attn/nn/loss.cpp.
/// @throws std::invalid_argument when `x` is 0-d or `dim` is not the last dimension.
Tensor log_softmax(const Tensor& x, long dim = -1);

/// `torch.nn.functional.cross_entropy(logits, targets, ignore_index)` with mean reduction:
/// the mean over the targets that are not `ignore_index` of `-log_softmax(logits)[t]`.
/// logits `[N, C]` float32, targets `[N]` int64 -> a 0-d tensor. All targets ignored gives
/// NaN (0 / 0), as PyTorch does.
/// @throws std::invalid_argument when the shapes do not fit or a target that is not
/// `ignore_index` lies outside `[0, C)`.
Tensor cross_entropy(const Tensor& logits, const LongTensor& targets,
                     std::int64_t ignore_index = -100);

}  // namespace attn
