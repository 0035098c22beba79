// Elementwise functions with PyTorch 1.13's CPU bits (elementwise.hpp): the vector formula with
// SLEEF for whole blocks of 16 elements, the scalar formula with libm for the tail.
#include "attn/core/elementwise.hpp"

#include <cmath>

#include <sleef.h>

#include "attn/core/reduce.hpp"

// sleef.h declares the FMA variants only when compiled with FMA enabled; the library exports
// them, and they are chosen at run time on CPUs that have FMA (as functional.cpp does).
extern "C" float Sleef_expf1_u10purecfma(float);
extern "C" float Sleef_log1pf1_u10purecfma(float);
extern "C" float Sleef_logf1_u10purecfma(float);

namespace attn {

namespace {

const bool has_fma = __builtin_cpu_supports("fma");

float log1p_sleef(float x) { return has_fma ? Sleef_log1pf1_u10purecfma(x) : Sleef_log1pf1_u10purec(x); }

// cpu_kernel_vec's split (aten/src/ATen/native/cpu/Loops.h, vectorized_loop): blocks of
// 2 * Vectorized<float>::size() = 16 elements through `vec`, the rest through `scalar`.
constexpr std::size_t kBlock = 16;

template <class Vec, class Scalar>
void split_loop(const float* x, std::size_t n, float* y, Vec vec, Scalar scalar) {
    const std::size_t blocks = n - n % kBlock;
    for (std::size_t i = 0; i < blocks; ++i) y[i] = vec(x[i]);
    for (std::size_t i = blocks; i < n; ++i) y[i] = scalar(x[i]);
}

template <class F>
Tensor map(const Tensor& x, F into) {
    const Shape s = shape_of(x);  // refuses a shape that does not match the storage
    Tensor y = Tensor::from_shape(s);
    into(x.data(), x.size(), y.data());
    return y;
}

}  // namespace

float exp_torch(float x) { return has_fma ? Sleef_expf1_u10purecfma(x) : Sleef_expf1_u10purec(x); }

namespace detail {
// In exp_avx2.cpp, compiled with -mavx2 -mfma.
void exp_shifted_avx2(float* x, std::size_t n, float shift);
}  // namespace detail

void exp_torch_shifted(float* x, std::size_t n, float shift) {
    static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2) return detail::exp_shifted_avx2(x, n, shift);
    for (std::size_t i = 0; i < n; ++i) x[i] = exp_torch(x[i] - shift);
}

float log_torch(float x) { return has_fma ? Sleef_logf1_u10purecfma(x) : Sleef_logf1_u10purec(x); }

void sigmoid_into(const float* x, std::size_t n, float* y) {
    // vector: (0 - a).exp() + 1, reciprocal; scalar: 1 / (1 + std::exp(-a))
    split_loop(x, n, y, [](float a) { return 1.0f / (exp_torch(0.0f - a) + 1.0f); },
               [](float a) { return 1.0f / (1.0f + std::exp(-a)); });
}

void silu_into(const float* x, std::size_t n, float* y) {
    split_loop(x, n, y, [](float a) { return a / (1.0f + exp_torch(-a)); },
               [](float a) { return a / (1.0f + std::exp(-a)); });
}

void softplus_into(const float* x, std::size_t n, float* y) {
    split_loop(x, n, y, [](float a) { return a > 20.0f ? a : log1p_sleef(exp_torch(a)); },
               [](float a) { return a > 20.0f ? a : std::log1p(std::exp(a)); });
}

// The sums in PyTorch's order have one implementation, in reduce.cpp.
float sum_torch(const float* x, std::size_t n) { return detail::torch_sum(x, n); }

void sum_rows_torch(const float* x, std::size_t rows, std::size_t cols, float* out) {
    detail::outer_sum(x, rows, cols, out);
}

Tensor relu(const Tensor& x) {
    return map(x, [](const float* in, std::size_t n, float* out) {
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i] < 0.0f ? 0.0f : in[i];
    });
}

Tensor sigmoid(const Tensor& x) { return map(x, sigmoid_into); }

Tensor silu(const Tensor& x) { return map(x, silu_into); }

Tensor softplus(const Tensor& x, float beta, float threshold) {
    if (beta == 1.0f && threshold == 20.0f) return map(x, softplus_into);
    return map(x, [&](const float* in, std::size_t n, float* out) {
        split_loop(in, n, out,
                   [&](float a) { return a * beta > threshold ? a : log1p_sleef(exp_torch(a * beta)) / beta; },
                   [&](float a) { return a * beta > threshold ? a : std::log1p(std::exp(a * beta)) / beta; });
    });
}

Tensor log(const Tensor& x) {
    return map(x, [](const float* in, std::size_t n, float* out) {
        for (std::size_t i = 0; i < n; ++i) out[i] = log_torch(in[i]);
    });
}

}  // namespace attn
