/// @file torch_mha.hpp
/// @brief `torch.nn.MultiheadAttention` as PyTorch 1.13 defines it (torch/nn/modules/activation.py
/// and `F.multi_head_attention_forward`, torch/nn/functional.py): self-attention and
/// cross-attention (queries from one sequence, keys and values from another, `Tq != Tk`, other
/// widths through `kdim`/`vdim`), the source's padding (`key_padding_mask`) and the target's
/// causal mask together, weights averaged over the heads or per head, dropout on the weights in
/// training; its backward; and the cross-attention cache (the memory's keys and values
/// projected once, reused at every decoding step).
///
/// What the forward computes, in PyTorch's order of float operations (its math path, which
/// every call with a mask, with `key` not `query`, or in training takes):
/// ```
/// q = query W_q^T + b_q        k = key W_k^T + b_k        v = value W_v^T + b_v
///     (W_q, W_k, W_v the row blocks of the packed in_proj_weight, or q/k/v_proj_weight)
/// k, v += [bias_k], [bias_v]   (add_bias_kv: one more key and value, shared by the batch)
/// k, v += [0], [0]             (add_zero_attn: a zero key and value, per head)
/// per head: q_scaled = q / sqrt(head_dim)                 (float32 division)
///           s = q_scaled k^T, -inf where attn_mask or key_padding_mask hide the key
///           p = softmax(s), dropout(p) in training
///           o = p v
/// attn_output = out_proj(o, heads merged)
/// attn_output_weights = p (the dropped weights) summed over the heads / num_heads, or per head
/// ```
/// The attention in the middle is the one core (attention/sdpa.hpp) with the scores scaled by 1
/// (the queries are scaled before, as PyTorch scales them), on any backend: the fast backend
/// gives the step backend's bits, so the output is PyTorch's on the reference BLAS.
/// A row whose keys are all hidden (a sequence whose every source token is padding) is NaN
/// in the weights and in the output, as PyTorch 1.13 returns it.
///
/// Not followed: PyTorch's separate "fast path" (`torch._native_multi_head_attention`), which it
/// takes only for batched self-attention in evaluation mode without gradients, without
/// `attn_mask`, with `batch_first` and an even number of heads; this module computes the math
/// path there too (the same values to a few ulp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// `torch.nn.modules.linear.NonDynamicallyQuantizableLinear`: a `Linear` under another name
/// (nn.MultiheadAttention's `out_proj`, so that dynamic quantisation leaves it alone); repr
/// `NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)`.
class NonDynamicallyQuantizableLinear : public nn::Linear {
public:
    using nn::Linear::Linear;
    /// Wraps a `Linear`'s parameters (and its gradients).
    explicit NonDynamicallyQuantizableLinear(nn::Linear layer) : nn::Linear(std::move(layer)) {}
    /// `"NonDynamicallyQuantizableLinear"`.
    std::string type_name() const override { return "NonDynamicallyQuantizableLinear"; }
};

/// The arguments of `nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True,
/// add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False)`, in its
/// order, plus the dropout's Bernoulli backend:
/// `MultiheadAttention({.embed_dim = 8, .num_heads = 2, .batch_first = true})`.
struct MultiheadAttentionConfig {
    std::size_t embed_dim = 0;  ///< E: the query's width and the output's
    std::size_t num_heads = 0;  ///< H: must divide `embed_dim`
    double dropout = 0.0;       ///< drop probability on the attention weights in training, [0, 1]
    bool bias = true;           ///< `in_proj_bias` and `out_proj.bias` (zeros at construction)
    bool add_bias_kv = false;   ///< one learned key and value appended to the source
    bool add_zero_attn = false; ///< a zero key and value appended to the source
    std::optional<std::size_t> kdim{};  ///< the key's width (unset: `embed_dim`)
    std::optional<std::size_t> vdim{};  ///< the value's width (unset: `embed_dim`)
    bool batch_first = false;   ///< inputs `[B, L, E]` (true) or `[L, B, E]` (PyTorch's default)
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< the dropout's draws

    /// @throws std::invalid_argument naming the field: a size of 0, `num_heads` not dividing
    /// `embed_dim` (PyTorch: "embed_dim must be divisible by num_heads"), `dropout` outside
    /// [0, 1], an unknown backend; std::length_error when a weight cannot be allocated.
    void validate() const;
};

/// The keyword arguments of `forward` after `query, key, value`. Masks are not owned: they
/// must outlive the call. PyTorch's one `attn_mask` is either boolean or float: here
/// `attn_mask` or `attn_bias`, not both.
struct MultiheadAttentionArgs {
    /// `key_padding_mask`: `[B, S]` (unbatched `[S]`), true where the key is padding and must
    /// be ignored.
    const BoolTensor* key_padding_mask = nullptr;
    bool need_weights = true;  ///< also return the attention weights
    /// `attn_mask` as booleans, true where a query may NOT attend: `[L, S]` (every sequence and
    /// head) or `[B * H, L, S]`. `causal_attn_mask(T)` (masks.hpp) is the causal mask.
    const BoolTensor* attn_mask = nullptr;
    /// `attn_mask` as floats, added to the scores: `[L, S]` or `[B * H, L, S]`.
    const Tensor* attn_bias = nullptr;
    bool average_attn_weights = true;  ///< weights averaged over the heads (else per head)
};

/// What `forward` returns: `(attn_output, attn_output_weights)`.
struct MultiheadAttentionOutput {
    /// `[B, L, E]` with `batch_first`, else `[L, B, E]` (unbatched: `[L, E]`).
    Tensor attn_output;
    /// With `need_weights`: `[B, L, S]` averaged over the heads, or `[B, H, L, S]` per head
    /// (unbatched: `[L, S]`, `[H, L, S]`); `S` counts the appended keys. Empty otherwise.
    std::optional<Tensor> attn_output_weights;
};

/// What a training forward keeps for `backward` (PyTorch's saved tensors, written out).
/// Everything batch-major (`[B, T, *]`) whatever the module's layout.
struct MultiheadAttentionSaved {
    Tensor query;     ///< the query input `[B, L, E]`
    Tensor key;       ///< the key input `[B, S, kdim]` (a 0-d tensor when `key` was `query`)
    Tensor value;     ///< the value input `[B, S, vdim]` (0-d when `value` was `key`)
    Tensor q_scaled;  ///< `q / sqrt(head_dim)`: `[B, L, E]`
    Tensor keys;      ///< the projected keys with the appended ones: `[B, S', E]`
    Tensor values;    ///< likewise: `[B, S', E]`
    Tensor context;   ///< the attention's output, heads merged: `[B, L, E]`
    AttendSaved attention;  ///< each query row's log-sum-exp, the dropout multipliers
    bool is_causal = false;  ///< the core ran with `is_causal`
    BoolTensor allow;   ///< the core's `attn_mask` (true = may attend), 0-d when none
    Tensor bias;        ///< the core's `attn_bias`, 0-d when none
    bool key_is_query = false;    ///< `key` was the same tensor as `query` (self-attention)
    bool value_is_key = false;    ///< `value` was the same tensor as `key`
    bool batched = true;          ///< the inputs were 3-D
    std::size_t source_len = 0;   ///< S, the source tokens before the appended ones
    double dropout_p = 0.0;       ///< the forward's dropout probability (0 in evaluation)
};

/// What `backward` returns: `dL/dquery`, `dL/dkey`, `dL/dvalue` in the inputs' layouts. When
/// `key` was `query` its gradient is in `query` alone and `key` is empty (PyTorch's autograd
/// delivers one gradient for one tensor); likewise `value` when it was `key`.
struct MultiheadAttentionGrads {
    Tensor query;                ///< the query's shape
    std::optional<Tensor> key;   ///< the key's shape, or empty (see above)
    std::optional<Tensor> value; ///< the value's shape, or empty (see above)
};

/// `torch.nn.MultiheadAttention`. Built in PyTorch's order of draws: `out_proj`
/// (`NonDynamicallyQuantizableLinear(E, E, bias)`, Kaiming-uniform weight and bias), then
/// `xavier_uniform_` of `in_proj_weight [3E, E]` (or of `q_proj_weight [E, E]`,
/// `k_proj_weight [E, kdim]`, `v_proj_weight [E, vdim]`, in that order, when `kdim` or `vdim`
/// differs from E), the biases set to 0 (`out_proj.bias` too, after its draws), then
/// `xavier_normal_` of `bias_k`, `bias_v` `[1, 1, E]`. A seed gives PyTorch's weights.
/// Parameters in `named_parameters()` order: `in_proj_weight` (or `q_proj_weight`,
/// `k_proj_weight`, `v_proj_weight`), `in_proj_bias`, `bias_k`, `bias_v`, `out_proj.weight`,
/// `out_proj.bias`.
class MultiheadAttention : public nn::Module {
public:
    /// Builds the module from `gen` (nothing drawn when `config` is invalid).
    /// @throws as `MultiheadAttentionConfig::validate`.
    explicit MultiheadAttention(const MultiheadAttentionConfig& config, Generator& gen = default_generator());

    /// Assembles a module (`batch_first`, dropout 0, no draws) from a packed
    /// `in_proj_weight [3E, d_in]`, `in_proj_bias [3E]` or none, and `out_proj [E, E]`. One
    /// extension over PyTorch, for chapter 11's map from Raschka's module: the inputs may have
    /// `d_in != E` features (PyTorch requires the query to be E wide).
    /// @throws std::invalid_argument when the shapes disagree or `num_heads` does not divide E.
    MultiheadAttention(Tensor in_proj_weight, std::optional<Tensor> in_proj_bias, nn::Linear out_proj,
                       std::size_t num_heads);

    /// `"MultiheadAttention"`.
    std::string type_name() const override { return "MultiheadAttention"; }
    /// `out_proj`, its one submodule (repr: `MultiheadAttention(\n  (out_proj): ...\n)`).
    std::vector<nn::NamedChild> children() override { return {{"out_proj", &out_proj}}; }
    /// The parameters the module holds itself, in registration order (see the class).
    std::vector<nn::NamedParameter> own_parameters() override;

    /// `forward(query, key, value, key_padding_mask, need_weights, attn_mask,
    /// average_attn_weights)`. Shapes with `batch_first` (else the first two dimensions
    /// swapped; unbatched 2-D inputs drop B): `query [B, L, E]`, `key [B, S, kdim]`,
    /// `value [B, S, vdim]`. Passing the same tensor as `query` and `key` (and `value`) is
    /// self-attention (what PyTorch's `query is key` tests; the forward's bits do not depend
    /// on it, its backward does). In training mode with `dropout > 0` the `[B, H, L, S']`
    /// mask is drawn from `gen`.
    /// @throws std::invalid_argument with PyTorch's checks, naming expected and actual shapes:
    /// ranks, the query's width ("was expecting embedding dimension of 8, but got 6"), the
    /// key's and value's widths (`kdim`, `vdim`), batch and source lengths that differ, a
    /// `key_padding_mask` that is not `[B, S]`, an `attn_mask` that is not `[L, S]` or
    /// `[B * H, L, S]`, both `attn_mask` and `attn_bias`; or a public field changed into a state
    /// that does not fit.
    MultiheadAttentionOutput operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const MultiheadAttentionArgs& args = {},
                                        Generator& gen = default_generator()) const;

    /// The same forward, keeping in `saved` what `backward` needs (the same draws and result).
    /// @throws as `operator()`.
    MultiheadAttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const MultiheadAttentionArgs& args, MultiheadAttentionSaved& saved,
                                     Generator& gen = default_generator()) const;

    /// The backward pass of `forward`, in autograd's order of float operations: given
    /// `grad_output = dL/d attn_output` (its shape), accumulates `.grad` of every parameter and
    /// returns the inputs' gradients:
    /// 1. `out_proj`: weight `+= dO^T o`, bias `+= dO.sum(0)`, `do = dO W`, the rows taken in
    ///    PyTorch's sequence-first order (`[L, B]`: the weight gradients sum over them in order);
    /// 2. the core's backward (dropout's saved mask, the softmax's Jacobian-vector product, the
    ///    masks): `dq_scaled`, `dk`, `dv`; then `dq = dq_scaled / sqrt(head_dim)`;
    /// 3. the in-projection as the forward ran it: one product for self-attention
    ///    (`[dq | dk | dv] W_in`), two for `key` = `value` (`dq W_q`, `[dk | dv] W_kv`), else three;
    ///    `in_proj_weight.grad` the blocks' gradients side by side; `bias_k`, `bias_v` the sums
    ///    over the batch of their keys' gradients.
    /// The attention weights are taken as not used by the loss (their gradient is 0).
    /// @throws std::invalid_argument when `grad_output` or `saved` do not fit the module.
    MultiheadAttentionGrads backward(const MultiheadAttentionSaved& saved, const Tensor& grad_output);

    /// The cross-attention cache: the memory's keys and values projected once (with the
    /// appended `bias_k`/`bias_v` and zero keys), as heads `[B, H, S', head_dim]` in the one
    /// `KVCache` (`pos = S'`), for `operator()(query, cache, ...)` at every decoding step.
    /// `key [B, S, kdim]`, `value [B, S, vdim]` in the module's layout.
    /// @throws std::invalid_argument as `operator()` for the key and value.
    KVCache memory_cache(const Tensor& key, const Tensor& value) const;

    /// `forward` with the keys and values taken from `memory` (built by `memory_cache` from
    /// the same module): the same result as `operator()(query, key, value, args)` with the
    /// memory's key and value, bit for bit, without projecting them again.
    /// `args.key_padding_mask` is `[B, S]` for the memory's S source tokens.
    /// @throws std::invalid_argument as `operator()`, or when `memory` does not hold
    /// `[B, H, S', head_dim]` keys and values.
    MultiheadAttentionOutput operator()(const Tensor& query, const KVCache& memory,
                                        const MultiheadAttentionArgs& args = {},
                                        Generator& gen = default_generator()) const;

    std::size_t embed_dim;     ///< E
    std::size_t kdim;          ///< the key's width
    std::size_t vdim;          ///< the value's width
    std::size_t num_heads;     ///< H
    std::size_t head_dim;      ///< `E / H`
    double dropout;            ///< `self.dropout`: p on the weights, in training
    bool batch_first;          ///< inputs `[B, L, E]` (else `[L, B, E]`)
    bool add_zero_attn;        ///< a zero key and value appended
    nn::BernoulliBackend backend;  ///< the dropout's Bernoulli path

    std::optional<Tensor> in_proj_weight;  ///< `[3E, E]`: rows q, then k, then v (same widths)
    std::optional<Tensor> q_proj_weight;   ///< `[E, E]` (when kdim or vdim differ from E)
    std::optional<Tensor> k_proj_weight;   ///< `[E, kdim]`
    std::optional<Tensor> v_proj_weight;   ///< `[E, vdim]`
    std::optional<Tensor> in_proj_bias;    ///< `[3E]` (with `bias`)
    std::optional<Tensor> bias_k;          ///< `[1, 1, E]` (with `add_bias_kv`)
    std::optional<Tensor> bias_v;          ///< `[1, 1, E]` (with `add_bias_kv`)
    NonDynamicallyQuantizableLinear out_proj;  ///< `[E, E]`

    std::optional<Tensor> in_proj_weight_grad;  ///< `.grad` of `in_proj_weight`
    std::optional<Tensor> q_proj_weight_grad;   ///< `.grad` of `q_proj_weight`
    std::optional<Tensor> k_proj_weight_grad;   ///< `.grad` of `k_proj_weight`
    std::optional<Tensor> v_proj_weight_grad;   ///< `.grad` of `v_proj_weight`
    std::optional<Tensor> in_proj_bias_grad;    ///< `.grad` of `in_proj_bias`
    std::optional<Tensor> bias_k_grad;          ///< `.grad` of `bias_k`
    std::optional<Tensor> bias_v_grad;          ///< `.grad` of `bias_v`
};

}  // namespace attn
