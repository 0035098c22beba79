/// @file causal.hpp
/// @brief Causal attention over batches (Raschka ch. 3.5), and the first multi-head
/// attention: `num_heads` of them side by side (ch. 3.6.1).
///
/// Each module's `operator()` projects, calls the attention core (sdpa.hpp) and returns;
/// `forward_steps` keeps every intermediate a chapter prints, from the core's step backend.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/config.hpp"
#include "attn/modules/saved.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The keyword arguments of `CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)`
/// (notebook 002 In [16], Raschka ch. 3.5.3), plus how dropout draws its masks. Written with
/// designated initialisers, a call reads like the Python one:
/// `CausalAttention({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `qkv_bias`, `backend`
/// (config.hpp); every other field keeps its default.
using CausalAttentionConfig = AttentionConfig;

/// `CausalAttention` of notebook 002 In [16] and 004 In [52] (Raschka ch. 3.5.3): batched
/// self-attention in which each token attends only to itself and the tokens before it, with
/// dropout on the attention weights.
///
/// Three `nn.Linear(d_in, d_out, bias=qkv_bias)` layers built in the order query, key, value,
/// then `nn.Dropout(dropout)` (which draws nothing when built), and the buffer
/// `mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)`.
class CausalAttention : public nn::Module {
public:
    /// `"CausalAttention"`, as repr prints it.
    std::string type_name() const override { return "CausalAttention"; }
    /// The submodules in PyTorch's registration order: `W_query`, `W_key`, `W_value`, `dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_key", &W_key}, {"W_value", &W_value}, {"dropout", &dropout}};
    }
    /// The persistent buffer `mask` (his `register_buffer('mask', ...)`): `state_dict` holds it
    /// as `mask`, before the children's parameters, as PyTorch's does.
    std::vector<nn::NamedBuffer> own_buffers() override { return {{"mask", &mask}}; }

    /// What `forward` computed, step by step, for a reader (shapes for `x: [b, T, d_in]`).
    struct Steps {
        Tensor queries;          ///< `W_query(x)`: `[b, T, d_out]`
        Tensor keys;             ///< `W_key(x)`: `[b, T, d_out]`
        Tensor values;           ///< `W_value(x)`: `[b, T, d_out]`
        Tensor attn_scores;      ///< `queries @ keys.transpose(1, 2)`, `-inf` above the
                                 ///< diagonal (after `masked_fill_`): `[b, T, T]`
        Tensor attn_weights;     ///< `softmax(attn_scores / sqrt(d_out))`: `[b, T, T]`
        Tensor dropped_weights;  ///< `dropout(attn_weights)`: `[b, T, T]`
        Tensor context_vec;      ///< `dropped_weights @ values`: `[b, T, d_out]`
    };

    /// Builds the three layers from `gen` (`3 * d_in * d_out` 32-bit draws, plus `3 * d_out`
    /// with `qkv_bias`). `config.backend` chooses how dropout masks are drawn (`nn::Dropout`).
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit CausalAttention(const CausalAttentionConfig& config,
                             Generator& gen = default_generator());

    /// `forward(x)`: `x: [b, T, d_in] -> context_vec: [b, T, d_out]`: the projections, then
    /// the attention core (`SDPABackend::automatic`). In training mode with `dropout > 0` the
    /// dropout mask of the `[b, T, T]` weights is drawn from `gen`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, when a public field no
    /// longer fits (`W_key`/`W_value` not `[d_out, d_in]`, `dropout.p` outside [0, 1]), or when
    /// `T > context_length`: the mask has only `context_length` rows. (PyTorch fails there
    /// too, but later and less clearly: `masked_fill_` cannot broadcast the cut
    /// `[context_length, context_length]` mask over `[b, T, T]`.)
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate tensor (same draws, same result): the
    /// projections, then the core's step backend (`scaled_dot_product_attention_steps`).
    /// @throws std::invalid_argument as `operator()`.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x)` keeping in `saved` what `backward` needs (same draws, same result as
    /// `operator()`): the input, the projections, the context and, from the core, each query
    /// row's log-sum-exp and the dropout multipliers. Returns `saved.context` (`[b, T, d_out]`),
    /// whose memory the next forward with the same `saved` reuses.
    /// @throws std::invalid_argument as `operator()`.
    const Tensor& forward(const Tensor& x, AttentionSaved& saved, Generator& gen = default_generator()) const;

    /// The backward pass, without autograd: given `grad_output = dL/d context_vec`
    /// (`[b, T, d_out]`) and what `forward` saved, accumulates `.grad` of `W_query.weight`,
    /// `W_key.weight`, `W_value.weight` (and their biases) and returns `dL/dx` (`[b, T, d_in]`):
    /// the core's backward (`attend_backward`, on the process's default backend) gives dQ, dK,
    /// dV; each `nn::Linear::backward` turns its own into a weight gradient and a share of
    /// `dL/dx`, and the three shares are added as PyTorch's autograd adds them, `(value + key) +
    /// query`. With the step or fast backend, these are PyTorch's bits on the reference BLAS.
    /// @throws std::invalid_argument when `grad_output` or `saved` do not fit, or a layer was
    /// replaced by one that does not fit since the forward.
    Tensor backward(const AttentionSaved& saved, const Tensor& grad_output);

    /// The input width `d_in`.
    std::size_t d_in() const { return W_query.in_features(); }
    /// The output width `d_out`.
    std::size_t d_out() const { return W_query.out_features(); }
    /// The most tokens `forward` accepts: the mask's size.
    /// @throws std::invalid_argument when `mask` (public) was replaced by a 0-d tensor.
    std::size_t context_length() const {
        if (mask.dimension() == 0) throw_shape_error("CausalAttention (mask)", "2-D", Shape{});
        return mask.shape()[0];
    }

    nn::Linear W_query;  ///< `Linear(d_in, d_out)`
    nn::Linear W_key;    ///< `Linear(d_in, d_out)`
    nn::Linear W_value;  ///< `Linear(d_in, d_out)`
    nn::Dropout dropout; ///< on the attention weights
    Tensor mask;         ///< `[context_length, context_length]`: 1 above the diagonal, else 0

private:
    // Checks a config for this module before anything is drawn (AttentionConfig::check, then
    // that its weights can be allocated).
    static void validate(const AttentionConfig& config);
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The core's options: the mask read from `mask`, / sqrt(d_out), dropout.
    SDPAOptions options(const BufferMask& causal, Generator& gen) const;
};

/// The keyword arguments of Raschka's `MultiHeadAttentionWrapper(d_in, d_out, context_length,
/// dropout, num_heads, qkv_bias)`: here `d_out` is each head's width, so the output has
/// `num_heads * d_out` features.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`, `qkv_bias`, `backend` (config.hpp);
/// every other field keeps its default.
using MultiHeadAttentionWrapperConfig = AttentionConfig;

/// Raschka's `MultiHeadAttentionWrapper`: `num_heads` `CausalAttention(d_in, d_out, ...)`
/// heads, built one after the other, run one after the other, outputs concatenated:
/// `x: [b, T, d_in] -> [b, T, num_heads * d_out]`. Here `d_out` is each head's width.
class MultiHeadAttentionWrapper : public nn::Module {
public:
    /// `"MultiHeadAttentionWrapper"`, as repr prints it.
    std::string type_name() const override { return "MultiHeadAttentionWrapper"; }
    /// The submodules in PyTorch's registration order: `heads`.
    std::vector<nn::NamedChild> children() override {
        return {{"heads", &heads}};
    }

    /// What `forward` computed.
    struct Steps {
        std::vector<Tensor> head_outputs;  ///< head `h`'s context vectors: `[b, T, d_out]`
        Tensor context_vec;                ///< `torch.cat(head_outputs, dim=-1)`:
                                           ///< `[b, T, num_heads * d_out]`
    };

    /// Builds the heads in order from `gen` (each draws as `CausalAttention` does).
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit MultiHeadAttentionWrapper(const MultiHeadAttentionWrapperConfig& config,
                                       Generator& gen = default_generator());

    /// `forward(x)`: `[b, T, d_in] -> [b, T, num_heads * d_out]`; heads draw their dropout
    /// masks in order.
    /// @throws std::invalid_argument as `CausalAttention` does (wrong shape, too many tokens).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping each head's output.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// The number of heads.
    std::size_t num_heads() const { return heads.size(); }

    nn::ModuleList<CausalAttention> heads;  ///< `nn.ModuleList` of the heads

private:
    // Checks a config for this module before anything is drawn (AttentionConfig::check, then
    // that its weights can be allocated).
    static void validate(const AttentionConfig& config);
};

}  // namespace attn
