#include "attn/nn/nn.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"
#include "attn/kernels/gemm.hpp"

namespace attn::nn {

Linear::Linear(std::size_t in_features, std::size_t out_features, bool has_bias,
               Generator& gen) {
    // Both sizes are checked before anything is drawn or allocated.
    check_allocation("Linear (weight [out_features, in_features])",
                     Shape{out_features, in_features});
    if (has_bias) check_allocation("Linear (bias [out_features])", Shape{out_features});
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
    // [1] broadcasts over the outputs, as PyTorch's addmm broadcasts it.
    if (bias && shape_of(*bias) != Shape{weight.shape()[0]} && shape_of(*bias) != Shape{1})
        throw_shape_error("Linear (bias)", "[" + std::to_string(weight.shape()[0]) + "] (or [1], broadcast)",
                          shape_of(*bias));
}

Tensor Linear::bias_vector() const {
    check_parameters();
    const std::size_t out = out_features();
    if (!bias) return attn::zeros({out});
    if (bias->size() == out) return *bias;
    Tensor v = Tensor::from_shape({out});
    std::fill_n(v.data(), out, bias->data()[0]);
    return v;
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

void Linear::forward_into(const float* x, std::size_t rows, float* y, Arithmetic arithmetic) const {
    check_parameters();
    const std::size_t in = in_features(), out = out_features();
    // exact: the linked BLAS (the reference's order); fma: the fast kernels, whatever the BLAS.
    if (resolve_arithmetic(arithmetic) == Arithmetic::fma)
        fast::gemm(rows, out, in, x, in, false, weight.data(), in, /*trans_b=*/true, y, out, 0, Arithmetic::fma);
    else
        attn::gemm_rowmajor(x, weight.data(), y, rows, in, out, /*transpose_b=*/true);
    if (bias) {
        const float* b = bias->data();
        const std::size_t step = bias->size() == out ? 1 : 0;  // a [1] bias broadcasts
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < out; ++j) y[i * out + j] += b[j * step];
    }
}

// ------------------------------------------------------------------------- backward

namespace {

// A thread's reusable buffer where each gradient is computed before it reaches its `.grad`.
float* grad_scratch(std::size_t floats) {
    thread_local std::vector<float> buf;
    if (buf.size() < floats) buf.resize(floats);
    return buf.data();
}

// Where to write a gradient of `value`'s shape: this thread's reused buffer, from which
// `commit_grad` adds it into the existing `.grad` (checked here) or copies it into a new one.
// The first backward writes through the buffer too, so that the second touches no new page.
float* grad_target(const std::optional<Tensor>& grad, const Tensor& value, const std::string& what) {
    const Shape s = shape_of(value);
    if (grad) check_same_shape(what + " (.grad)", s, shape_of(*grad));
    return grad_scratch(numel(s));
}

void commit_grad(std::optional<Tensor>& grad, const Tensor& value, const float* g) {
    if (grad) {
        detail::add_into(grad->data(), g, grad->size());
        return;
    }
    grad = Tensor::from_shape(shape_of(value));
    std::copy_n(g, grad->size(), grad->data());
}

void add_into(Tensor& grad, const float* g) { detail::add_into(grad.data(), g, grad.size()); }

}  // namespace

void accumulate_grad(std::optional<Tensor>& grad, Tensor g, const std::string& what) {
    if (!grad) {
        grad = std::move(g);
        return;
    }
    check_same_shape(what + " (.grad)", shape_of(g), shape_of(*grad));
    add_into(*grad, g.data());
}

void Linear::backward_into(const float* x, std::size_t rows, const float* grad_output,
                           float* grad_input, Arithmetic arithmetic) {
    check_parameters();
    const Arithmetic a = resolve_arithmetic(arithmetic);
    const std::size_t in = in_features(), out = out_features();
    checked_mul(rows, std::max(in, out), "Linear::backward (rows * features)");
    // weight.grad += grad_output^T @ x: [out, rows] @ [rows, in], summed over rows in order.
    float* dW = grad_target(weight_grad, weight, "Linear (weight)");
    fast::gemm(out, in, rows, grad_output, out, /*trans_a=*/true, x, in, false, dW, in, 0, a);
    commit_grad(weight_grad, weight, dW);
    if (bias) {  // bias.grad += grad_output.sum(0), PyTorch's sum_to order
        float* db = grad_target(bias_grad, *bias, "Linear (bias)");
        if (bias->size() == out)
            detail::column_sums(grad_output, rows, out, db);
        else  // a [1] bias, broadcast: the sum of every element (sum_to [1])
            db[0] = detail::torch_sum(grad_output, checked_mul(rows, out, "Linear::backward (rows * out_features)"));
        commit_grad(bias_grad, *bias, db);
    }
    // grad_input = grad_output @ weight: [rows, out] @ [out, in], summed over outputs in order.
    if (grad_input) fast::gemm(rows, in, out, grad_output, out, false, weight.data(), in, false, grad_input, in, 0, a);
}

std::size_t Linear::check_backward(const Shape& x, const Shape& grad_output) const {
    check_parameters();
    if (x.empty() || x.back() != in_features())
        throw_shape_error("Linear::backward (x)", "[..., " + std::to_string(in_features()) + "]", x);
    Shape want = x;
    want.back() = out_features();
    check_same_shape("Linear::backward (grad_output)", want, grad_output);
    return numel(Shape(x.begin(), x.end() - 1));
}

Tensor Linear::backward(const Tensor& x, const Tensor& grad_output) {
    const Shape s = shape_of(x);
    const std::size_t rows = check_backward(s, shape_of(grad_output));
    check_allocation("Linear::backward (grad_input)", s);
    Tensor grad_input = Tensor::from_shape(s);
    backward_into(x.data(), rows, grad_output.data(), grad_input.data());
    return grad_input;
}

std::vector<NamedParameter> Linear::own_parameters() {
    std::vector<NamedParameter> out{{"weight", &weight, &weight_grad}};
    if (bias) out.push_back({"bias", &*bias, &bias_grad});
    return out;
}

std::string Linear::extra_repr() const {
    return "in_features=" + std::to_string(in_features()) + ", out_features=" +
           std::to_string(out_features()) + ", bias=" + (bias ? "True" : "False");
}

Tensor rand_parameter(std::size_t d_in, std::size_t d_out, Generator& gen) {
    return attn::rand({d_in, d_out}, gen);
}

}  // namespace attn::nn
