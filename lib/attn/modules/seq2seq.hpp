/// @file seq2seq.hpp
/// @brief The smallest encoder-decoder in which a decoder attends to an encoder's output
/// (chapter 25): token and learned position embeddings, one residual encoder block of
/// self-attention, one decoder block of causal self-attention then cross-attention to the
/// encoder's output (`memory`), an unembedding; every attention a `torch.nn.MultiheadAttention`
/// (torch_mha.hpp); no MLP, no layer norm. Its task is the Annotated Transformer's copy task
/// (Rush et al., "The Annotated Transformer", section "A First Example": random tokens after the
/// start symbol 1, the target the source itself) and its reversal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/modules/torch_mha.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The sizes of an `AttentionOnlySeq2Seq`.
struct Seq2SeqConfig {
    std::size_t vocab_size = 0;      ///< V: token ids in [0, V)
    std::size_t context_length = 0;  ///< the most tokens a source or target may have
    std::size_t emb_dim = 0;         ///< d: the residual streams' width
    std::size_t num_heads = 0;       ///< heads of every attention; must divide `emb_dim`

    /// @throws std::invalid_argument naming the field when a size is 0 or `num_heads` does not
    /// divide `emb_dim`; std::length_error when a table cannot be allocated.
    void validate() const;
};

/// The model, as this PyTorch module defines it (tools/oracle/reference/seq2seq.py):
/// ```
/// src_emb, tgt_emb = Embedding(V, d), Embedding(V, d); pos_emb = Embedding(context_length, d)
/// encoder, self_attn, cross_attn = MultiheadAttention(d, num_heads, batch_first=True) (x3)
/// out_head = Linear(d, V, bias=False)
/// encode(src):       x = src_emb(src) + pos_emb(arange(S));  x + encoder(x, x, x)
/// decode(memory, tgt): y = tgt_emb(tgt) + pos_emb(arange(T))
///                      y = y + self_attn(y, y, y, attn_mask=causal)
///                      y = y + cross_attn(y, memory, memory);  out_head(y)
/// ```
/// built in that order, so that a seed gives PyTorch's weights.
class AttentionOnlySeq2Seq : public nn::Module {
public:
    /// `"AttentionOnlySeq2Seq"`.
    std::string type_name() const override { return "AttentionOnlySeq2Seq"; }
    /// The submodules in PyTorch's registration order.
    std::vector<nn::NamedChild> children() override {
        return {{"src_emb", &src_emb},   {"tgt_emb", &tgt_emb},     {"pos_emb", &pos_emb},
                {"encoder", &encoder},   {"self_attn", &self_attn}, {"cross_attn", &cross_attn},
                {"out_head", &out_head}};
    }

    /// What `forward` keeps for `backward`.
    struct Saved {
        LongTensor src;                      ///< `[B, S]`
        LongTensor tgt;                      ///< `[B, T]`
        MultiheadAttentionSaved encoder;     ///< the encoder block's attention
        MultiheadAttentionSaved self_attn;   ///< the decoder's self-attention
        MultiheadAttentionSaved cross_attn;  ///< the decoder's cross-attention
        Tensor decoder_out;                  ///< the stream into `out_head`: `[B, T, d]`
    };

    /// Builds the layers from `gen` in PyTorch's order (nothing drawn when `config` is invalid).
    /// @throws as `Seq2SeqConfig::validate`.
    explicit AttentionOnlySeq2Seq(const Seq2SeqConfig& config, Generator& gen = default_generator());

    /// `encode(src)`: int64 ids `[B, S]` -> memory `[B, S, d]`.
    /// @throws std::invalid_argument when `src` is not 2-D, longer than `context_length`, or an
    /// id is outside `[0, V)`.
    Tensor encode(const LongTensor& src) const;

    /// `decode(memory, tgt)`: memory `[B, S, d]`, ids `[B, T]` -> logits `[B, T, V]`.
    /// @throws std::invalid_argument as `encode` for `tgt`, or when `memory` does not fit.
    Tensor decode(const Tensor& memory, const LongTensor& tgt) const;

    /// `decode` with the cross-attention's keys and values taken from `memory_cache` (built by
    /// `cross_attn.memory_cache(memory, memory)`): the same logits, bit for bit.
    /// @throws as `decode`.
    Tensor decode(const KVCache& memory_cache, const LongTensor& tgt) const;

    /// `forward(src, tgt)`: `decode(encode(src), tgt)`, logits `[B, T, V]`.
    /// @throws as `encode` and `decode`.
    Tensor operator()(const LongTensor& src, const LongTensor& tgt) const;

    /// `forward(src, tgt)` keeping in `saved` what `backward` needs (the same logits).
    /// @throws as `operator()`.
    Tensor forward(const LongTensor& src, const LongTensor& tgt, Saved& saved) const;

    /// The backward pass from `grad_logits = dL/dlogits` (`[B, T, V]`): accumulates `.grad` of
    /// every parameter in autograd's order of float operations (each residual stream receives
    /// two shares, added; `pos_emb` a share from each of its two uses).
    /// @throws std::invalid_argument when `grad_logits` does not fit `saved`.
    void backward(const Saved& saved, const Tensor& grad_logits);

    /// The decoder's cross-attention weights for `tgt` attending to `src`, averaged over the
    /// heads: `[B, T, S]`.
    /// @throws as `operator()`.
    Tensor cross_attention_weights(const LongTensor& src, const LongTensor& tgt) const;

    /// The Annotated Transformer's `greedy_decode`: the encoder once, its keys and values for the
    /// cross-attention projected once (`memory_cache`), then `length - 1` steps, each appending
    /// the argmax of the last position's logits to the start symbol 1: `[B, length]`.
    /// @throws as `operator()`, or when `length` is 0 or beyond `context_length`.
    LongTensor greedy_decode(const LongTensor& src, std::size_t length) const;

    nn::Embedding src_emb;          ///< `[V, d]`
    nn::Embedding tgt_emb;          ///< `[V, d]`
    nn::Embedding pos_emb;          ///< `[context_length, d]`, shared by encoder and decoder
    MultiheadAttention encoder;     ///< the encoder's self-attention
    MultiheadAttention self_attn;   ///< the decoder's causal self-attention
    MultiheadAttention cross_attn;  ///< the decoder's cross-attention to the memory
    nn::Linear out_head;            ///< `Linear(d, V, bias=False)`
};

/// A batch of the copy task (the Annotated Transformer's `data_gen`): `src` of `B` sequences of
/// `length` tokens drawn `torch.randint(1, vocab_size, (B, length))` from `gen`, the first set
/// to the start symbol 1; `tgt` the same sequences, or with `reverse` the tokens after the
/// start symbol reversed.
struct CopyBatch {
    LongTensor src;  ///< `[B, length]`
    LongTensor tgt;  ///< `[B, length]`
};

/// Draws a `CopyBatch` (see there). @throws std::invalid_argument when a size is 0 or
/// `vocab_size < 2`.
CopyBatch copy_batch(std::size_t batch_size, std::size_t vocab_size, std::size_t length, bool reverse = false,
                     Generator& gen = default_generator());

}  // namespace attn
