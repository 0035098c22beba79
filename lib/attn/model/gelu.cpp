// GELU (gelu.hpp): Raschka ch. 4.3's tanh approximation, forward and backward, with the bits of
// PyTorch 1.13's CPU kernels.
#include "attn/model/gelu.hpp"

#include <cmath>
#include <numbers>

#include <sleef.h>

// sleef.h declares the FMA variant only when compiled with FMA enabled; the library exports it.
extern "C" float Sleef_tanhf1_u10purecfma(float);

namespace attn {

namespace {

const bool gelu_has_fma = __builtin_cpu_supports("fma");

// torch.tanh: vml's vtanh maps Vectorized<float>::tanh, SLEEF's tanhf8_u10 (the FMA build of
// the AVX2 kernels), over every element, the tail included.
float tanh_torch(float u) { return gelu_has_fma ? Sleef_tanhf1_u10purecfma(u) : Sleef_tanhf1_u10purec(u); }

// torch.sqrt(torch.tensor(2.0 / torch.pi)): the Python float rounded to float32, then sqrt.
const float gelu_c = std::sqrt(static_cast<float>(2.0 / std::numbers::pi));

}  // namespace

void gelu_into(const float* x, std::size_t n, float* y) {
    for (std::size_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float p = v * v * v;             // torch.pow(x, 3)
        const float u = gelu_c * (v + 0.044715f * p);
        y[i] = (0.5f * v) * (1.0f + tanh_torch(u));
    }
}

Tensor gelu(const Tensor& x) {
    const Shape s = shape_of(x);
    Tensor y = Tensor::from_shape(s);
    gelu_into(x.data(), x.size(), y.data());
    return y;
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& x) {
    const Shape s = shape_of(x);
    check_same_shape("gelu_backward (grad_output)", s, shape_of(grad_output));
    Tensor dx = Tensor::from_shape(s);
    const float* g = grad_output.data();
    const float* xs = x.data();
    float* d = dx.data();
    for (std::size_t i = 0; i < dx.size(); ++i) {
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
    return dx;
}

}  // namespace attn
