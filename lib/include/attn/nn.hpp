/// @file nn.hpp
/// @brief Modules that hold weights, as in `torch.nn`: `Linear` and `Parameter(rand(...))`.
///
/// Construction draws from the generator in exactly PyTorch's order, so a module built after
/// `manual_seed(s)` holds the same numbers as its PyTorch twin.
#pragma once

#include <optional>

#include "attn/generator.hpp"
#include "attn/tensor.hpp"

namespace attn::nn {

/// Which of PyTorch's CPU Bernoulli implementations draws dropout masks
/// (`bernoulli_scalar_kernel` in aten/src/ATen/native/cpu/DistributionKernels.cpp).
enum class BernoulliBackend {
    portable,  ///< `bernoulli_scalar_kernel_default`: one 64-bit draw per element
    mkl,       ///< MKL VSL MCG31m1 stream seeded by one 32-bit draw (Intel x86 wheels)
};

/// `torch.nn.Linear(in_features, out_features, bias)`: `y = x W^T + b`.
///
/// Initialisation (`reset_parameters`): the weight `[out_features, in_features]` is filled
/// with `uniform_(-1/sqrt(in_features), 1/sqrt(in_features))` (what
/// `kaiming_uniform_(a=sqrt(5))` reduces to), then the bias `[out_features]`, if any, with
/// the same bound: `in_features * out_features (+ out_features)` 32-bit draws.
class Linear {
public:
    /// Builds and initialises the layer from `gen`.
    /// @throws std::invalid_argument when a feature count is 0.
    Linear(std::size_t in_features, std::size_t out_features, bool bias = true,
           Generator& gen = default_generator());

    /// Wraps given parameters (e.g. weights split from a fused layer).
    /// weight: `[out_features, in_features]`; bias: `[out_features]` if given.
    /// @throws std::invalid_argument when the weight is not 2-D or the bias does not fit.
    Linear(Tensor weight, std::optional<Tensor> bias);

    /// `forward(x)`: `[..., in_features] -> [..., out_features]` (also `[in_features]` ->
    /// `[out_features]`), computed as `x @ weight^T + bias` with BLAS sgemm.
    /// @throws std::invalid_argument when the last dimension of `x` is not `in_features`.
    Tensor operator()(const Tensor& x) const;

    std::size_t in_features() const { return weight.shape()[1]; }
    std::size_t out_features() const { return weight.shape()[0]; }

    Tensor weight;              ///< `[out_features, in_features]`
    std::optional<Tensor> bias;  ///< `[out_features]`, or none when built with `bias=false`
};

/// `torch.nn.Parameter(torch.rand(d_in, d_out))`: a `[d_in, d_out]` matrix of uniforms in
/// [0, 1), used as `x @ W` (note: the transpose of `Linear`'s layout). Notebook 004 In [16]
/// and the book's `SelfAttention_v1`.
Tensor rand_parameter(std::size_t d_in, std::size_t d_out, Generator& gen = default_generator());

}  // namespace attn::nn
