// Chapter 22's helpers: Raschka's placeholder DummyGPTModel (ch. 4.1, In [3]) and his
// ExampleDeepNeuralNetwork of ch. 4.4 with the backward pass that print_gradients runs, both
// only for this chapter's lessons, built from the library's layers; the printing of his counts
// and sizes; torch.linspace for the GELU figure's inputs. Compiled with the chapter, in the
// chapters' unity file (chapters/meson.build): everything here is in namespace ch22.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/config.hpp"
#include "attn/model/gelu.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/python.hpp"

namespace ch22 {

/// Python's `f"{n:,}"`: `163,009,536`.
inline std::string grouped(std::size_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

/// His In [28] and exercise 4.2's `calculate_size`: `f"{total_params * 4 / (1024 * 1024):.2f} MB"`.
inline std::string megabytes(std::size_t params) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(params) * 4.0 / (1024.0 * 1024.0));
    return buf;
}

/// `sum(p.numel() for p in module.parameters())`.
inline std::size_t numel_of(attn::nn::Module& module) {
    std::size_t total = 0;
    for (const auto& p : module.named_parameters()) total += p.value->size();
    return total;
}

/// `torch.linspace(start, end, steps)` as PyTorch's CPU kernel writes each element (float32
/// `step = (end - start) / (steps - 1)`; the first half `start + step * i`, the second half
/// `end - step * (steps - 1 - i)`): the inputs of his GELU plot (In [14]), for the figure.
inline attn::Tensor linspace(float start, float end, std::size_t steps) {
    attn::Tensor x = attn::Tensor::from_shape({steps});
    const float step = (end - start) / static_cast<float>(steps - 1);
    for (std::size_t i = 0; i < steps; ++i)
        x(i) = i < steps / 2 ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - 1 - i);
    return x;
}

/// His `DummyGPTModel(cfg)` (ch. 4.1, In [3]): `tok_emb`, `pos_emb`, `drop_emb`, placeholder
/// blocks and norm that return their input, `out_head`; built in his order from the default
/// generator (the placeholders draw nothing).
struct DummyGPTModel {
    attn::nn::Embedding tok_emb;
    attn::nn::Embedding pos_emb;
    attn::nn::Dropout drop_emb;
    attn::nn::Linear out_head;

    explicit DummyGPTModel(const attn::GPTConfig& cfg)
        : tok_emb(cfg.vocab_size, cfg.emb_dim), pos_emb(cfg.context_length, cfg.emb_dim),
          drop_emb(cfg.drop_rate, cfg.backend), out_head(cfg.emb_dim, cfg.vocab_size, false) {}

    /// `forward(in_idx)`: `[b, T]` -> `[b, T, vocab_size]`, the dropout mask from `gen`.
    attn::Tensor operator()(const attn::LongTensor& in_idx, attn::Generator& gen) const {
        attn::Tensor x = tok_emb(in_idx) + pos_emb(attn::arange(static_cast<std::int64_t>(in_idx.shape()[1])));
        return out_head(drop_emb(x, gen));  // the blocks and the norm return x unchanged
    }
};

/// His `ExampleDeepNeuralNetwork(layer_sizes, use_shortcut)` (ch. 4.4, In [18]): five
/// `nn.Sequential(nn.Linear(...), GELU())` layers, the input added to a layer's output when
/// their shapes agree and `use_shortcut` is set. Built in order from the default generator.
class ExampleDeepNeuralNetwork {
public:
    ExampleDeepNeuralNetwork(const std::vector<std::size_t>& layer_sizes, bool use_shortcut)
        : use_shortcut_(use_shortcut) {
        for (std::size_t i = 0; i + 1 < layer_sizes.size(); ++i)
            layers_.emplace_back(layer_sizes[i], layer_sizes[i + 1]);
    }

    /// His `print_gradients(model, x)`: the forward, `nn.MSELoss()` against `[[0.]]`,
    /// `loss.backward()` (the chain rule written out: `gelu_backward`, `Linear::backward`, the
    /// shortcut's gradient added to the layer's), then for every weight the line
    /// `f"{name} has gradient mean of {param.grad.abs().mean().item()}"`.
    std::string print_gradients(const attn::Tensor& x) {
        // Forward, keeping each layer's input and its Linear's output.
        std::vector<attn::Tensor> inputs, pre;
        attn::Tensor h = x;
        for (const attn::nn::Linear& layer : layers_) {
            inputs.push_back(h);
            pre.push_back(layer(h));
            const attn::Tensor out = attn::gelu(pre.back());
            h = use_shortcut_ && out.shape() == h.shape() ? attn::Tensor(h + out) : out;
        }
        const attn::Tensor target = attn::zeros({1, 1});  // torch.tensor([[0.]])
        attn::Tensor grad = attn::mse_loss_backward(attn::scalar_tensor(1.0f), h, target);
        // Backward, last layer first: the shortcut passes `grad` on unchanged, the layer adds
        // what flows back through GELU and the Linear.
        for (std::size_t i = layers_.size(); i-- > 0;) {
            const bool shortcut = use_shortcut_ && inputs[i].shape() == pre[i].shape();
            const attn::Tensor through = layers_[i].backward(inputs[i], attn::gelu_backward(grad, pre[i]));
            grad = shortcut ? attn::Tensor(grad + through) : through;
        }
        std::string out;
        for (std::size_t i = 0; i < layers_.size(); ++i) {
            const attn::Tensor g = attn::mean(attn::Tensor(xt::abs(*layers_[i].weight_grad)));
            out += (i ? "\n" : "") + std::string("layers.") + std::to_string(i) + ".0.weight has gradient mean of " +
                   attn::repr_float(static_cast<double>(g()));
        }
        return out;
    }

private:
    bool use_shortcut_;
    std::vector<attn::nn::Linear> layers_;  // layers[i][0]; layers[i][1] is GELU()
};

}  // namespace ch22
