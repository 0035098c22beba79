// LayerNorm (layer_norm.hpp): Raschka ch. 4.2, in PyTorch's float order.
#include "attn/model/layer_norm.hpp"

#include <cmath>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

LayerNorm::LayerNorm(std::size_t emb_dim_) {
    if (emb_dim_ == 0) throw std::invalid_argument("LayerNorm: expected emb_dim > 0, got 0");
    check_allocation("LayerNorm (scale [emb_dim])", Shape{emb_dim_});
    scale = xt::ones<float>(Shape{emb_dim_});
    shift = xt::zeros<float>(Shape{emb_dim_});
}

void LayerNorm::check_parameters() const {
    const Shape s = shape_of(scale);
    if (s.size() != 1 || s[0] == 0) throw_shape_error("LayerNorm (scale)", "[emb_dim], emb_dim > 0", s);
    // Neither names the width alone: a mismatch names both (PyTorch would broadcast a [1] one).
    if (shape_of(shift) != s)
        throw std::invalid_argument("LayerNorm: scale is " + shape_str(s) + " and shift " + shape_str(shape_of(shift)) +
                                    ": expected both [emb_dim], one value per feature (PyTorch would broadcast a [1] "
                                    "scale or shift; this LayerNorm does not)");
}

std::size_t LayerNorm::emb_dim() const {
    check_parameters();
    return scale.shape()[0];
}

namespace {

Shape check_rows(const LayerNorm& ln, const Tensor& x) {
    const std::size_t E = ln.emb_dim();
    const Shape s = shape_of(x);
    if (s.empty() || s.back() != E) throw_shape_error("LayerNorm", "[..., " + std::to_string(E) + "]", s);
    return s;
}

}  // namespace

void LayerNorm::forward_into(const float* x, std::size_t rows, float* y) const {
    const std::size_t E = emb_dim();
    const float* sc = scale.data();
    const float* sh = shift.data();
    const auto e = static_cast<float>(eps);  // `var + self.eps`: the Python float as a float32
    const auto count = static_cast<float>(E);
    const auto n = static_cast<long>(rows);
#pragma omp parallel for schedule(static) if (rows >= 16)
    for (long r = 0; r < n; ++r) {
        const float* xr = x + static_cast<std::size_t>(r) * E;
        float* yr = y + static_cast<std::size_t>(r) * E;
        const float mean = detail::torch_sum(xr, E) / count;             // x.mean(dim=-1)
        const float var = detail::welford_var(xr, E, 1, 0);                 // x.var(unbiased=False)
        const float denom = std::sqrt(var + e);                             // torch.sqrt(var + eps)
        for (std::size_t j = 0; j < E; ++j) yr[j] = sc[j] * ((xr[j] - mean) / denom) + sh[j];
    }
}

Tensor LayerNorm::operator()(const Tensor& x) const {
    const Shape s = check_rows(*this, x);
    Tensor y = Tensor::from_shape(s);
    forward_into(x.data(), numel(Shape(s.begin(), s.end() - 1)), y.data());
    return y;
}

const Tensor& LayerNorm::forward(const Tensor& x, Saved& saved) const {
    const Shape s = check_rows(*this, x);
    const std::size_t E = emb_dim(), rows = numel(Shape(s.begin(), s.end() - 1));
    float* xs = sized(saved.x, s, "LayerNorm (saved x)");
    std::copy_n(x.data(), x.size(), xs);
    float* mean = sized(saved.mean, {rows}, "LayerNorm (saved mean)");
    float* denom = sized(saved.denom, {rows}, "LayerNorm (saved denom)");
    float* norm = sized(saved.norm_x, s, "LayerNorm (saved norm_x)");
    float* py = sized(saved.y, s, "LayerNorm (saved y)");
    const float* sc = scale.data();
    const float* sh = shift.data();
    const auto e = static_cast<float>(eps);
    const auto count = static_cast<float>(E);
    const auto n = static_cast<long>(rows);
    // forward_into's arithmetic, keeping the row's mean, denominator and normalised values
#pragma omp parallel for schedule(static) if (rows >= 16)
    for (long r = 0; r < n; ++r) {
        const std::size_t o = static_cast<std::size_t>(r) * E;
        mean[r] = detail::torch_sum(xs + o, E) / count;
        denom[r] = std::sqrt(detail::welford_var(xs + o, E, 1, 0) + e);
        for (std::size_t j = 0; j < E; ++j) {
            norm[o + j] = (xs[o + j] - mean[r]) / denom[r];
            py[o + j] = sc[j] * norm[o + j] + sh[j];
        }
    }
    return saved.y;
}

Tensor LayerNorm::backward(const Saved& saved, const Tensor& grad_output, const Tensor* grad_x_before) {
    Tensor dx;
    backward_into(saved, grad_output, grad_x_before, dx);
    return dx;
}

void LayerNorm::backward_into(const Saved& saved, const Tensor& grad_output, const Tensor* grad_x_before, Tensor& grad_x) {
    const std::string where = "LayerNorm::backward";
    const Shape s = check_rows(*this, saved.x);
    const std::size_t E = emb_dim(), rows = numel(Shape(s.begin(), s.end() - 1));
    check_same_shape(where + " (grad_output)", s, shape_of(grad_output));
    if (grad_x_before) check_same_shape(where + " (the gradient x received before)", s, shape_of(*grad_x_before));
    check_same_shape(where + " (saved.norm_x)", s, shape_of(saved.norm_x));
    check_same_shape(where + " (saved.mean)", Shape{rows}, shape_of(saved.mean));
    check_same_shape(where + " (saved.denom)", Shape{rows}, shape_of(saved.denom));
    if (scale_grad) check_same_shape("LayerNorm (scale.grad)", shape_of(scale), shape_of(*scale_grad));
    if (shift_grad) check_same_shape("LayerNorm (shift.grad)", shape_of(shift), shape_of(*shift_grad));
    const float* g = grad_output.data();
    const float* x = saved.x.data();
    const float* norm = saved.norm_x.data();
    const float* sc = scale.data();

    // AddBackward0 and MulBackward0: the parameters' gradients, summed over the rows (sum_to).
    Tensor g_shift = Tensor::from_shape({E}), g_scale = Tensor::from_shape({E});
    detail::column_sums(g, rows, E, g_shift.data());
    {
        thread_local std::vector<float> g_norm;  // kept: a step's [rows, E] in the last step's memory
        g_norm.resize(rows * E);
        for (std::size_t i = 0; i < rows * E; ++i) g_norm[i] = g[i] * norm[i];
        detail::column_sums(g_norm.data(), rows, E, g_scale.data());
    }
    float* out = sized(grad_x, s, "LayerNorm::backward (grad_x)");
    const float* before = grad_x_before ? grad_x_before->data() : nullptr;
    const float two_over_E = static_cast<float>(2.0 / static_cast<double>(E));  // (2.0 / dof) * grad
    const auto count = static_cast<float>(E);
    const auto n = static_cast<long>(rows);
#pragma omp parallel for schedule(static) if (rows >= 16)
    for (long r = 0; r < n; ++r) {
        const std::size_t o = static_cast<std::size_t>(r) * E;
        const float mean = saved.mean.data()[r], d = saved.denom.data()[r];
        thread_local std::vector<float> g_a, t;
        g_a.resize(E);
        t.resize(E);
        for (std::size_t j = 0; j < E; ++j) {
            const float g_n = g[o + j] * sc[j];  // MulBackward0: grad * scale
            const float a = x[o + j] - mean;
            g_a[j] = g_n / d;                    // DivBackward0, self: grad / other
            t[j] = -g_n * ((a / d) / d);         // DivBackward0, other: -grad * ((self / other) / other)
        }
        const float g_d = detail::torch_sum(t.data(), E);  // sum_to [.., 1]
        const float g_v = g_d / (2.0f * d);                // SqrtBackward0: grad / (2 * result)
        const float var_scale = two_over_E * g_v;          // VarBackward0: (2 / dof) * grad, then * (x - mean)
        for (std::size_t j = 0; j < E; ++j) t[j] = -g_a[j];
        const float g_mean = detail::torch_sum(t.data(), E) / count;  // SubBackward0's -grad, sum_to; MeanBackward1: / n
        for (std::size_t j = 0; j < E; ++j) {
            const float first = before ? before[o + j] + g_a[j] : g_a[j];
            out[o + j] = (first + var_scale * (x[o + j] - mean)) + g_mean;
        }
    }
    nn::accumulate_grad(shift_grad, std::move(g_shift), "LayerNorm (shift)");
    nn::accumulate_grad(scale_grad, std::move(g_scale), "LayerNorm (scale)");
}

LayerNorm::Steps LayerNorm::forward_steps(const Tensor& x) const {
    check_rows(*this, x);
    Steps st;
    st.mean = attn::mean(x, -1, true);
    st.var = attn::var(x, -1, false, true);
    const auto e = static_cast<float>(eps);
    const Tensor denom = xt::sqrt(st.var + e);
    st.norm_x = (x - st.mean) / denom;
    st.output = scale * st.norm_x + shift;
    return st;
}

}  // namespace attn
