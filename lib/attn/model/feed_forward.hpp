/// @file feed_forward.hpp
/// @brief Raschka's `FeedForward` (ch. 4.3, In [15]): the position-wise network of a
/// transformer block, `Linear(E, 4E)`, `GELU`, `Linear(4E, E)`, in an `nn.Sequential`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/config.hpp"
#include "attn/model/gelu.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// His `FeedForward(cfg)`: `layers = nn.Sequential(nn.Linear(E, 4 * E), GELU(), nn.Linear(4 *
/// E, E))` with `E = cfg["emb_dim"]`, both layers with biases. Built in that order from `gen`:
/// `8 * E * E + 5 * E` 32-bit draws. Parameters `layers.0.weight`, `layers.0.bias`,
/// `layers.2.weight`, `layers.2.bias`; repr as his exercise 4.1 prints it.
class FeedForward : public nn::Module {
public:
    /// The Sequential of `Linear(E, 4E)`, `GELU()`, `Linear(4E, E)`: `layers.get<0>()` is his
    /// `layers[0]`.
    using Layers = nn::Sequential<nn::Linear, GELU, nn::Linear>;

    /// Builds the layers from `gen` (only `cfg.emb_dim` is read).
    /// @throws std::invalid_argument when `emb_dim` is 0; std::length_error when `4 * emb_dim`
    /// overflows or a weight cannot be allocated (nothing drawn then).
    explicit FeedForward(const GPTConfig& cfg, Generator& gen = default_generator());

    /// `forward(x)`: `[..., E] -> [..., E]`, `layers(x)` (the hidden activations in a buffer
    /// each thread reuses).
    /// @throws std::invalid_argument when the last dimension of `x` is not `E`, or a layer
    /// (public) was replaced by one that does not fit the other.
    Tensor operator()(const Tensor& x) const;

    /// `forward` of `rows` contiguous rows `x [rows, E]` into `y [rows, E]`, through the
    /// hidden `[rows, 4E]` in a scratch buffer (the same bits as `operator()`).
    /// @throws std::invalid_argument as `operator()`.
    void forward_into(const float* x, std::size_t rows, float* y) const;

    /// What the training forward keeps for `backward`, for `x [..., E]` (reused across steps).
    struct Saved {
        Tensor x;          ///< the input `[..., E]` (a copy): `layers[0]`'s input
        Tensor hidden;     ///< `layers[0](x)`: `[..., 4E]`, GELU's input
        Tensor activated;  ///< `gelu(hidden)`: `[..., 4E]`, `layers[2]`'s input
        Tensor y;          ///< the forward's result `[..., E]` (kept between steps; not read by `backward`)
    };

    /// `forward(x)` keeping in `saved` what `backward` needs (the same bits as `operator()`).
    /// Returns `saved.y`, whose memory the next forward with the same `saved` reuses.
    /// @throws std::invalid_argument as `operator()`.
    const Tensor& forward(const Tensor& x, Saved& saved) const;

    /// The backward pass (llm.c's `matmul_backward`, `gelu_backward`, `matmul_backward`):
    /// `layers[2].backward` (its `.grad` and dL/d activated), `gelu_backward`, `layers[0].backward`
    /// (its `.grad` and dL/dx). `grad_output`: `[..., E]`; returns `dL/dx`, `[..., E]`.
    /// @throws std::invalid_argument when `grad_output` or `saved` do not fit, or a layer was
    /// replaced by one that does not fit (before any `.grad` changes).
    Tensor backward(const Saved& saved, const Tensor& grad_output);

    /// `backward` writing `dL/dx` (`[..., E]`, the forward's input shape) into `grad_x`'s memory
    /// (`sized`), so that a training step reuses the last step's; `grad_output` is `[..., E]`.
    /// `grad_x` must not be `grad_output`. The same bits as `backward` (PyTorch's `AddmmBackward0`
    /// and `GeluBackward0`, tanh).
    /// @throws std::invalid_argument as `backward` (`grad_x` unchanged then).
    void backward_into(const Saved& saved, const Tensor& grad_output, Tensor& grad_x);

    /// `"FeedForward"`.
    std::string type_name() const override { return "FeedForward"; }
    /// `layers`.
    std::vector<nn::NamedChild> children() override { return {{"layers", &layers}}; }

    Layers layers;  ///< `Linear(E, 4E)`, `GELU()`, `Linear(4E, E)`

private:
    void check_layers() const;
};

}  // namespace attn
