/// @file efficient.hpp
/// @brief The layouts of Raschka's efficient multi-head attention comparison
/// (LLMs-from-scratch, ch03/02_bonus_efficient-multihead-attention) that make sense without
/// autograd, and the maps from chapter 7's `MultiHeadAttention` to each of them.
///
/// - `MultiHeadAttentionCombinedQKV`: one `qkv = Linear(d_in, 3 d_out)` (GPT-2's `c_attn`),
///   `view(b, T, 3, H, hd).permute(2, 0, 3, 1, 4)`, then one of four kernels: chapter 7's
///   matmul + softmax, `scaled_dot_product_attention` with `is_causal` or with an explicit
///   mask (Raschka's `MHAPyTorchScaledDotProduct` and `MHAPyTorchSDPAWithoutFlash`), or the
///   tiled kernel of chapter 12; then `proj`;
/// - `MHAEinsum`: weights as `[d_in, d_out]` parameters, the projections an einsum written here
///   as the contraction it is (a sum over the repeated index, in order); its attention
///   products (`bhnd,bhmd->bhnm`, `bhnm,bhmd->bhnd`) are the attention core's, whose sums run
///   in the same order;
/// - `MultiheadAttention` (torch_mha.hpp): `torch.nn.MultiheadAttention(embed_dim, num_heads,
///   bias, batch_first=True)`'s layout: packed `in_proj_weight [3E, E]`/`in_proj_bias [3E]`,
///   `out_proj`, and `need_weights` returning the weights averaged over heads.
/// All are float32, dropout 0 (the comparison's setting), causal, and all run the attention
/// core (sdpa.hpp) after their own projections.
#pragma once

#include <cstddef>
#include <optional>

#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/modules/torch_mha.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// Which of Raschka's attention variants a `MultiHeadAttentionCombinedQKV` runs after its
/// projection: each is a setting of the attention core.
enum class AttentionKernel {
    matmul_softmax,  ///< `queries @ keys^T`, `masked_fill_`, `softmax(/ hd**0.5)`, `@ values`
    sdpa_is_causal,  ///< `F.scaled_dot_product_attention(q, k, v, is_causal=True)`
    sdpa_attn_mask,  ///< the same with an explicit `[T, T]` bool mask (true = may attend)
    tiled,           ///< the core's tiled backend (chapter 12), blocks of 64 x 64
};

/// The keyword arguments of Raschka's `MultiHeadAttentionCombinedQKV(d_in, d_out, num_heads,
/// context_length, dropout=0.0, qkv_bias=False)`, with the kernel (which Raschka's variants
/// differ by) in place of dropout.
struct MultiHeadAttentionCombinedQKVConfig {
    std::size_t d_in = 0;            ///< input features per token
    std::size_t d_out = 0;           ///< output features, all heads together
    std::size_t num_heads = 0;       ///< H; must divide `d_out`
    std::size_t context_length = 0;  ///< the most tokens `forward` accepts
    bool qkv_bias = false;           ///< bias in `qkv` (`proj` always has one)
    AttentionKernel kernel = AttentionKernel::matmul_softmax;  ///< what runs after `qkv`

    /// @throws std::invalid_argument naming the field and its value when a size is 0 or
    /// `num_heads` does not divide `d_out`.
    void validate() const;
};

/// Raschka's `MultiHeadAttentionCombinedQKV` (and, by `kernel`, his SDPA and tiled variants):
/// `x [b, T, d_in] -> [b, T, d_out]`. Built in the order `qkv`, `proj`, as PyTorch draws them.
class MultiHeadAttentionCombinedQKV {
public:
    /// Draws `qkv` then `proj` from `gen`. @throws std::invalid_argument as `validate`.
    explicit MultiHeadAttentionCombinedQKV(const MultiHeadAttentionCombinedQKVConfig& config,
                                           Generator& gen = default_generator());
    /// Assembles the module from given layers: `qkv [3 d_out, d_in]`, `proj [d_out, d_out]`.
    /// @throws std::invalid_argument when the shapes disagree or `num_heads` does not divide.
    MultiHeadAttentionCombinedQKV(nn::Linear qkv, nn::Linear proj, std::size_t context_length,
                                  std::size_t num_heads, AttentionKernel kernel);

    /// `forward(x)`: `[b, T, d_in] -> [b, T, d_out]`: `qkv`, q, k and v read as heads out of
    /// the `[b, T, 3 d_out]` projection (`view(b, T, 3, H, hd).permute(2, 0, 3, 1, 4)` without
    /// a copy), the core with the kernel's setting, `proj`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, a
    /// public field no longer fits, or `kernel` holds a value outside its enumeration.
    Tensor operator()(const Tensor& x) const;

    std::size_t num_heads;   ///< H
    std::size_t head_dim;    ///< `d_out / H`
    nn::Linear qkv;          ///< `Linear(d_in, 3 d_out)`: rows q, then k, then v
    nn::Linear proj;         ///< `Linear(d_out, d_out)`
    Tensor mask;             ///< `triu(ones(context_length, context_length), 1)`
    AttentionKernel kernel;  ///< the kernel after the projection
};

/// Raschka's `MHAEinsum`: `W_query`, `W_key`, `W_value` are `[d_in, d_out]` parameters (the
/// transpose of a `Linear`'s weight), optional biases `[d_out]`, and `out_proj`.
class MHAEinsum {
public:
    /// Assembles the module. @throws std::invalid_argument when the shapes disagree or
    /// `num_heads` does not divide `d_out`.
    MHAEinsum(Tensor W_query, Tensor W_key, Tensor W_value, std::optional<Tensor> bias_q,
              std::optional<Tensor> bias_k, std::optional<Tensor> bias_v, nn::Linear out_proj,
              std::size_t context_length, std::size_t num_heads);

    /// `forward(x)`: `einsum("bnd,di->bni")` for Q, K, V (plus the biases), heads by `view` +
    /// `transpose`, then the core: `einsum("bhnd,bhmd->bhnm") / hd**0.5`, causal `masked_fill`,
    /// softmax, `einsum("bhnm,bhmd->bhnd")`; heads merged, `out_proj`:
    /// `[b, T, d_in] -> [b, T, d_out]`.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or a
    /// public field no longer fits.
    Tensor operator()(const Tensor& x) const;

    std::size_t num_heads;  ///< H
    std::size_t head_dim;   ///< `d_out / H`
    Tensor W_query;               ///< `[d_in, d_out]`
    Tensor W_key;                 ///< `[d_in, d_out]`
    Tensor W_value;               ///< `[d_in, d_out]`
    std::optional<Tensor> bias_q;  ///< `[d_out]`, or none
    std::optional<Tensor> bias_k;  ///< `[d_out]`, or none
    std::optional<Tensor> bias_v;  ///< `[d_out]`, or none
    nn::Linear out_proj;                           ///< `Linear(d_out, d_out)`
    Tensor mask;  ///< `triu(ones(context_length, context_length), 1)`
};

/// `torch.einsum("bnd,di->bni", x, W)`: `x [b, n, d] -> [b, n, i]`, each output the sum over
/// `d` in order.
/// @throws std::invalid_argument when the shapes do not fit; std::length_error when the
/// result cannot be allocated.
Tensor einsum_bnd_di(const Tensor& x, const Tensor& W);
/// Chapter 7's module in the combined-QKV layout: `qkv.weight = cat(W_query, W_key,
/// W_value)` by rows (biases likewise; when only some projections have one, the others' as
/// zeros, which is what they add), `proj = out_proj`, the given kernel.
/// @throws std::invalid_argument when the module's layers do not fit each other.
MultiHeadAttentionCombinedQKV combine_qkv(const MultiHeadAttention& module,
                                          AttentionKernel kernel);
/// Chapter 7's module in the einsum layout: each `W` is the `Linear` weight transposed.
MHAEinsum to_einsum(const MultiHeadAttention& module);
/// Chapter 7's module in `nn.MultiheadAttention`'s layout: `in_proj_weight = cat(W_query,
/// W_key, W_value)` by rows, `in_proj_bias` likewise (a projection without bias as zeros;
/// all zeros when the module has none and `out_proj` has a bias, as PyTorch keeps one bias
/// flag), `out_proj` as is.
/// @throws std::invalid_argument when the module's layers do not fit each other.
MultiheadAttention to_torch_layout(const MultiHeadAttention& module);

}  // namespace attn
