/// @file layer_norm.hpp
/// @brief Raschka's `LayerNorm` (ch. 4.2, In [10]): each token's features centred on their mean
/// and divided by their standard deviation (the biased variance, `unbiased=False`, with `eps =
/// 1e-5`), then scaled and shifted by trainable `scale` and `shift`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/module.hpp"

namespace attn {

/// His `LayerNorm(emb_dim)`: for `x [..., emb_dim]`,
/// `mean = x.mean(dim=-1, keepdim=True)`, `var = x.var(dim=-1, keepdim=True, unbiased=False)`,
/// `norm_x = (x - mean) / torch.sqrt(var + eps)`, `scale * norm_x + shift`. PyTorch's float
/// order, so a seed gives his bits: the mean is the row's sum in PyTorch's order divided by
/// `emb_dim`, the variance Welford's in double (functional.hpp's `mean` and `var`), then one
/// float32 operation after the other. No random draws: `scale` starts as ones, `shift` as
/// zeros. repr `LayerNorm()`, as his module prints (he writes no `extra_repr`).
class LayerNorm : public nn::Module {
public:
    /// `scale = ones(emb_dim)`, `shift = zeros(emb_dim)`, `eps = 1e-5`.
    /// @throws std::invalid_argument when `emb_dim` is 0; std::length_error when the
    /// parameters cannot be allocated.
    explicit LayerNorm(std::size_t emb_dim);

    /// What `forward` computes, for `x [..., E]`.
    struct Steps {
        Tensor mean;    ///< `x.mean(dim=-1, keepdim=True)`: `[..., 1]`
        Tensor var;     ///< `x.var(dim=-1, keepdim=True, unbiased=False)`: `[..., 1]`
        Tensor norm_x;  ///< `(x - mean) / torch.sqrt(var + eps)`: `[..., E]`
        Tensor output;  ///< `scale * norm_x + shift`: `[..., E]`
    };

    /// `forward(x)`: `[..., E] -> [..., E]`, float32, row by row (the bits of `forward_steps`).
    /// @throws std::invalid_argument when `x` is 0-d or its last dimension is not `E`, or
    /// `scale`/`shift` (public) no longer fit (`check_parameters`).
    Tensor operator()(const Tensor& x) const;

    /// `forward` keeping every intermediate (the same bits).
    /// @throws std::invalid_argument as `operator()`.
    Steps forward_steps(const Tensor& x) const;

    /// `forward` of `rows` contiguous rows `x [rows, E]` into `y [rows, E]` (`y` may be `x`),
    /// for the model's workspaces; rows are split among OpenMP threads when there are many.
    /// @throws std::invalid_argument as `check_parameters`.
    void forward_into(const float* x, std::size_t rows, float* y) const;

    /// What the training forward keeps for `backward`, for `x [..., E]` with `rows` rows
    /// (autograd's saved tensors of his forward, written out; reusing one object across steps
    /// reuses its storage).
    struct Saved {
        Tensor x;       ///< the input `[..., E]` (a copy): `self` of `x - mean` and of `VarBackward0`
        Tensor mean;    ///< `x.mean(dim=-1)`: `[rows]`
        Tensor denom;   ///< `torch.sqrt(var + eps)`: `[rows]`, `result` of `SqrtBackward0`
        Tensor norm_x;  ///< `(x - mean) / denom`: `[..., E]`, `other` of `scale * norm_x`
        Tensor y;       ///< the forward's result `[..., E]` (kept between steps; not read by `backward`, but by the next layer's)
    };

    /// `forward(x)` keeping in `saved` what `backward` needs (the same bits as `operator()`).
    /// Returns `saved.y`, whose memory the next forward with the same `saved` reuses.
    /// @throws std::invalid_argument as `operator()`.
    const Tensor& forward(const Tensor& x, Saved& saved) const;

    /// The backward pass of his forward, without autograd: every node autograd records for
    /// `scale * ((x - mean) / torch.sqrt(var + eps)) + shift`, in the order its engine runs
    /// them and with its formulas (torch 1.13's derivatives.yaml), per row of `E` features:
    /// - `AddBackward0`, `MulBackward0`: `shift.grad += g.sum(rows)`, `scale.grad += (g *
    ///   norm_x).sum(rows)` (`sum_to`: PyTorch's column-sum order); `g_n = g * scale`;
    /// - `DivBackward0`: `g_a = g_n / denom` for `a = x - mean`, and for the denominator
    ///   `g_d = sum(-g_n * ((a / denom) / denom))` (the row's sum in PyTorch's order);
    /// - `SqrtBackward0`: `g_v = g_d / (2 * denom)`; `AddBackward1` (`+ eps`) passes it on;
    /// - `SubBackward0` gives `x` the share `g_a` and `mean` the share `sum(-g_a)`;
    /// - `VarBackward0`: `((2 / E) * g_v) * (x - mean)`, `2 / E` a Python float made float32;
    /// - `MeanBackward1`: `sum(-g_a) / E` on every feature.
    /// `x` receives its three shares in the order the engine delivers them, `(g_a + var's) +
    /// mean's`, after `grad_x_before` when given (what `x` received first from a later use, a
    /// shortcut's identity): `((grad_x_before + g_a) + var's) + mean's`. Checked bit for bit
    /// against Debian's python3-torch 1.13 (data/oracle/gpt_backward.json). Accumulates
    /// `scale.grad`, `shift.grad` (`nn::accumulate_grad`) and returns `dL/dx`, `[..., E]`.
    /// @throws std::invalid_argument when `grad_output` or `grad_x_before` is not the saved
    /// input's shape, `saved` does not fit it, or `scale`/`shift` no longer fit (before any
    /// `.grad` changes).
    Tensor backward(const Saved& saved, const Tensor& grad_output, const Tensor* grad_x_before = nullptr);

    /// `backward` writing `dL/dx` (`[..., E]`, the forward's input shape) into `grad_x`'s memory
    /// (`sized`), so that a training step reuses the last step's; `grad_output` and
    /// `*grad_x_before` are `[..., E]`. `grad_x` must not be `grad_output` or `*grad_x_before`.
    /// The same bits as `backward` (autograd's nodes, above).
    /// @throws std::invalid_argument as `backward` (`grad_x` unchanged then).
    void backward_into(const Saved& saved, const Tensor& grad_output, const Tensor* grad_x_before, Tensor& grad_x);

    /// The normalised width `E`: `scale`'s size.
    /// @throws std::invalid_argument when `scale` is not 1-D.
    std::size_t emb_dim() const;

    /// Checks the public fields: `scale` and `shift` 1-D of the same non-zero size.
    /// @throws std::invalid_argument naming the field and both shapes otherwise.
    void check_parameters() const;

    /// `"LayerNorm"`.
    std::string type_name() const override { return "LayerNorm"; }
    /// `scale`, then `shift` (his registration order).
    std::vector<nn::NamedParameter> own_parameters() override {
        return {{"scale", &scale, &scale_grad}, {"shift", &shift, &shift_grad}};
    }

    double eps = 1e-5;  ///< `self.eps`, added to the variance as a float32 (a Python float)
    Tensor scale;       ///< `[E]`, ones at construction
    Tensor shift;       ///< `[E]`, zeros at construction
    std::optional<Tensor> scale_grad;  ///< `scale.grad`, empty until a backward
    std::optional<Tensor> shift_grad;  ///< `shift.grad`, empty until a backward
};

}  // namespace attn
