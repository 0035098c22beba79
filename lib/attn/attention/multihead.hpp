/// @file multihead.hpp
/// @brief Multi-head attention in the three layouts of the book, and the maps between them.
///
/// - `MultiHeadAttentionWrapper` (Raschka ch. 3.6.1): `num_heads` independent
///   `CausalAttention` heads whose outputs are concatenated along the last dimension;
/// - `MultiHeadAttention` (Raschka ch. 3.6.2; `MultiHeadAtt` of notebook 004 In [58]): one
///   `W_query`/`W_key`/`W_value` of width `d_out` whose outputs are split into heads with
///   `view` + `transpose`, then an output projection;
/// - `GPT2Attention` (notebook 003, the nanoGPT/GPT-2 layout): one fused `c_attn` that makes
///   q, k and v in a single product, a `[1, 1, T, T]` lower-triangular buffer `bias`, and
///   `c_proj`.
///
/// All three compute the same function when their weights correspond: `stack_heads` and
/// `split_c_attn` build the `MultiHeadAttention` that equals a wrapper or a GPT-2 layer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/attention/attention.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

/// `x.split(split_size, dim)` (`torch.split` with an int): consecutive chunks of
/// `split_size` along `dim`, each a contiguous copy; the last is smaller when the size is not
/// a multiple. Notebook 003 In [4]: `c_attn(x).split(S, dim=2)` gives q, k, v.
/// @throws std::invalid_argument when `split_size` is 0, `x` is 0-d or `dim` is out of range.
std::vector<Tensor> split(const Tensor& x, std::size_t split_size, long dim);

/// The keyword arguments of Raschka's `MultiHeadAttentionWrapper(d_in, d_out, context_length,
/// dropout, num_heads, qkv_bias)`: here `d_out` is each head's width, so the output has
/// `num_heads * d_out` features.
struct MultiHeadAttentionWrapperConfig {
    std::size_t d_in = 0;            ///< input features per token
    std::size_t d_out = 0;           ///< each head's output features
    std::size_t context_length = 0;  ///< the most tokens `forward` accepts
    double dropout = 0.0;            ///< drop probability on each head's weights, in [0, 1]
    std::size_t num_heads = 0;       ///< heads (a `torch.cat` of none fails in PyTorch)
    bool qkv_bias = false;           ///< biases in each head's projections
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< dropout's Bernoulli path

    /// @throws std::invalid_argument naming the field and its value when a size or
    /// `num_heads` is 0, or `dropout` is NaN or outside [0, 1]; std::length_error when a
    /// weight or the `[context_length, context_length]` mask cannot be allocated.
    void validate() const;
};

/// Raschka's `MultiHeadAttentionWrapper`: `num_heads` `CausalAttention(d_in, d_out, ...)`
/// heads, built one after the other, run one after the other, outputs concatenated:
/// `x: [b, T, d_in] -> [b, T, num_heads * d_out]`. Here `d_out` is each head's width.
class MultiHeadAttentionWrapper {
public:
    /// What `forward` computed.
    struct Steps {
        std::vector<Tensor> head_outputs;  ///< head `h`'s context vectors: `[b, T, d_out]`
        Tensor context_vec;                ///< `torch.cat(head_outputs, dim=-1)`:
                                           ///< `[b, T, num_heads * d_out]`
    };

    /// Builds the heads in order from `gen` (each draws as `CausalAttention` does).
    /// @throws std::invalid_argument as `MultiHeadAttentionWrapperConfig::validate`.
    explicit MultiHeadAttentionWrapper(const MultiHeadAttentionWrapperConfig& config,
                                       Generator& gen = default_generator());

    /// `forward(x)`: `[b, T, d_in] -> [b, T, num_heads * d_out]`; heads draw their dropout
    /// masks in order.
    /// @throws std::invalid_argument as `CausalAttention` does (wrong shape, too many tokens).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping each head's output.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// `module.train(mode)` on every head: dropout is active in training mode (the default).
    void train(bool mode = true);
    /// `module.eval()`: dropout off in every head.
    void eval() { train(false); }

    /// The number of heads.
    std::size_t num_heads() const { return heads.size(); }

    std::vector<CausalAttention> heads;  ///< `nn.ModuleList` of the heads
};

/// The keyword arguments of Raschka's `MultiHeadAttention(d_in, d_out, context_length,
/// dropout, num_heads, qkv_bias)`, plus `out_bias` (Raschka's `out_proj` has a bias; notebook
/// 004's `MultiHeadAtt` passes `qkv_bias`, False) and the dropout backend:
/// `MultiHeadAttention({.d_in = 3, .d_out = 2, .context_length = 6, .num_heads = 2})`.
struct MultiHeadAttentionConfig {
    std::size_t d_in = 0;            ///< input features per token
    std::size_t d_out = 0;           ///< output features per token, all heads together
    std::size_t context_length = 0;  ///< the most tokens `forward` accepts (the mask's size)
    double dropout = 0.0;            ///< drop probability on the attention weights, in [0, 1]
    std::size_t num_heads = 0;       ///< heads; must divide `d_out`
    bool qkv_bias = false;           ///< biases in `W_query`, `W_key`, `W_value`
    bool out_bias = true;            ///< bias in `out_proj`
    nn::BernoulliBackend backend = nn::BernoulliBackend::portable;  ///< dropout's Bernoulli path

    /// @throws std::invalid_argument naming the field and its value when a size is 0,
    /// `num_heads` is 0 or does not divide `d_out` (the book asserts "d_out must be divisible
    /// by num_heads"), or `dropout` is NaN or outside [0, 1]; std::length_error when a
    /// weight or the `[context_length, context_length]` mask cannot be allocated (PyTorch:
    /// "Storage size calculation overflowed" for `context_length = 2^32`).
    void validate() const;
};

/// Raschka's `MultiHeadAttention` (and notebook 004's `MultiHeadAtt`, which is the same with
/// `out_bias = false`): weight-split multi-head causal attention.
///
/// Built in the order `W_query`, `W_key`, `W_value` (`nn.Linear(d_in, d_out, qkv_bias)`),
/// `out_proj` (`nn.Linear(d_out, d_out, out_bias)`), then `nn.Dropout(dropout)` and the buffer
/// `mask = triu(ones(context_length, context_length), 1)`.
class MultiHeadAttention {
public:
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
    /// @throws std::invalid_argument as `MultiHeadAttentionConfig::validate`.
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

    /// `forward(x)`: `[b, T, d_in] -> [b, T, d_out]`. In training mode with `dropout > 0`
    /// the mask of the `[b, H, T, T]` weights is drawn from `gen`. Otherwise it runs the fast
    /// path `fast::multihead_forward` (fast_attention.hpp), which gives `forward_steps`' bits.
    /// @throws std::invalid_argument when `x` is not `[b, T, d_in]` or `T > context_length`.
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate tensor (same draws, same result): the teaching
    /// path, step by step.
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// `module.train(mode)`: dropout is active in training mode (the default).
    void train(bool mode = true) { dropout.training = mode; }
    /// `module.eval()`: dropout off.
    void eval() { train(false); }

    /// The input width `d_in`.
    std::size_t d_in() const { return W_query.in_features(); }
    /// The output width `d_out` (all heads together).
    std::size_t d_out() const { return W_query.out_features(); }
    /// The most tokens `forward` accepts: the mask's size.
    std::size_t context_length() const { return mask.shape()[0]; }

    std::size_t num_heads;  ///< H
    std::size_t head_dim;   ///< `d_out / num_heads`
    nn::Linear W_query;     ///< `Linear(d_in, d_out)`
    nn::Linear W_key;       ///< `Linear(d_in, d_out)`
    nn::Linear W_value;     ///< `Linear(d_in, d_out)`
    nn::Linear out_proj;    ///< `Linear(d_out, d_out)` (notebook 004 calls it `out`)
    nn::Dropout dropout;    ///< on the attention weights
    Tensor mask;            ///< `[context_length, context_length]`: 1 above the diagonal
};

/// The attention-related fields of the `GPT2Config` dataclass notebook 003 imports
/// (`jobs/configure.py` of sunsikim/pt-nlp-gpt), with its defaults.
struct GPT2Config {
    std::size_t block_size = 256;  ///< context window: the size of the `bias` buffer
    std::size_t n_embd = 384;      ///< S, the embedding width
    std::size_t n_head = 6;        ///< H
    double dropout = 0.2;          ///< both dropouts
    bool bias = false;             ///< biases in `c_attn` and `c_proj`
};

/// `GPT2Attention` of notebook 003 (`gpt/model.py` of sunsikim/pt-nlp-gpt, nanoGPT's
/// `CausalSelfAttention`): the GPT-2 layout.
///
/// Built in the order `c_attn = nn.Linear(S, 3S, bias)`, `c_proj = nn.Linear(S, S, bias)`,
/// `attn_dropout`, `resid_dropout`; the buffer `bias = tril(ones(block_size, block_size))`
/// viewed as `[1, 1, block_size, block_size]`.
class GPT2Attention {
public:
    /// What `forward` computed, for `x: [B, T, S]`, `H = n_head`, `hs = S / H`.
    struct Steps {
        Tensor qkv;                  ///< `c_attn(x)`: `[B, T, 3S]`
        Tensor q;        ///< `qkv.split(S, dim=2)[0]`: `[B, T, S]`
        Tensor k;        ///< `qkv.split(S, dim=2)[1]`: `[B, T, S]`
        Tensor v;        ///< `qkv.split(S, dim=2)[2]`: `[B, T, S]`
        Tensor q_heads;  ///< `q.view(B, T, H, hs).transpose(1, 2)`: `[B, H, T, hs]`
        Tensor k_heads;  ///< `k.view(B, T, H, hs).transpose(1, 2)`: `[B, H, T, hs]`
        Tensor v_heads;  ///< `v.view(B, T, H, hs).transpose(1, 2)`: `[B, H, T, hs]`
        Tensor att_scores;  ///< `(q @ k.transpose(-2, -1)) * (1 / sqrt(hs))`: `[B, H, T, T]`
        Tensor att_masked;  ///< `-inf` where `bias[:, :, :T, :T] == 0`: `[B, H, T, T]`
        Tensor att;         ///< `softmax(att_masked, dim=-1)`: `[B, H, T, T]`
        Tensor att_dropped; ///< `attn_dropout(att)`: `[B, H, T, T]`
        Tensor y_heads;     ///< `att_dropped @ v`: `[B, H, T, hs]`
        Tensor y;           ///< `.transpose(1, 2).contiguous().view(B, T, S)`: `[B, T, S]`
        Tensor proj;        ///< `c_proj(y)`: `[B, T, S]`
        Tensor output;      ///< `resid_dropout(proj)`: `[B, T, S]`
    };

    /// Builds the layer from `gen`: `3 S^2 + S^2` 32-bit draws (plus `4 S` with `bias`).
    /// @throws std::invalid_argument when `n_head` is 0 or does not divide `n_embd`, a size
    /// is 0, or `dropout` is outside [0, 1] (all checked before anything is drawn);
    /// std::length_error when `c_attn`'s `[3 n_embd, n_embd]` weight or the
    /// `[block_size, block_size]` buffer cannot be allocated.
    explicit GPT2Attention(const GPT2Config& config,
                           nn::BernoulliBackend backend = nn::BernoulliBackend::portable,
                           Generator& gen = default_generator());

    /// `forward(x)`: `[B, T, S] -> [B, T, S]`. In training mode `attn_dropout` draws a mask
    /// for `[B, H, T, T]`, then `resid_dropout` one for `[B, T, S]`.
    /// @throws std::invalid_argument when `x` is not `[B, T, n_embd]` or `T > block_size`.
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate tensor (same draws, same result).
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    /// `module.train(mode)`: both dropouts are active in training mode (the default).
    void train(bool mode = true) { attn_dropout.training = resid_dropout.training = mode; }
    /// `module.eval()`: both dropouts off (notebook 003 In [2]).
    void eval() { train(false); }

    std::size_t max_positions;  ///< `block_size`
    std::size_t embed_dim;      ///< S
    std::size_t num_heads;      ///< H
    std::size_t head_dim;       ///< `S / H`
    nn::Linear c_attn;          ///< `Linear(S, 3S)`: q, k, v in one product
    nn::Linear c_proj;          ///< `Linear(S, S)`
    nn::Dropout attn_dropout;   ///< on the attention weights
    nn::Dropout resid_dropout;  ///< on the output
    Tensor bias;  ///< `[1, 1, block_size, block_size]`, 1 on and below the diagonal
};

/// `repr(layer)` as PyTorch prints the module (notebook 003 In [2]):
/// `GPT2Attention(\n  (c_attn): Linear(in_features=12, out_features=36, bias=False)\n ...`.
std::string repr(const GPT2Attention& layer);

/// `repr(module)` of a `MultiHeadAttention` in PyTorch's style (named `MultiHeadAttention`,
/// the layers in registration order; buffers are not shown, as in PyTorch).
std::string repr(const MultiHeadAttention& module);

/// The `MultiHeadAttention` that computes what `wrapper` computes: the heads' `W_query`
/// (and `W_key`, `W_value`) weights stacked along their output dimension (head `h` owns rows
/// `h * d_out .. (h + 1) * d_out - 1`, so `view(b, T, H, d_out)` hands each head its own
/// columns), biases likewise, `num_heads` heads of `head_dim = d_out`, and an identity
/// `out_proj` without bias. The result equals `torch.cat` of the heads' outputs (with dropout
/// 0 or in evaluation mode; dropout masks would be drawn in a different order).
/// @throws std::invalid_argument when the heads differ in shape or context length.
MultiHeadAttention stack_heads(const MultiHeadAttentionWrapper& wrapper);

/// The `MultiHeadAttention` that computes what `layer` computes: `c_attn`'s weight
/// `[3S, S]` split by rows into `W_query` (rows `0..S-1`), `W_key` (`S..2S-1`) and `W_value`
/// (`2S..3S-1`), biases likewise, `out_proj = c_proj`, `context_length = block_size`. Equal up
/// to float rounding (GPT-2 multiplies the scores by `1 / sqrt(hs)`, the book divides by
/// `sqrt(hs)`), with dropout 0 or in evaluation mode (`resid_dropout` has no counterpart).
MultiHeadAttention split_c_attn(const GPT2Attention& layer);

}  // namespace attn
