#include "attn/nn/nn.hpp"

#include <cmath>

#include "attn/core/functional.hpp"

namespace attn::nn {

Linear::Linear(std::size_t in_features, std::size_t out_features, bool has_bias,
               Generator& gen) {
    // Both sizes are checked before anything is drawn or allocated.
    check_allocation("Linear (weight [out_features, in_features])",
                     Shape{out_features, in_features});
    // torch.nn.init.kaiming_uniform_(weight, a=sqrt(5)) computes its bound in double as
    // gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)); the bias uses 1 / sqrt(fan_in).
    // A weight without elements (in_features or out_features 0) is left alone and draws
    // nothing (PyTorch warns "Initializing zero-element tensors is a no-op").
    const double fan_in = static_cast<double>(in_features);
    weight = xt::zeros<float>(Shape{out_features, in_features});
    if (weight.size() != 0) {
        const double gain = std::sqrt(2.0 / (1.0 + 5.0));
        const double std_ = gain / std::sqrt(fan_in);
        const double w_bound = std::sqrt(3.0) * std_;
        attn::uniform_(weight, -w_bound, w_bound, gen);
    }
    if (has_bias) {
        // `bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0`: with in_features 0 the bias
        // still draws out_features uniforms, all scaled to 0.
        const double b_bound = in_features > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
        Tensor b = xt::zeros<float>(Shape{out_features});
        attn::uniform_(b, -b_bound, b_bound, gen);
        bias = std::move(b);
    }
}

Linear::Linear(Tensor w, std::optional<Tensor> b) : weight(std::move(w)), bias(std::move(b)) {
    check_parameters();
}

void Linear::check_parameters() const {
    check_rank("Linear (weight)", shape_of(weight), 2);
    if (bias) check_same_shape("Linear (bias)", Shape{weight.shape()[0]}, shape_of(*bias));
}

std::size_t Linear::in_features() const {
    check_rank("Linear (weight)", shape_of(weight), 2);
    return weight.shape()[1];
}

std::size_t Linear::out_features() const {
    check_rank("Linear (weight)", shape_of(weight), 2);
    return weight.shape()[0];
}

Tensor Linear::operator()(const Tensor& x) const {
    // The weight and bias are public: a caller may have replaced them, so they are checked
    // here, before anything is read.
    check_parameters();
    const Shape s = shape_of(x);
    if (s.empty() || s.back() != in_features())
        throw_shape_error("Linear", "[..., " + std::to_string(in_features()) + "]", s);
    // Fold the leading dimensions into rows: [N, in] @ W^T -> [N, out], one sgemm. The row
    // count comes from the shape, not from a division by in_features (which may be 0).
    Shape out = s;
    out.back() = out_features();
    check_allocation("Linear (output)", out);
    Tensor y = Tensor::from_shape(out);
    forward_into(x.data(), numel(Shape(s.begin(), s.end() - 1)), y.data());
    return y;
}

void Linear::forward_into(const float* x, std::size_t rows, float* y) const {
    check_parameters();
    const std::size_t in = in_features(), out = out_features();
    attn::gemm_rowmajor(x, weight.data(), y, rows, in, out, /*transpose_b=*/true);
    if (bias) {
        const float* b = bias->data();
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < out; ++j) y[i * out + j] += b[j];
    }
}

std::string repr(const Linear& layer) {
    return "Linear(in_features=" + std::to_string(layer.in_features()) +
           ", out_features=" + std::to_string(layer.out_features()) +
           ", bias=" + (layer.bias ? "True" : "False") + ")";
}

Tensor rand_parameter(std::size_t d_in, std::size_t d_out, Generator& gen) {
    return attn::rand({d_in, d_out}, gen);
}

}  // namespace attn::nn
