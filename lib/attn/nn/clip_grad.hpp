/// @file clip_grad.hpp
/// @brief `torch.nn.utils.clip_grad_norm_` as PyTorch 1.13 computes it on the CPU, float
/// operation for float operation (Raschka's appendix D, section D.3, clips his GPT's gradients
/// with it).
///
/// PyTorch 1.13's code (torch/nn/utils/clip_grad.py), for the L2 norm:
/// ```
/// total_norm = torch.norm(torch.stack([torch.norm(g.detach(), 2.0) for g in grads]), 2.0)
/// clip_coef = max_norm / (total_norm + 1e-6)
/// clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
/// for g in grads: g.detach().mul_(clip_coef_clamped)
/// return total_norm
/// ```
/// Each step is a float32 tensor operation, which here is:
/// - each gradient's norm, then the norm of the vector of those norms: `norm` (core/
///   functional.hpp), PyTorch's CPU order (8 lanes of fused multiply-adds, float32);
/// - `total_norm + 1e-6`: one float32 addition of `1e-6f` (the Python scalar rounded to
///   float32, as the add kernel takes it);
/// - `max_norm / t`: Python's float divided by a tensor is `Tensor.__rtruediv__`, which PyTorch
///   1.13 computes as `t.reciprocal() * max_norm` (torch/_tensor.py): `1 / t` rounded to
///   float32, then times `float(max_norm)`, rounded again;
/// - `clamp(max=1.0)`: `min(coef, 1)`, NaN kept;
/// - every gradient element multiplied by the clamped coefficient, always (by 1 when the norm
///   is within `max_norm`, which changes no bit).
/// Checked bit for bit against Debian's python3-torch 1.13.1 (tests/test_appendix_d.cpp,
/// data/oracle/appendix_d.json).
#pragma once

#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/module.hpp"

namespace attn::nn::utils {

/// `torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)`:
/// scales every existing `.grad` of `parameters` in place so that their norm, taken over all of
/// them as one vector, is at most about `max_norm`, and returns that total norm before
/// clipping, a 0-d float32 tensor. Gradients: float32, any shape (each its parameter's); one
/// of 0 elements adds 0 to the 2-norm. Parameters without a `.grad` (an empty optional, his
/// `None`) are skipped; with no gradient at all nothing changes and the result is
/// `tensor(0.)`, as PyTorch's.
///
/// `norm_type` 2 (the default, his) or infinity (`max |g|` over all gradients); the total norm
/// is then as the file comment says. A non-finite total norm (a gradient holding inf or NaN,
/// or squares overflowing float32) is, as in PyTorch: with `error_if_nonfinite` false (1.13's
/// default), used anyway: an infinite norm makes the coefficient 0 (finite gradients become 0,
/// infinite ones NaN), a NaN norm makes every gradient NaN; with `error_if_nonfinite`, an error
/// and no gradient changed.
///
/// @throws std::invalid_argument when `max_norm` is NaN or not positive (PyTorch accepts them
/// silently: 0 zeroes every gradient, a negative value flips their signs, NaN makes them all
/// NaN), when `norm_type` is neither 2 nor infinity (PyTorch accepts any order; these two are
/// computed here in PyTorch's order), when a parameter's `grad` pointer is null, or for
/// `norm_type` infinity when a gradient is empty (PyTorch's `abs().max()` raises); nothing is
/// changed then.
/// @throws std::runtime_error (PyTorch's RuntimeError) when `error_if_nonfinite` and the
/// total norm is inf or NaN, with PyTorch's message: `"The total norm of order 2.0 for
/// gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error
/// and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"`.
/// Source: torch/nn/utils/clip_grad.py, `clip_grad_norm_`, PyTorch 1.13.
Tensor clip_grad_norm_(const std::vector<NamedParameter>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace attn::nn::utils
