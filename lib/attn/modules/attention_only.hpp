/// @file attention_only.hpp
/// @brief An attention-only transformer (Elhage et al. 2021, "A Mathematical Framework for
/// Transformer Circuits"; Olsson et al. 2022, "In-context Learning and Induction Heads"):
/// token and learned position embeddings, `num_layers` residual blocks of Raschka's
/// `MultiHeadAttention`, an unembedding; no MLP, no layer norm. Two layers are the smallest
/// model in which an induction head can form.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/causal.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The sizes of an `AttentionOnlyTransformer`.
struct AttentionOnlyConfig {
    std::size_t vocab_size = 0;      ///< V: token ids in [0, V)
    std::size_t context_length = 0;  ///< the most tokens a sequence may have (position table size)
    std::size_t emb_dim = 0;         ///< d: the residual stream's width
    std::size_t num_heads = 0;       ///< heads per block; must divide `emb_dim`
    std::size_t num_layers = 2;      ///< attention blocks

    /// @throws std::invalid_argument naming the field when a size is 0 or `num_heads` does
    /// not divide `emb_dim`; std::length_error when a table cannot be allocated.
    void validate() const;
};

/// The model, as this PyTorch module defines it (tools/oracle/attention_learns.py):
/// ```
/// tok_emb = nn.Embedding(V, d); pos_emb = nn.Embedding(context_length, d)
/// blocks = [MultiHeadAttention(d, d, context_length, 0.0, num_heads) for each layer]
/// out_head = nn.Linear(d, V, bias=False)
/// forward(ids): x = tok_emb(ids) + pos_emb(arange(T)); x = x + block(x) for each block;
///               return out_head(x)
/// ```
/// built in that order, so a seed gives PyTorch's weights.
class AttentionOnlyTransformer : public nn::Module {
public:
    /// `"AttentionOnlyTransformer"`, as repr prints it.
    std::string type_name() const override { return "AttentionOnlyTransformer"; }
    /// The submodules in PyTorch's registration order: `tok_emb`, `pos_emb`, `blocks`, `out_head`.
    std::vector<nn::NamedChild> children() override {
        return {{"tok_emb", &tok_emb}, {"pos_emb", &pos_emb}, {"blocks", &blocks}, {"out_head", &out_head}};
    }

    /// What `forward` keeps for `backward`.
    struct Saved {
        LongTensor ids;                     ///< the input ids `[b, T]`
        std::vector<AttentionSaved> blocks;  ///< each block's forward
        Tensor x_final;                     ///< the residual stream into `out_head`: `[b, T, d]`
    };

    /// Builds the layers from `gen` in PyTorch's order (nothing drawn when `config` is invalid).
    /// @throws as `AttentionConfig::check`.
    explicit AttentionOnlyTransformer(const AttentionOnlyConfig& config, Generator& gen = default_generator());

    /// `forward(ids)`: int64 ids `[b, T]` -> logits `[b, T, V]`.
    /// @throws std::invalid_argument when `ids` is not 2-D, `T > context_length`, an id is
    /// outside `[0, V)`, or a block's check fails.
    Tensor operator()(const LongTensor& ids) const;

    /// `forward(ids)` keeping in `saved` what `backward` needs (the same logits).
    /// @throws as `operator()`.
    Tensor forward(const LongTensor& ids, Saved& saved) const;

    /// The backward pass: from `grad_logits = dL/dlogits` (`[b, T, V]`) accumulates `.grad` of
    /// every parameter, in autograd's order of float operations: `out_proj`... back through
    /// each block with the residual identity arriving first (`MultiHeadAttention::backward`
    /// with `grad_x_before`), then `pos_emb` gets the batch sum of the stream's gradient
    /// (`sum(0)` in PyTorch's order) and `tok_emb` the gradient row by row.
    /// @throws std::invalid_argument when `grad_logits` does not fit `saved`.
    void backward(const Saved& saved, const Tensor& grad_logits);

    /// Each block's attention weights for `ids` (the teaching path, `forward_steps` of every
    /// block on its residual stream): one `[b, num_heads, T, T]` tensor per block.
    /// @throws as `operator()`.
    std::vector<Tensor> attn_weights(const LongTensor& ids) const;

    nn::Embedding tok_emb;                   ///< `[V, d]`
    nn::Embedding pos_emb;                   ///< `[context_length, d]`
    nn::ModuleList<MultiHeadAttention> blocks;  ///< `num_layers` blocks of `MultiHeadAttention(d, d)`
    nn::Linear out_head;                     ///< `Linear(d, V, bias=False)`
};

/// A batch of the induction task: `b` sequences of `half` random tokens in `[0, vocab_size)`
/// (`torch.randint(0, vocab_size, (b, half))`, one draw each from `gen`) repeated twice,
/// `torch.cat([first, first], 1)`: `[b, 2 * half]`.
/// @throws std::invalid_argument when a size is 0.
LongTensor repeated_tokens(std::size_t b, std::size_t half, std::size_t vocab_size,
                           Generator& gen = default_generator());

/// A language model's inputs and targets from token sequences `[b, n]`:
/// `(seq[:, :-1], seq[:, 1:])`, each `[b, n - 1]` (position t's target is token t + 1).
/// @throws std::invalid_argument when `seq` is not 2-D or has fewer than 2 tokens.
std::pair<LongTensor, LongTensor> next_token_pairs(const LongTensor& seq);

/// `F.cross_entropy(logits[:, from:to].reshape(-1, V), targets[:, from:to].reshape(-1))`:
/// the mean next-token loss over positions `[from, to)` of every sequence (the whole
/// sequence when `to` is 0). logits `[b, T, V]`, targets `[b, T]` -> a 0-d tensor.
/// @throws std::invalid_argument when the shapes do not fit, the range is empty or past `T`,
/// or a target lies outside `[0, V)`.
Tensor sequence_cross_entropy(const Tensor& logits, const LongTensor& targets, std::size_t from = 0,
                              std::size_t to = 0);

/// The backward pass of `sequence_cross_entropy(logits, targets)` over the whole sequence:
/// `dL/dlogits` `[b, T, V]` (`cross_entropy_backward` of the flattened rows, for `dL/dL = 1`).
/// @throws std::invalid_argument as `sequence_cross_entropy`.
Tensor sequence_cross_entropy_backward(const Tensor& logits, const LongTensor& targets);

}  // namespace attn
