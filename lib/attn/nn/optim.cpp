/// @file optim.cpp
/// @brief SGD and AdamW in PyTorch 1.13's order of float operations (see optim.hpp).

#include "attn/nn/optim.hpp"

#include "attn/core/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "attn/core/functional.hpp"
#include "attn/print/python.hpp"

namespace attn::optim {
namespace {

// Python's `not 0.0 <= x` is also true for NaN; so is this.
bool optim_not_at_least_zero(double x) { return !(0.0 <= x); }

[[noreturn]] void optim_invalid(const std::string& what, double value) {
    throw std::invalid_argument(what + repr_float(value));
}

}  // namespace

Optimizer::Optimizer(std::vector<nn::NamedParameter> parameters)
    : parameters_(std::move(parameters)) {
    for (const auto& p : parameters_)
        if (p.value == nullptr || p.grad == nullptr)
            throw std::invalid_argument("optimizer: parameter '" + p.name +
                                        "' has a null value or grad pointer");
}

void Optimizer::zero_grad(bool set_to_none) { nn::zero_grad(parameters_, set_to_none); }

void Optimizer::check_grads(const char* where) const {
    for (const auto& p : parameters_)
        if (p.grad->has_value())
            check_same_shape(std::string(where) + ": the gradient of '" + p.name + "'",
                             shape_of(*p.value), shape_of(**p.grad));
}

void SGDOptions::validate() const {
    if (optim_not_at_least_zero(lr)) optim_invalid("SGD: Invalid learning rate: ", lr);
    if (optim_not_at_least_zero(momentum)) optim_invalid("SGD: Invalid momentum value: ", momentum);
    if (optim_not_at_least_zero(weight_decay)) optim_invalid("SGD: Invalid weight_decay value: ", weight_decay);
    if (std::isnan(dampening)) optim_invalid("SGD: Invalid dampening value: ", dampening);
    if (nesterov && (momentum <= 0 || dampening != 0))
        throw std::invalid_argument("SGD: Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<nn::NamedParameter> parameters, SGDOptions options_)
    : Optimizer(std::move(parameters)), options(options_) {
    options.validate();
    momentum_buffer_.resize(parameters_.size());
}

void SGD::step() {
    options.validate();
    check_grads("SGD.step");
    // Python floats rounded to float32 once, as Scalar::to<float>() in the kernels.
    const auto weight_decay = static_cast<float>(options.weight_decay);
    const auto momentum = static_cast<float>(options.momentum);
    const auto keep_new = static_cast<float>(1.0 - options.dampening);
    const auto neg_lr = static_cast<float>(-options.lr);
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        if (!parameters_[i].grad->has_value()) continue;
        float* p = parameters_[i].value->data();
        const float* g = (*parameters_[i].grad)->data();
        const std::size_t n = parameters_[i].value->size();
        std::optional<Tensor>& buffer = momentum_buffer_[i];
        const bool first = options.momentum != 0 && !buffer.has_value();
        if (first) buffer = Tensor(*parameters_[i].value);  // shape; filled below
        float* buf = buffer.has_value() ? buffer->data() : nullptr;
        for (std::size_t j = 0; j < n; ++j) {
            float d = g[j];
            if (options.weight_decay != 0) d = std::fma(p[j], weight_decay, d);
            if (options.momentum != 0) {
                if (first)
                    buf[j] = d;
                else
                    buf[j] = std::fma(d, keep_new, buf[j] * momentum);
                d = options.nesterov ? std::fma(buf[j], momentum, d) : buf[j];
            }
            p[j] = std::fma(d, neg_lr, p[j]);
        }
    }
}

void AdamWOptions::validate() const {
    if (optim_not_at_least_zero(lr)) optim_invalid("AdamW: Invalid learning rate: ", lr);
    if (optim_not_at_least_zero(eps)) optim_invalid("AdamW: Invalid epsilon value: ", eps);
    if (!(0.0 <= beta1 && beta1 < 1.0)) optim_invalid("AdamW: Invalid beta parameter at index 0: ", beta1);
    if (!(0.0 <= beta2 && beta2 < 1.0)) optim_invalid("AdamW: Invalid beta parameter at index 1: ", beta2);
    if (optim_not_at_least_zero(weight_decay)) optim_invalid("AdamW: Invalid weight_decay value: ", weight_decay);
}

AdamW::AdamW(std::vector<nn::NamedParameter> parameters, AdamWOptions options_)
    : Optimizer(std::move(parameters)), options(options_) {
    options.validate();
    state_.resize(parameters_.size());
}

namespace {

// AdamW's update of elements [begin, end) of one parameter (the class comment's formulas):
// compiled for CPUs with FMA too, where std::fma is one instruction and the loop vectorises
// (the same bits: every fused multiply-add is written, nothing else is contracted).
__attribute__((target_clones("arch=x86-64-v3", "default"), optimize("fp-contract=off")))
void adamw_update(float* p, const float* g, float* m, float* v, std::size_t begin, std::size_t end, float decay,
                  float beta1, float beta2, float one_minus_beta1, float one_minus_beta2,
                  float bias_correction2_sqrt, float eps, float neg_step_size) {
    for (std::size_t j = begin; j < end; ++j) {
        const float decayed = p[j] * decay;
        m[j] = std::fma(g[j], one_minus_beta1, m[j] * beta1);
        v[j] = std::fma(one_minus_beta2 * g[j], g[j], v[j] * beta2);
        const float denom = std::sqrt(v[j]) / bias_correction2_sqrt + eps;
        p[j] = decayed + (neg_step_size * m[j]) / denom;
    }
}

}  // namespace

void AdamW::set_state(std::vector<State> state) {
    if (state.size() != parameters_.size())
        throw std::invalid_argument("AdamW.set_state: expected the state of " + std::to_string(parameters_.size()) +
                                    " parameters, got " + std::to_string(state.size()));
    for (std::size_t i = 0; i < state.size(); ++i) {
        const std::string what = "AdamW.set_state: parameter '" + parameters_[i].name + "'";
        if (state[i].step < 0)
            throw std::invalid_argument(what + ": expected a step >= 0, got " + std::to_string(state[i].step));
        if (state[i].step == 0) continue;
        const Shape shape = shape_of(*parameters_[i].value);
        check_same_shape(what + " (exp_avg)", shape, shape_of(state[i].exp_avg));
        check_same_shape(what + " (exp_avg_sq)", shape, shape_of(state[i].exp_avg_sq));
    }
    for (State& s : state)
        if (s.step == 0) s.exp_avg = Tensor(), s.exp_avg_sq = Tensor();
    state_ = std::move(state);
}

void AdamW::step() {
    options.validate();
    check_grads("AdamW.step");
    const auto decay = static_cast<float>(1.0 - options.lr * options.weight_decay);
    const auto beta1 = static_cast<float>(options.beta1);
    const auto beta2 = static_cast<float>(options.beta2);
    const auto one_minus_beta1 = static_cast<float>(1.0 - options.beta1);
    const auto one_minus_beta2 = static_cast<float>(1.0 - options.beta2);
    const auto eps = static_cast<float>(options.eps);
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        if (!parameters_[i].grad->has_value()) continue;
        State& s = state_[i];
        if (s.step == 0) {  // lazy state initialization, as PyTorch's step
            s.exp_avg = zeros(shape_of(*parameters_[i].value));
            s.exp_avg_sq = zeros(shape_of(*parameters_[i].value));
        }
        s.step += 1;
        // Python floats: bias corrections, step size and sqrt in double.
        const auto t = static_cast<double>(s.step);
        const double bias_correction1 = 1.0 - std::pow(options.beta1, t);
        const double bias_correction2 = 1.0 - std::pow(options.beta2, t);
        const double step_size = options.lr / bias_correction1;
        const auto bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
        const auto neg_step_size = static_cast<float>(-step_size);

        float* p = parameters_[i].value->data();
        const float* g = (*parameters_[i].grad)->data();
        float* m = s.exp_avg.data();
        float* v = s.exp_avg_sq.data();
        const std::size_t n = parameters_[i].value->size();
        // elementwise: a large parameter's elements are shared among the threads in blocks
        const std::size_t block = 1 << 16;
        const auto blocks = static_cast<long>((n + block - 1) / block);
#pragma omp parallel for schedule(static) if (n >= detail::kParallelFloats)
        for (long k = 0; k < blocks; ++k)
            adamw_update(p, g, m, v, static_cast<std::size_t>(k) * block,
                         std::min(n, static_cast<std::size_t>(k + 1) * block), decay, beta1, beta2, one_minus_beta1,
                         one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size);
    }
}

}  // namespace attn::optim
