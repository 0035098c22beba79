/// @file elementwise.hpp
/// @brief The elementwise functions of `torch` and `torch.nn.functional` that gates and
/// activations use (`torch.relu`, `torch.sigmoid`, `F.silu`, `F.softplus`, `torch.log`), with
/// the bits of PyTorch 1.13's CPU kernels (AVX2 build, one thread, no MKL: Debian's
/// python3-torch).
///
/// Why the bits depend on the position: PyTorch runs such a function through `cpu_kernel_vec`,
/// which takes a contiguous tensor 16 elements at a time (two vectors of 8) with the vector
/// formula, whose `exp` and `log1p` are SLEEF's (`Sleef_expf8_u10`, `Sleef_log1pf8_u10`), and
/// the last `n mod 16` elements with the scalar formula, whose `std::exp` and `std::log1p` are
/// glibc's. The two agree to within an ulp and sometimes differ in the last bit, so each
/// function here does the same: SLEEF for the leading multiple of 16, libm for the tail.
/// `torch.log` and `torch.exp` go through PyTorch's `vml` kernels instead, which use SLEEF for
/// every element (`exp_torch` below; functional.hpp's `attn::exp` still calls std::exp).
///
/// All take a float32 tensor of any shape, in row-major order, and return one of the same
/// shape; NaN in gives NaN out.
#pragma once

#include <cstddef>

#include "attn/core/tensor.hpp"

namespace attn {

/// `torch.relu(x)` (`clamp_min(x, 0)`): `x < 0 ? 0 : x`, so `-0.0` and NaN pass through.
/// @throws std::invalid_argument when the shape does not match the storage.
Tensor relu(const Tensor& x);

/// `torch.sigmoid(x)`: `1 / (1 + exp(-x))`, as PyTorch's `sigmoid_kernel` computes it (see
/// the file comment for which `exp`).
/// @throws std::invalid_argument when the shape does not match the storage.
Tensor sigmoid(const Tensor& x);

/// `F.silu(x)`: `x / (1 + exp(-x))`, as PyTorch's `silu_kernel` computes it (not
/// `x * sigmoid(x)`, which rounds differently).
/// @throws std::invalid_argument when the shape does not match the storage.
Tensor silu(const Tensor& x);

/// `F.softplus(x, beta, threshold)`: `x` where `x * beta > threshold`, else
/// `log1p(exp(x * beta)) / beta`, as PyTorch's `softplus_kernel` computes it.
/// @throws std::invalid_argument when the shape does not match the storage.
Tensor softplus(const Tensor& x, float beta = 1.0f, float threshold = 20.0f);

/// `torch.log(x)`: SLEEF's `logf_u10` for every element (PyTorch's `vml::vlog`). `log(0)` is
/// `-inf`, the log of a negative number NaN.
/// @throws std::invalid_argument when the shape does not match the storage.
Tensor log(const Tensor& x);

/// One float as `torch.exp` of a tensor computes it: SLEEF's `expf_u10` (the FMA variant on
/// CPUs that have FMA, as PyTorch's AVX2 kernels).
float exp_torch(float x);

/// `x[i] = exp_torch(x[i] - shift)` for `n` contiguous floats (a softmax row's
/// `exp(x - max)`), bit for bit; on CPUs with AVX2 and FMA 8 at a time by SLEEF's 8-lane
/// `expf_u10`, as PyTorch's kernel (each lane's bits are the one-lane function's). Never throws.
void exp_torch_shifted(float* x, std::size_t n, float shift);

/// One float as `torch.log` of a tensor computes it: SLEEF's `logf_u10` (the FMA variant on
/// CPUs that have FMA, as PyTorch's AVX2 kernels). `log(0)` is `-inf`, the log of a negative
/// number NaN. Never throws.
float log_torch(float x);

/// `y[i] = sigmoid(x[i])` for `n` contiguous floats, the elements counted from the start of the
/// tensor PyTorch would see (so the tail rule of the file comment applies to `n`), into given
/// memory (`y` may be `x`): the workspace form of `sigmoid`.
void sigmoid_into(const float* x, std::size_t n, float* y);

/// `y[i] = silu(x[i])` for `n` contiguous floats, as `sigmoid_into`.
void silu_into(const float* x, std::size_t n, float* y);

/// `y[i] = softplus(x[i])` (beta 1, threshold 20) for `n` contiguous floats, as `sigmoid_into`.
void softplus_into(const float* x, std::size_t n, float* y);

// ---------------------------------------------------------------- sums in PyTorch's order

/// `x.sum(-1)` of one contiguous row of `n` floats, added in the order of PyTorch's CPU sum
/// (`cascade_sum` in aten/src/ATen/native/cpu/SumKernel.cpp). A row shorter than 8 goes
/// through `row_sum`: seen as `[n / 4, 4]`, each column accumulated down the rows, the
/// leftover `n mod 4` values added to column 0, then the columns added in order (for 6 values
/// `((((x0 + x4) + x5) + x1) + x2) + x3`). A longer row: `row_sum` over its whole 8-float
/// vectors, lane by lane, then `0 +` the leftover `n mod 8` values `+` the 8 lanes in order.
/// (Every accumulation runs in `multi_row_sum`'s levels: blocks of 16 added in order, the
/// blocks' sums carried upwards.)
float sum_torch(const float* x, std::size_t n);

/// `x.sum(dim=0)` of a contiguous row-major `[rows, cols]` block: a sum over a strided
/// dimension with contiguous output, such as `(S * k.unsqueeze(-1)).sum(dim=-2)`. `out[j]` is
/// column `j` added in PyTorch's order for it: with `cols >= 8` (`vectorized_outer_sum`) the
/// columns in whole blocks of 32 accumulate down all rows (in `multi_row_sum`'s levels), the
/// rest by `row_sum` as in `sum_torch`; with `cols < 8` (`scalar_outer_sum`) the same with
/// blocks of 4. `out` has `cols` floats.
void sum_rows_torch(const float* x, std::size_t rows, std::size_t cols, float* out);

}  // namespace attn
