/// @file gelu.hpp
/// @brief Raschka's `GELU` (ch. 4.3, In [13]): the tanh approximation of the Gaussian error
/// linear unit, as GPT-2 was trained with it, written with torch operations, and its backward.
///
/// His forward, `0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x +
/// 0.044715 * torch.pow(x, 3))))`, is a chain of elementwise float32 operations; each is
/// computed here as PyTorch 1.13's CPU kernel computes it (Debian's build, AVX2), so the bits
/// are his: `pow(x, 3)` is `(x * x) * x`, the Python floats 0.044715 and 0.5 become float32
/// multipliers, `c = sqrt(float32(2 / pi))` is a float32 square root, and `tanh` is SLEEF's
/// `tanhf_u10` (PyTorch's vectorised `Vectorized<float>::tanh` on every element).
#pragma once

#include <cstddef>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/nn/module.hpp"

namespace attn {

/// His `GELU()(x)`: any shape `[...] -> [...]`, float32, elementwise:
/// `u = c * (x + 0.044715 * ((x * x) * x))`, `y = (0.5 * x) * (1 + tanh(u))`,
/// `c = sqrt(2 / pi)` in float32 (0.7978846).
/// @throws std::invalid_argument when the shape does not match the storage.
Tensor gelu(const Tensor& x);

/// `gelu` of `n` contiguous floats into `y` (`y` may be `x`), for the model's workspaces.
void gelu_into(const float* x, std::size_t n, float* y);

/// The backward pass of `gelu` as PyTorch's autograd runs it through his forward (no
/// autograd here: the chain rule of each operation, in autograd's order): with `t = tanh(u)`,
/// - `MulBackward0` of `(0.5 * x) * (1 + t)`: `g_a = g * (1 + t)`, `g_b = g * (0.5 * x)`;
/// - `TanhBackward0`: `g_u = g_b * (1 - t * t)`, `1 - t * t` rounded once (a fused
///   multiply-add: PyTorch's AVX2 kernel is compiled with FMA, and GCC fuses its
///   `one_vec - b * b`); `MulBackward0` by `c`: `g_v = g_u * c`;
/// - `x + 0.044715 * p` hands `g_v` to `x` and `g_v * 0.044715` to `p = pow(x, 3)`, whose
///   `PowBackward0` gives `g_p = (g_v * 0.044715) * (3 * (x * x))`;
/// - `0.5 * x` gives `g_a * 0.5`;
/// and `x`'s three shares are added in the order autograd's engine delivers them (the
/// operations created last run first): `(g_v + g_p) + g_a * 0.5`. Checked against Debian's
/// python3-torch on 4,100 inputs (data/oracle/gpt_model.json). Shapes: `x`, `grad_output`
/// `[...]` -> `[...]`.
/// @throws std::invalid_argument when the shapes differ.
Tensor gelu_backward(const Tensor& grad_output, const Tensor& x);

/// `gelu_backward` of `n` contiguous floats into `grad_input`, which may be `grad_output` (each
/// element is read before it is written), for the model's reused workspaces.
void gelu_backward_into(const float* grad_output, const float* x, std::size_t n, float* grad_input);

/// His `GELU` module: no parameters, `forward(x) = gelu(x)`; repr `GELU()`.
class GELU : public nn::Module {
public:
    /// `"GELU"`.
    std::string type_name() const override { return "GELU"; }
    /// `gelu(x)`: `[...] -> [...]`.
    /// @throws std::invalid_argument as `gelu`.
    Tensor operator()(const Tensor& x) const { return gelu(x); }
};

}  // namespace attn
