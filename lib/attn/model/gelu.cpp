// GELU (gelu.hpp): Raschka ch. 4.3's tanh approximation, forward and backward, with the bits of
// PyTorch 1.13's CPU kernels.
#include "attn/model/gelu.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <sleef.h>

#include "attn/core/reduce.hpp"

#include <immintrin.h>

// sleef.h declares the FMA and AVX2 variants only when compiled with them enabled; the
// library exports them.
extern "C" float Sleef_tanhf1_u10purecfma(float);
// (The AVX2 one declared for AVX2 callers: clang refuses an __m256 argument otherwise.)
extern "C" __attribute__((target("avx2,fma"))) __m256 Sleef_tanhf8_u10avx2(__m256);

namespace attn {

namespace {

const bool gelu_has_fma = __builtin_cpu_supports("fma");
const bool gelu_has_avx2 = gelu_has_fma && __builtin_cpu_supports("avx2");

// torch.tanh: vml's vtanh maps Vectorized<float>::tanh, SLEEF's tanhf8_u10 (the FMA build of
// the AVX2 kernels), over every element, the tail included.
float tanh_torch(float u) { return gelu_has_fma ? Sleef_tanhf1_u10purecfma(u) : Sleef_tanhf1_u10purec(u); }

// torch.sqrt(torch.tensor(2.0 / torch.pi)): the Python float rounded to float32, then sqrt.
const float gelu_c = std::sqrt(static_cast<float>(2.0 / std::numbers::pi));

}  // namespace

namespace {

// gelu_into's first n - n % 8 elements, 8 at a time: the same operations with AVX2, and the
// tanh PyTorch's AVX2 kernel calls itself (Sleef_tanhf8_u10avx2: the scalar FMA variant's bits).
__attribute__((target("avx2,fma"), optimize("fp-contract=off")))
std::size_t gelu_into_avx2(const float* x, std::size_t n, float* y) {
    const __m256 c = _mm256_set1_ps(gelu_c), k = _mm256_set1_ps(0.044715f), half = _mm256_set1_ps(0.5f),
                 one = _mm256_set1_ps(1.0f);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 p = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
        const __m256 u = _mm256_mul_ps(c, _mm256_add_ps(v, _mm256_mul_ps(k, p)));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, Sleef_tanhf8_u10avx2(u))));
    }
    return i;
}

void gelu_span(const float* x, std::size_t n, float* y) {
    const std::size_t done = gelu_has_avx2 ? gelu_into_avx2(x, n, y) : 0;
    for (std::size_t i = done; i < n; ++i) {
        const float v = x[i];
        const float p = v * v * v;             // torch.pow(x, 3)
        const float u = gelu_c * (v + 0.044715f * p);
        y[i] = (0.5f * v) * (1.0f + tanh_torch(u));
    }
}

// gelu_backward_span's first n - n % 8 elements, 8 at a time: the scalar loop's operations in
// its order, `1 - t * t` by one fused multiply-add as there, and SLEEF's AVX2 tanh (the scalar
// FMA variant's bits).
__attribute__((target("avx2,fma"), optimize("fp-contract=off")))
std::size_t gelu_backward_avx2(const float* g, const float* x, std::size_t n, float* d) {
    const __m256 c = _mm256_set1_ps(gelu_c), k = _mm256_set1_ps(0.044715f), half = _mm256_set1_ps(0.5f),
                 one = _mm256_set1_ps(1.0f), three = _mm256_set1_ps(3.0f);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i), gi = _mm256_loadu_ps(g + i);
        const __m256 vv = _mm256_mul_ps(v, v);
        const __m256 t = Sleef_tanhf8_u10avx2(_mm256_mul_ps(c, _mm256_add_ps(v, _mm256_mul_ps(k, _mm256_mul_ps(vv, v)))));
        const __m256 g_a = _mm256_mul_ps(gi, _mm256_add_ps(one, t));
        const __m256 g_b = _mm256_mul_ps(gi, _mm256_mul_ps(half, v));
        const __m256 g_u = _mm256_mul_ps(g_b, _mm256_fnmadd_ps(t, t, one));
        const __m256 g_v = _mm256_mul_ps(g_u, c);
        const __m256 g_p = _mm256_mul_ps(_mm256_mul_ps(g_v, k), _mm256_mul_ps(three, vv));
        _mm256_storeu_ps(d + i, _mm256_add_ps(_mm256_add_ps(g_v, g_p), _mm256_mul_ps(g_a, half)));
    }
    return i;
}

void gelu_backward_span(const float* g, const float* xs, std::size_t n, float* d) {
    const std::size_t done = gelu_has_avx2 ? gelu_backward_avx2(g, xs, n, d) : 0;
    for (std::size_t i = done; i < n; ++i) {
        const float v = xs[i];
        const float t = tanh_torch(gelu_c * (v + 0.044715f * (v * v * v)));
        const float g_a = g[i] * (1.0f + t);                // MulBackward0: grad * other
        const float g_b = g[i] * (0.5f * v);                // MulBackward0: grad * self
        // TanhBackward0, `a * (1 - b * b)`: PyTorch's AVX2 kernel is compiled with FMA, and
        // GCC fuses its `one_vec - b * b` into one rounding (checked on 4,100 inputs).
        const float g_u = g_b * std::fma(-t, t, 1.0f);
        const float g_v = g_u * gelu_c;                     // MulBackward0 by c
        const float g_p = (g_v * 0.044715f) * (3.0f * (v * v));  // MulBackward0, PowBackward0
        d[i] = (g_v + g_p) + g_a * 0.5f;                    // x's buffer, in the engine's order
    }
}

// Elementwise work on n floats in chunks of whole AVX2 vectors, shared among OpenMP's threads
// when there are many (a feed-forward layer's 512 x 3072): each element is computed alone, so
// the bits do not depend on the split.
constexpr std::size_t kGeluChunk = 8192;

template <class F>
void gelu_chunks(std::size_t n, F&& f) {
    const std::size_t chunks = (n + kGeluChunk - 1) / kGeluChunk;
#pragma omp parallel for schedule(static) if (n >= detail::kParallelFloats)
    for (std::size_t q = 0; q < chunks; ++q) f(q * kGeluChunk, std::min(kGeluChunk, n - q * kGeluChunk));
}

}  // namespace

void gelu_into(const float* x, std::size_t n, float* y) {
    gelu_chunks(n, [&](std::size_t i, std::size_t len) { gelu_span(x + i, len, y + i); });
}

Tensor gelu(const Tensor& x) {
    const Shape s = shape_of(x);
    Tensor y = Tensor::from_shape(s);
    gelu_into(x.data(), x.size(), y.data());
    return y;
}

void gelu_backward_into(const float* grad_output, const float* x, std::size_t n, float* grad_input) {
    gelu_chunks(n, [&](std::size_t i, std::size_t len) {
        gelu_backward_span(grad_output + i, x + i, len, grad_input + i);
    });
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& x) {
    const Shape s = shape_of(x);
    check_same_shape("gelu_backward (grad_output)", s, shape_of(grad_output));
    Tensor dx = Tensor::from_shape(s);
    gelu_backward_into(grad_output.data(), x.data(), dx.size(), dx.data());
    return dx;
}

}  // namespace attn
