#include "attn/nn.hpp"

#include <cmath>

#include "attn/functional.hpp"

namespace attn::nn {

Linear::Linear(std::size_t in_features, std::size_t out_features, bool has_bias,
               Generator& gen) {
    if (in_features == 0 || out_features == 0) {
        throw std::invalid_argument("Linear: expected in_features and out_features > 0, got " +
                                    std::to_string(in_features) + " and " +
                                    std::to_string(out_features));
    }
    // torch.nn.init.kaiming_uniform_(weight, a=sqrt(5)) computes its bound in double as
    // gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)); the bias uses 1 / sqrt(fan_in).
    const double fan_in = static_cast<double>(in_features);
    const double gain = std::sqrt(2.0 / (1.0 + 5.0));
    const double std_ = gain / std::sqrt(fan_in);
    const double w_bound = std::sqrt(3.0) * std_;
    weight = xt::zeros<float>(Shape{out_features, in_features});
    attn::uniform_(weight, -w_bound, w_bound, gen);
    if (has_bias) {
        const double b_bound = 1.0 / std::sqrt(fan_in);
        Tensor b = xt::zeros<float>(Shape{out_features});
        attn::uniform_(b, -b_bound, b_bound, gen);
        bias = std::move(b);
    }
}

Linear::Linear(Tensor w, std::optional<Tensor> b) : weight(std::move(w)), bias(std::move(b)) {
    check_rank("Linear (weight)", shape_of(weight), 2);
    if (bias) check_same_shape("Linear (bias)", Shape{weight.shape()[0]}, shape_of(*bias));
}

Tensor Linear::operator()(const Tensor& x) const {
    const Shape s = shape_of(x);
    if (s.empty() || s.back() != in_features())
        throw_shape_error("Linear", "[..., " + std::to_string(in_features()) + "]", s);
    // Fold the leading dimensions into rows: [N, in] @ W^T -> [N, out], one sgemm.
    Shape out = s;
    out.back() = out_features();
    Tensor y = xt::zeros<float>(out);
    const std::size_t rows = x.size() / in_features();
    attn::gemm_rowmajor(x.data(), weight.data(), y.data(), rows, in_features(), out_features(),
                        /*transpose_b=*/true);
    if (bias) y += *bias;
    return y;
}

std::string backend_name(BernoulliBackend backend) {
    return backend == BernoulliBackend::mkl ? "MKL" : "portable";
}

Tensor rand_parameter(std::size_t d_in, std::size_t d_out, Generator& gen) {
    return attn::rand({d_in, d_out}, gen);
}

}  // namespace attn::nn
