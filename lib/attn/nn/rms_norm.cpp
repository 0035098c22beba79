// nn::RMSNorm: torch's composite rms_norm (aten/src/ATen/native/layer_norm.cpp, torch >= 2.4)
// over the last dimension, with PyTorch's order of the sum of squares.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/elementwise.hpp"
#include "attn/core/functional.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/python.hpp"

namespace attn::nn {

namespace {
void check_eps(const std::optional<double>& eps) {
    if (eps && (std::isnan(*eps) || *eps < 0.0))
        throw std::invalid_argument("RMSNorm: expected eps >= 0, got " + std::to_string(*eps));
}
}  // namespace

RMSNorm::RMSNorm(std::size_t normalized_shape, std::optional<double> eps_)
    : weight((check_eps(eps_), attn::ones({normalized_shape}))), eps(eps_) {}

std::size_t RMSNorm::normalized_shape() const {
    const Shape s = shape_of(weight);
    if (s.size() != 1) throw_shape_error("RMSNorm (weight)", "[normalized_shape]", s);
    return s[0];
}

void RMSNorm::check_parameters() const {
    if (normalized_shape() == 0) throw std::invalid_argument("RMSNorm: expected weight of at least 1 element, got [0]");
    check_eps(eps);
}

void RMSNorm::forward_into(const float* x, std::size_t rows, float* y) const {
    check_parameters();
    const std::size_t n = normalized_shape();
    const float e = eps ? static_cast<float>(*eps) : std::numeric_limits<float>::epsilon();
    const float* w = weight.data();
    thread_local std::vector<float> squares;
    if (squares.size() < n) squares.resize(n);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        for (std::size_t i = 0; i < n; ++i) squares[i] = xr[i] * xr[i];    // x.pow(2)
        const float mean = sum_torch(squares.data(), n) / static_cast<float>(n);  // .mean(-1)
        const float inv = 1.0f / std::sqrt(mean + e);                          // rsqrt(. + eps)
        for (std::size_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * w[i];       // x.mul(r).mul(w)
    }
}

Tensor RMSNorm::operator()(const Tensor& x) const {
    check_parameters();
    const Shape s = shape_of(x);
    const std::size_t n = normalized_shape();
    if (s.empty() || s.back() != n) {
        Shape expected = s.empty() ? Shape{n} : s;
        expected.back() = n;
        throw_shape_error("RMSNorm (x)", shape_str(expected), s);
    }
    Tensor y = Tensor::from_shape(s);
    forward_into(x.data(), x.size() / n, y.data());
    return y;
}

std::string RMSNorm::extra_repr() const {
    return "(" + std::to_string(normalized_shape()) + ",), eps=" + (eps ? attn::repr_float(*eps) : "None") +
           ", elementwise_affine=True";
}

}  // namespace attn::nn
