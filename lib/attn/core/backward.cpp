// The backward passes of the torch.* functions in functional.hpp (matmul, transpose, view,
// masked_fill, the scaling, softmax, mean, pow): each the chain rule of its forward, in the
// float order of PyTorch 1.13's CPU kernels. The losses' backward passes are in nn/loss.cpp.
#include <cmath>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"
#include "attn/kernels/gemm.hpp"

namespace attn {

MatmulGradients matmul_backward(const Tensor& grad_output, const Tensor& a, const Tensor& b) {
    const std::string where = "matmul_backward";
    const Shape sa = shape_of(a), sb = shape_of(b), sg = shape_of(grad_output);
    if (sa.size() < 2) throw_shape_error(where + " (a)", "[..., m, k]", sa);
    const std::size_t r = sa.size(), m = sa[r - 2], k = sa[r - 1];
    Shape want_b(sa.begin(), sa.end() - 2);
    want_b.push_back(k);
    if (sb.size() != r || Shape(sb.begin(), sb.end() - 1) != want_b)
        throw_shape_error(where + " (b)", "a's batch dimensions, then [" + std::to_string(k) + ", n]", sb);
    const std::size_t n = sb[r - 1];
    Shape want_g(sa.begin(), sa.end() - 1);
    want_g.push_back(n);
    check_same_shape(where + " (grad_output)", want_g, sg);
    const std::size_t batch = numel(Shape(sa.begin(), sa.end() - 2));
    MatmulGradients g{Tensor::from_shape(sa), Tensor::from_shape(sb)};
    for (std::size_t i = 0; i < batch; ++i) {
        const float* dc = grad_output.data() + i * m * n;
        // grad_a = dC @ b^T: [m, n] @ [n, k]; grad_b = a^T @ dC: [k, m] @ [m, n]
        fast::gemm(m, k, n, dc, n, false, b.data() + i * k * n, n, true, g.grad_a.data() + i * m * k, k);
        fast::gemm(k, n, m, a.data() + i * m * k, k, true, dc, n, false, g.grad_b.data() + i * k * n, n);
    }
    return g;
}

Tensor transpose_backward(const Tensor& grad_output, long dim0, long dim1) {
    return transpose(grad_output, dim0, dim1);
}

Tensor view_backward(const Tensor& grad_output, const Shape& input_shape) {
    const Shape s = shape_of(grad_output);
    if (numel(s) != numel(input_shape))
        throw_shape_error("view_backward (grad_output)",
                          "as many elements as " + shape_str(input_shape), s);
    Tensor g = grad_output;
    g.reshape(input_shape);
    return g;
}

Tensor masked_fill_backward(const Tensor& grad_output, const BoolTensor& mask) {
    return masked_fill(grad_output, mask, 0.0f);
}

Tensor div_backward(const Tensor& grad_output, float divisor) {
    shape_of(grad_output);
    return Tensor(grad_output / divisor);
}

Tensor mul_backward(const Tensor& grad_output, float multiplier) {
    shape_of(grad_output);
    return Tensor(grad_output * multiplier);
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output) {
    return detail::backward_rows("softmax_backward", grad_output, output,
                                 [](const float* dp, const float* p, float* d, std::size_t n) {
                                     const float sum = detail::softmax_backward_sum(dp, p, n);
                                     for (std::size_t j = 0; j < n; ++j) d[j] = (dp[j] - sum) * p[j];
                                 });
}

Tensor mean(const Tensor& x) {
    shape_of(x);
    const float total = detail::torch_sum(x.data(), x.size());
    return scalar_tensor(total / static_cast<float>(x.size()));
}

float detail::scalar_grad(const std::string& where, const Tensor& grad_output) {
    const Shape s = shape_of(grad_output);
    if (!s.empty()) throw_shape_error(where + " (grad_output)", "a 0-d tensor", s);
    return grad_output();
}

Tensor mean_backward(const Tensor& grad_output, const Shape& input_shape) {
    const float g = detail::scalar_grad("mean_backward", grad_output);
    check_allocation("mean_backward", input_shape);
    const float n = static_cast<float>(numel(input_shape));
    Tensor dx = Tensor::from_shape(input_shape);
    std::fill_n(dx.data(), dx.size(), g / n);  // grad.expand(shape) / numel
    return dx;
}

Tensor pow(const Tensor& x, float exponent) {
    shape_of(x);
    Tensor y = x;
    float* d = y.data();
    for (std::size_t i = 0; i < y.size(); ++i)
        d[i] = exponent == 2.0f   ? d[i] * d[i]
               : exponent == 3.0f ? d[i] * d[i] * d[i]
               : exponent == 1.0f ? d[i]
                                  : std::pow(d[i], exponent);
    return y;
}

Tensor pow_backward(const Tensor& grad_output, const Tensor& x, float exponent) {
    const Shape s = shape_of(x);
    check_same_shape("pow_backward (grad_output)", s, shape_of(grad_output));
    if (exponent == 0.0f) return Tensor(xt::zeros<float>(s));
    const Tensor base = pow(x, exponent - 1.0f);  // x.pow(exponent - 1)
    Tensor dx = Tensor::from_shape(s);
    for (std::size_t i = 0; i < dx.size(); ++i)
        dx.data()[i] = grad_output.data()[i] * (exponent * base.data()[i]);
    return dx;
}

}  // namespace attn
