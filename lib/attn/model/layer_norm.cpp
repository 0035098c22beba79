// LayerNorm (layer_norm.hpp): Raschka ch. 4.2, in PyTorch's float order.
#include "attn/model/layer_norm.hpp"

#include <cmath>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"

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
    check_same_shape("LayerNorm (shift)", s, shape_of(shift));
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
