/// @file multihead.hpp
/// @brief Raschka's weight-split `MultiHeadAttention` (ch. 3.6.2; notebook 004's
/// `MultiHeadAtt`), and the map from the wrapper of ch. 3.6.1 to it.
///
/// `operator()` projects, calls the attention core (sdpa.hpp) on the heads, and applies
/// `out_proj`; `forward_steps` keeps every intermediate a chapter prints.
#pragma once

#include <cstddef>
#include <string>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/causal.hpp"
#include "attn/modules/config.hpp"
#include "attn/modules/module.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The keyword arguments of Raschka's `MultiHeadAttention(d_in, d_out, context_length,
/// dropout, num_heads, qkv_bias)`, plus `out_bias` (Raschka's `out_proj` has a bias; notebook
/// 004's `MultiHeadAtt` passes `qkv_bias`, False) and the dropout backend:
/// `MultiHeadAttention({.d_in = 3, .d_out = 2, .context_length = 6, .num_heads = 2})`.
/// It takes `AttentionConfig`'s `d_in`, `d_out`, `context_length`, `dropout`, `num_heads`,
/// `qkv_bias`, `out_bias`, `backend`, and the position scheme `positions`, `rope_base`,
/// `rope_freq` (config.hpp); every other field keeps its default. With RoPE and `out_bias =
/// false` it is Raschka's Llama 2 `MultiHeadAttention(d_in, d_out, context_length, num_heads)`
/// (converting-gpt-to-llama2.ipynb, cell 10: no biases, no dropout, RoPE buffers `cos`, `sin`).
using MultiHeadAttentionConfig = AttentionConfig;

/// Raschka's `MultiHeadAttention` (and notebook 004's `MultiHeadAtt`, which is the same with
/// `out_bias = false`): weight-split multi-head causal attention.
///
/// Built in the order `W_query`, `W_key`, `W_value` (`nn.Linear(d_in, d_out, qkv_bias)`),
/// `out_proj` (`nn.Linear(d_out, d_out, out_bias)`), then `nn.Dropout(dropout)` and the buffer
/// `mask = triu(ones(context_length, context_length), 1)`. Under RoPE the queries and keys are
/// rotated after the split into heads, as his Llama 2 module does (`compute_rope` on both);
/// under ALiBi the core biases the scores; both forward and backward.
class MultiHeadAttention : public nn::Module {
public:
    /// `"MultiHeadAttention"`, as repr prints it.
    std::string type_name() const override { return "MultiHeadAttention"; }
    /// The submodules in PyTorch's registration order: `W_query`, `W_key`, `W_value`, `out_proj`, `dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"W_query", &W_query}, {"W_key", &W_key}, {"W_value", &W_value}, {"out_proj", &out_proj}, {"dropout", &dropout}};
    }
    /// The persistent buffer `mask` (his `register_buffer('mask', ...)`): `state_dict` holds it
    /// as `mask`, before the children's parameters, as PyTorch's does.
    std::vector<nn::NamedBuffer> own_buffers() override { return {{"mask", &mask}}; }

    /// What `forward` computed, for `x: [b, T, d_in]`, `H = num_heads`, `hd = head_dim`.
    struct Steps {
        Tensor queries;        ///< `W_query(x)`: `[b, T, d_out]`
        Tensor keys;           ///< `W_key(x)`: `[b, T, d_out]`
        Tensor values;         ///< `W_value(x)`: `[b, T, d_out]`
        Tensor queries_split;  ///< `queries.view(b, T, H, hd)`: `[b, T, H, hd]`
        Tensor keys_split;     ///< `keys.view(b, T, H, hd)`: `[b, T, H, hd]`
        Tensor values_split;   ///< `values.view(b, T, H, hd)`: `[b, T, H, hd]`
        Tensor queries_heads;  ///< `queries_split.transpose(1, 2)`: `[b, H, T, hd]`
        Tensor keys_heads;     ///< `keys_split.transpose(1, 2)`: `[b, H, T, hd]`
        Tensor values_heads;   ///< `values_split.transpose(1, 2)`: `[b, H, T, hd]`
        /// Under RoPE, `compute_rope(queries_heads, cos, sin)` (what the core reads); empty otherwise.
        Tensor queries_rotated;
        Tensor keys_rotated;   ///< under RoPE, `compute_rope(keys_heads, cos, sin)`; empty otherwise
        Tensor attn_scores;         ///< `queries @ keys.transpose(2, 3)`, masked: `[b, H, T, T]`
        Tensor attn_weights;        ///< `softmax(attn_scores / sqrt(hd))`: `[b, H, T, T]`
        Tensor dropped_weights;     ///< `dropout(attn_weights)`: `[b, H, T, T]`
        Tensor context_heads;       ///< `dropped_weights @ values`: `[b, H, T, hd]`
        Tensor context_transposed;  ///< `.transpose(1, 2)`: `[b, T, H, hd]`
        Tensor context_merged;      ///< `.contiguous().view(b, T, d_out)`: `[b, T, d_out]`
        Tensor context_vec;         ///< `out_proj(context_merged)`: `[b, T, d_out]`
    };

    /// Builds the layers from `gen`: `3 * d_in * d_out + d_out * d_out` 32-bit draws, plus
    /// `3 * d_out` with `qkv_bias` and `d_out` with `out_bias`. Nothing is drawn when the
    /// config is invalid.
    /// @throws std::invalid_argument as `AttentionConfig::check`.
    explicit MultiHeadAttention(const MultiHeadAttentionConfig& config,
                                Generator& gen = default_generator());

    /// Assembles the module from given layers (no draws), e.g. weights taken from another
    /// layout. `W_query`, `W_key`, `W_value`: `[d_out, d_in]` weights; `out_proj`:
    /// `[d_out, d_out]`.
    /// @throws std::invalid_argument when the layers' shapes disagree, `num_heads` does not
    /// divide `d_out`, or `context_length` is 0; std::length_error when the mask cannot be
    /// allocated.
    MultiHeadAttention(nn::Linear W_query, nn::Linear W_key, nn::Linear W_value,
                       nn::Linear out_proj, std::size_t context_length, std::size_t num_heads,
                       double dropout,
                       nn::BernoulliBackend backend = nn::BernoulliBackend::portable);

    /// `forward(x)`: `[b, T, d_in] -> [b, T, d_out]`: the projections, the attention core
    /// (`attend`, `SDPABackend::automatic`: the fast backend gives `forward_steps`' bits
    /// without its `[b, H, T, T]` intermediates), `out_proj`. In training mode with
    /// `dropout > 0` the mask of the `[b, H, T, T]` weights is drawn from `gen`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or
    /// a public field no longer fits (a layer replaced by one of another shape, `num_heads *
    /// head_dim != d_out`, `dropout.p` outside [0, 1]), naming it.
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `operator()` into `y`, a tensor the caller keeps between calls (given the shape
    /// `[b, T, d_out]` by `sized`, its memory reused when it holds that many floats): the same
    /// draws and bits, without a fresh output tensor per call.
    /// @throws std::invalid_argument as `operator()` (`y` unchanged then).
    void forward_into(const Tensor& x, Tensor& y, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate tensor (same draws, same result): the teaching
    /// path, step by step, with the core's step backend in the middle.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward(x, use_cache=True)` of Raschka's KV-cached `MultiHeadAttention`
    /// (ch04/03_kv-cache/gpt_with_kv_cache.py): `x [b, T, d_in]` are the tokens at positions
    /// `cache.pos .. cache.pos + T - 1`; their keys and values `[b, H, T, head_dim]` are
    /// appended to `cache` (a full `KVCache`: his `torch.cat` of `cache_k`, `cache_v`), and the
    /// queries attend to every cached key through rows `cache.pos ..` of the `mask` buffer (his
    /// `self.mask.bool()[ptr_current_pos:ptr_current_pos + T, :T_k]`). Returns `[b, T, d_out]`:
    /// for the same inputs, the rows a forward over the whole sequence gives, bit for bit where a
    /// row has as many keys on both sides (the last one; every row while fewer than 8 keys),
    /// else up to the order in which the softmax adds them (PyTorch's, which depends on the
    /// row's length).
    /// In training mode the `[b, H, T, T_k]` dropout mask is drawn from `gen`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, a position would lie
    /// beyond `context_length` ("a token beyond the context: positions a..b but
    /// context_length = n"), the cache is a ring or holds another batch size or head shape, or
    /// a public field no longer fits (nothing is changed then).
    Tensor forward(const Tensor& x, KVCache& cache, Generator& gen = default_generator()) const;

    /// `forward(x)` keeping in `saved` what `backward` needs (same draws, same result as
    /// `operator()`): the input, the projections, the merged heads (`out_proj`'s input) and,
    /// from the core, each query row's log-sum-exp and the dropout multipliers. Returns
    /// `saved.output`, whose memory the next forward with the same `saved` reuses.
    /// @throws std::invalid_argument as `operator()`.
    const Tensor& forward(const Tensor& x, AttentionSaved& saved, Generator& gen = default_generator()) const;

    /// The backward pass, without autograd (llm.c's `attention_backward`, through the core):
    /// given `grad_output = dL/d context_vec` (`[b, T, d_out]`) and what `forward` saved,
    /// accumulates `.grad` of every parameter and returns `dL/dx` (`[b, T, d_in]`):
    /// 1. `out_proj.backward`: `out_proj.weight.grad`, `out_proj.bias.grad`, and dL/d(merged
    ///    heads), whose view as `[b, H, T, head_dim]` heads is the backward of the merge;
    /// 2. the core's backward (`attend_backward`, on the process's default backend: dropout's
    ///    saved mask, the softmax's Jacobian-vector product, the mask, the scale): dQ, dK, dV in
    ///    the projections' merged layout (the backward of `.view().transpose(1, 2)`);
    /// 3. `W_query.backward`, `W_key.backward`, `W_value.backward`: their weight gradients and
    ///    three shares of `dL/dx`, added as PyTorch's autograd adds them: `(value + key) + query`
    ///    for `projection_order = query_key_value`, `(value + query) + key` for `key_query_value`.
    /// With the step or fast backend these are PyTorch's bits on the reference BLAS.
    /// @throws std::invalid_argument when `grad_output` or `saved` do not fit, or a layer was
    /// replaced by one that does not fit since the forward.
    Tensor backward(const AttentionSaved& saved, const Tensor& grad_output);

    /// `backward` writing `dL/dx` (`[b, T, d_in]`) into `grad_x`'s memory (`sized`), so that a
    /// training step reuses the last step's; `grad_output` is `[b, T, d_out]`. `grad_x` must not
    /// be `grad_output`. The same bits as `backward`.
    /// @throws std::invalid_argument as `backward` (`grad_x` unchanged then).
    void backward_into(const AttentionSaved& saved, const Tensor& grad_output, Tensor& grad_x);

    /// `backward` inside a larger graph: `grad_x_before` (`[b, T, d_in]`) is the gradient
    /// `x` already received from its other uses, e.g. the identity of a residual connection
    /// `x + mha(x)`, which autograd delivers first; the result is `((grad_x_before +
    /// dx_value) + dx_key) + dx_query`, the bits autograd's buffer holds.
    /// @throws std::invalid_argument as `backward`, or when `grad_x_before` is not `x`'s shape
    /// (nothing accumulated then).
    Tensor backward(const AttentionSaved& saved, const Tensor& grad_output, const Tensor& grad_x_before);

    /// The input width `d_in`.
    std::size_t d_in() const { return W_query.in_features(); }
    /// The output width `d_out` (all heads together).
    std::size_t d_out() const { return W_query.out_features(); }
    /// The most tokens `forward` accepts: the mask's size.
    /// @throws std::invalid_argument when `mask` (public) was replaced by a 0-d tensor.
    std::size_t context_length() const {
        if (mask.dimension() == 0) throw_shape_error("MultiHeadAttention (mask)", "2-D", Shape{});
        return mask.shape()[0];
    }

    std::size_t num_heads;  ///< H (public: checked against the weights at every forward)
    std::size_t head_dim;   ///< `d_out / num_heads` (likewise)
    /// The position scheme and its state: RoPE's `cos`, `sin` `[context_length, head_dim]`, or
    /// ALiBi's `[num_heads]` slopes (none for a module assembled from layers; set it after).
    ModulePositions positions;
    nn::Linear W_query;     ///< `Linear(d_in, d_out)`
    nn::Linear W_key;       ///< `Linear(d_in, d_out)`
    nn::Linear W_value;     ///< `Linear(d_in, d_out)`
    nn::Linear out_proj;    ///< `Linear(d_out, d_out)` (notebook 004 calls it `out`)
    nn::Dropout dropout;    ///< on the attention weights
    Tensor mask;            ///< `[context_length, context_length]`: 1 above the diagonal
    /// Which projection the mirrored PyTorch code makes first: the order in which `backward`
    /// adds the three shares of `dL/dx` (config.hpp; `key_query_value` in his GPT's blocks).
    ProjectionOrder projection_order = ProjectionOrder::query_key_value;

private:
    // Checks a config for this module before anything is drawn (AttentionConfig::check, then
    // that its weights can be allocated).
    static void validate(const AttentionConfig& config);
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The core's options: the mask read from `mask`, / sqrt(head_dim), dropout.
    SDPAOptions options(const BufferMask& causal, Generator& gen) const;
};

/// The `MultiHeadAttention` that computes what `wrapper` computes: the heads' `W_query`
/// (and `W_key`, `W_value`) weights stacked along their output dimension (head `h` owns rows
/// `h * d_out .. (h + 1) * d_out - 1`, so `view(b, T, H, d_out)` hands each head its own
/// columns), biases likewise, `num_heads` heads of `head_dim = d_out`, and an identity
/// `out_proj` without bias. The result equals `torch.cat` of the heads' outputs (with dropout
/// 0 or in evaluation mode; dropout masks would be drawn in a different order).
/// @throws std::invalid_argument when the heads differ in shape or context length.
MultiHeadAttention stack_heads(const MultiHeadAttentionWrapper& wrapper);

}  // namespace attn
