/// @file transformer_block.hpp
/// @brief Raschka's `TransformerBlock` (ch. 4.5, In [21]): multi-head attention and the
/// feed-forward network, each after a `LayerNorm` (pre-LayerNorm) and each around a shortcut
/// connection, with dropout on the way back in.
#pragma once

#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/config.hpp"
#include "attn/model/feed_forward.hpp"
#include "attn/model/layer_norm.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/saved.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// His `TransformerBlock(cfg)`, for `x [b, T, E]`:
/// ```
/// shortcut = x; x = norm1(x); x = att(x); x = drop_shortcut(x); x = x + shortcut
/// shortcut = x; x = norm2(x); x = ff(x);  x = drop_shortcut(x); x = x + shortcut
/// ```
/// Built in his order from `gen`: `att` (the library's `MultiHeadAttention` with
/// `cfg.attention()`: `W_query`, `W_key`, `W_value`, `out_proj`), `ff`, then `norm1`, `norm2`
/// and `drop_shortcut`, which draw nothing. In training mode the dropout masks are drawn from
/// the generator in the forward's order: the attention weights', then `drop_shortcut`'s twice.
class TransformerBlock : public nn::Module {
public:
    /// Builds the block from `gen`: `12 * E * E + 9 * E` 32-bit draws (plus `3 * E` with
    /// `qkv_bias`).
    /// @throws std::invalid_argument as `GPTConfig::check` (nothing drawn then).
    explicit TransformerBlock(const GPTConfig& cfg, Generator& gen = default_generator());

    /// What `forward` computed, for `x [b, T, E]`, every tensor `[b, T, E]`.
    struct Steps {
        Tensor norm1;        ///< `norm1(x)`
        Tensor att;          ///< `att(norm1(x))`, the attention core on the step backend
        Tensor shortcut1;    ///< `drop_shortcut(att) + x`
        Tensor norm2;        ///< `norm2(shortcut1)`
        Tensor ff;           ///< `ff(norm2)`
        Tensor output;       ///< `drop_shortcut(ff) + shortcut1`
    };

    /// `forward(x)`: `[b, T, E] -> [b, T, E]`, float32.
    /// @throws std::invalid_argument when `x` is not `[b, T, E]`, `T > context_length`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `operator()` in memory the caller keeps between calls (`GPTModel::forward_into`'s): `x`
    /// `[b, T, E]` is replaced by the block's output, and `a` (the attention's output, then the
    /// first shortcut's sum) and `normed` (each norm's output) are given that shape by `sized`.
    /// The same draws and bits as `operator()`; with `drop_shortcut` drawing (training mode,
    /// `p > 0`) it is `x = operator()(x)`.
    /// @throws std::invalid_argument as `operator()` (`x` unchanged then).
    void forward_into(Tensor& x, Tensor& a, Tensor& normed, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)` of his KV-cache script: the attention appends the tokens'
    /// keys and values to `cache` and attends to everything cached
    /// (`MultiHeadAttention::forward(x, cache)`); the rest as `operator()`.
    /// @throws std::invalid_argument as `operator()` and `MultiHeadAttention::forward(x,
    /// cache)` (nothing is appended then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate, the attention through `att.forward_steps` (the
    /// core's step backend): the same draws and the same bits as `operator()`.
    /// @throws std::invalid_argument as `operator()`.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// What the training forward keeps for `backward` (reused across steps).
    struct Saved {
        LayerNorm::Saved norm1;   ///< `norm1(x)`'s
        AttentionSaved att;       ///< `att(norm1(x))`'s (projections, log-sum-exp, dropout multipliers)
        Tensor drop1;             ///< `drop_shortcut`'s multipliers after the attention (empty: none drawn)
        LayerNorm::Saved norm2;   ///< `norm2(shortcut1)`'s
        FeedForward::Saved ff;    ///< `ff(norm2(shortcut1))`'s
        Tensor drop2;             ///< `drop_shortcut`'s multipliers after the feed-forward network
        // The forward's own tensors, kept so that the next step writes into the same memory:
        Tensor dropped;           ///< a dropout's output `[b, T, E]` before its shortcut is added
        Tensor shortcut1;         ///< `x + drop_shortcut(att(norm1(x)))`: `[b, T, E]`
        Tensor output;            ///< the block's result `[b, T, E]`
    };

    /// `forward(x)` keeping in `saved` what `backward` needs: the same draws and bits as
    /// `operator()` (the attention through `att.forward(x, saved)`).
    /// Returns `saved.output`, whose memory the next forward with the same `saved` reuses.
    /// @throws std::invalid_argument as `operator()`.
    const Tensor& forward(const Tensor& x, Saved& saved, Generator& gen = default_generator()) const;

    /// The backward pass, without autograd: given `grad_output = dL/d output` (`[b, T, E]`),
    /// accumulates `.grad` of every parameter and returns `dL/dx`, each tensor's gradient
    /// summed in the order autograd's engine delivers its shares:
    /// ```
    /// g_f   = drop_shortcut.backward(grad_output)          # x2 = drop(ff(norm2(x1))) + x1
    /// g_x1  = norm2.backward(ff.backward(g_f), before = grad_output)
    /// g_a   = drop_shortcut.backward(g_x1)                 # x1 = drop(att(norm1(x))) + x
    /// dL/dx = norm1.backward(att.backward(g_a), before = g_x1)
    /// ```
    /// (a shortcut's identity reaches its input first, then the norm's three shares: see
    /// `LayerNorm::backward`). With Debian's reference BLAS these are PyTorch's bits.
    /// @throws std::invalid_argument when `grad_output` or `saved` do not fit, or a layer was
    /// replaced by one that does not fit since the forward.
    Tensor backward(const Saved& saved, const Tensor& grad_output);

    /// `backward` writing `dL/dx` (`[b, T, E]`) into `grad_x`'s memory (`sized`), the gradients
    /// between its steps in this thread's kept `[b, T, E]` buffers, so that a training step
    /// faults no page after its first; `grad_output` is `[b, T, E]`. `grad_x` must not be
    /// `grad_output`. The same bits as `backward`.
    /// @throws std::invalid_argument as `backward` (`grad_x` unchanged then).
    void backward_into(const Saved& saved, const Tensor& grad_output, Tensor& grad_x);

    /// `"TransformerBlock"`.
    std::string type_name() const override { return "TransformerBlock"; }
    /// `att`, `ff`, `norm1`, `norm2`, `drop_shortcut`: his registration order.
    std::vector<nn::NamedChild> children() override {
        return {{"att", &att}, {"ff", &ff}, {"norm1", &norm1}, {"norm2", &norm2}, {"drop_shortcut", &drop_shortcut}};
    }

    MultiHeadAttention att;      ///< `MultiHeadAttention(E, E, context_length, drop_rate, n_heads, qkv_bias)`
    FeedForward ff;              ///< `FeedForward(cfg)`
    LayerNorm norm1;             ///< before the attention
    LayerNorm norm2;             ///< before the feed-forward network
    nn::Dropout drop_shortcut;   ///< `Dropout(drop_rate)` on both branches

private:
    // Checks x [b, T, E] and the fields that must agree with each other.
    void check(const Tensor& x) const;
    // The second half of the block, from the attention's output `a` and the input `x`.
    Tensor finish(const Tensor& x, Tensor a, Generator& gen) const;
};

}  // namespace attn
