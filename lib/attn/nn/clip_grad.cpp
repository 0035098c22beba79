/// @file clip_grad.cpp
/// @brief `clip_grad_norm_` in PyTorch 1.13's order of float operations (see clip_grad.hpp).

#include "attn/nn/clip_grad.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"
#include "attn/print/python.hpp"

namespace attn::nn::utils {

namespace {

// Which NaN `g * coef` gives when both are NaN, as PyTorch 1.13's CPU `mul_` by a 0-d tensor
// (AVX2 build): the coefficient's in the vectorised loop's chunks of 16 elements; in the
// remaining `r = n % 16` elements (the scalar loop, which GCC compiled partly 4 lanes wide with
// the operands the other way round), the coefficient's in the first `1 + 4 * floor((r - 1) / 4)`
// and the gradient's in the rest. Found by testing every position of sizes 1 to 69 and some
// up to 65541 against Debian's python3-torch 1.13.1 (aligned or not); the product of one NaN
// operand is that NaN, as everywhere.
bool nan_product_keeps_gradient(std::size_t j, std::size_t n) {
    const std::size_t r = n % 16, start = n - r;
    return j >= start && j - start >= 1 + 4 * ((r - 1) / 4);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<NamedParameter>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
    const std::string where = "clip_grad_norm_";
    const double inf = std::numeric_limits<double>::infinity();
    if (!(max_norm > 0.0))
        throw std::invalid_argument(where + ": max_norm must be positive, got " + repr_float(max_norm) +
                                    " (PyTorch would scale every gradient by a coefficient of 0, below 0 or NaN)");
    if (norm_type != 2.0 && norm_type != inf)
        throw std::invalid_argument(where + ": norm_type must be 2.0 or inf (the orders computed here as PyTorch "
                                            "does), got " + repr_float(norm_type));
    std::vector<Tensor*> grads;  // grads = [p.grad for p in parameters if p.grad is not None]
    for (const NamedParameter& p : parameters) {
        if (p.grad == nullptr)
            throw std::invalid_argument(where + ": parameter '" + p.name + "' has a null grad pointer");
        if (p.grad->has_value()) grads.push_back(&**p.grad);
    }
    if (grads.empty()) return scalar_tensor(0.0f);  // torch.tensor(0.)

    Tensor norms = zeros({grads.size()});
    for (std::size_t i = 0; i < grads.size(); ++i) {
        if (norm_type == inf && grads[i]->size() == 0)
            throw std::invalid_argument(where + ": gradient " + std::to_string(i) +
                                        " is empty: its inf-norm (abs().max()) is undefined");
        norms(i) = norm(*grads[i], norm_type)();
    }
    float total_norm = 0.0f;
    if (norm_type == 2.0) {
        total_norm = detail::torch_norm2(norms.data(), norms.size());  // torch.norm(torch.stack(norms), 2.0)
    } else {  // norms[0] if len(norms) == 1 else torch.max(torch.stack(norms))
        total_norm = detail::torch_max(norms.data(), norms.size());
    }
    if (error_if_nonfinite && !std::isfinite(total_norm))
        throw std::runtime_error("The total norm of order " + repr_float(norm_type) +
                                 " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
                                 "disable this error and scale the gradients by the non-finite norm anyway, set "
                                 "`error_if_nonfinite=False`");
    const float denominator = total_norm + static_cast<float>(1e-6);  // total_norm + 1e-6
    const float clip_coef = (1.0f / denominator) * static_cast<float>(max_norm);  // reciprocal() * max_norm
    const float clamped = std::isnan(clip_coef) ? clip_coef : std::min(clip_coef, 1.0f);  // clamp(max=1.0)
    for (Tensor* g : grads) {  // g.detach().mul_(clip_coef_clamped)
        float* data = g->data();
        const std::size_t n = g->size();
        if (std::isnan(clamped)) {
            for (std::size_t j = 0; j < n; ++j)
                if (!(std::isnan(data[j]) && nan_product_keeps_gradient(j, n))) data[j] = clamped;
            continue;
        }
#pragma omp parallel for schedule(static) if (n >= detail::kParallelFloats)
        for (std::size_t j = 0; j < n; ++j) data[j] *= clamped;
    }
    return scalar_tensor(total_norm);
}

}  // namespace attn::nn::utils
