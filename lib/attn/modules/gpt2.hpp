/// @file gpt2.hpp
/// @brief The GPT-2 layout of notebook 003 (nanoGPT's `CausalSelfAttention`): one fused
/// `c_attn` making q, k and v in a single product, a `[1, 1, T, T]` lower-triangular buffer
/// `bias`, and `c_proj`; and the map from it to chapter 7's `MultiHeadAttention`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// `x.split(split_size, dim)` (`torch.split` with an int): consecutive chunks of
/// `split_size` along `dim`, each a contiguous copy; the last is smaller when the size is not
/// a multiple. Notebook 003 In [4]: `c_attn(x).split(S, dim=2)` gives q, k, v.
/// @throws std::invalid_argument when `split_size` is 0, `x` is 0-d or `dim` is out of range.
std::vector<Tensor> split(const Tensor& x, std::size_t split_size, long dim);

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
class GPT2Attention : public nn::Module {
public:
    /// `"GPT2Attention"`, as repr prints it.
    std::string type_name() const override { return "GPT2Attention"; }
    /// The submodules in PyTorch's registration order: `c_attn`, `c_proj`, `attn_dropout`, `resid_dropout`.
    std::vector<nn::NamedChild> children() override {
        return {{"c_attn", &c_attn}, {"c_proj", &c_proj}, {"attn_dropout", &attn_dropout}, {"resid_dropout", &resid_dropout}};
    }

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

    /// `forward(x)`: `[B, T, S] -> [B, T, S]`: `c_attn`, the attention core on q, k, v read
    /// as heads straight out of the fused `[B, T, 3S]` projection (no split copies),
    /// `c_proj`, `resid_dropout`. In training mode `attn_dropout` draws a mask for
    /// `[B, H, T, T]`, then `resid_dropout` one for `[B, T, S]`.
    /// @throws std::invalid_argument when `x` is not `[B, T, n_embd]`, `T > block_size`, or a
    /// public field no longer fits (naming it).
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// `forward` keeping every intermediate tensor (same draws, same result).
    Steps forward_steps(const Tensor& x, Generator& gen = default_generator()) const;

    std::size_t max_positions;  ///< `block_size`
private:
    // Checks x and the public fields; returns x's shape.
    Shape check(const Tensor& x) const;
    // The core's options: the causal buffer, * (1 / sqrt(hs)), attn_dropout.
    SDPAOptions options(const BufferMask& causal, Generator& gen) const;

public:
    std::size_t embed_dim;      ///< S
    std::size_t num_heads;      ///< H
    std::size_t head_dim;       ///< `S / H`
    nn::Linear c_attn;          ///< `Linear(S, 3S)`: q, k, v in one product
    nn::Linear c_proj;          ///< `Linear(S, S)`
    nn::Dropout attn_dropout;   ///< on the attention weights
    nn::Dropout resid_dropout;  ///< on the output
    Tensor bias;  ///< `[1, 1, block_size, block_size]`, 1 on and below the diagonal
};

/// The `MultiHeadAttention` that computes what `layer` computes: `c_attn`'s weight
/// `[3S, S]` split by rows into `W_query` (rows `0..S-1`), `W_key` (`S..2S-1`) and `W_value`
/// (`2S..3S-1`), biases likewise, `out_proj = c_proj`, `context_length = block_size`. Equal up
/// to float rounding (GPT-2 multiplies the scores by `1 / sqrt(hs)`, the book divides by
/// `sqrt(hs)`), with dropout 0 or in evaluation mode (`resid_dropout` has no counterpart).
/// @throws std::invalid_argument when `c_attn` is not `[3S, S]` (with its bias `[3S]`), or as
/// `MultiHeadAttention`'s constructor.
MultiHeadAttention split_c_attn(const GPT2Attention& layer);

}  // namespace attn
