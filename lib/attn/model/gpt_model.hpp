/// @file gpt_model.hpp
/// @brief Raschka's `GPTModel` (ch. 4.6, In [23]): token and position embeddings, dropout,
/// `n_layers` transformer blocks, a final `LayerNorm` and the output head that turns each
/// position's vector into logits over the vocabulary; with his KV-cached forward
/// (ch04/03_kv-cache) on the library's one `KVCache`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/attention/kv_cache.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/config.hpp"
#include "attn/model/layer_norm.hpp"
#include "attn/model/transformer_block.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/nn.hpp"

namespace attn {

/// The keys and values a `GPTModel` keeps while it generates: one full `KVCache` per block
/// (his `cache_k`, `cache_v` of each block's attention) and the next token's position (his
/// `current_pos`, which every block's cache also counts). With `capacity = N` every block's cache
/// is preallocated for N tokens at the first forward (his gpt_with_kv_cache_optimized.py with
/// `max_seq_len = N`, e.g. the context length): a decode step then allocates no cache memory and
/// copies only its own token's keys and values; the results are the same bits.
struct GPTCache {
    std::vector<KVCache> layers;  ///< one per transformer block, filled by the first forward
    std::size_t capacity = 0;     ///< 0: each block's cache grown by `torch.cat`; N: preallocated

    /// His `current_pos`: tokens seen so far (0 while empty).
    /// @throws std::invalid_argument when the blocks' caches disagree (public fields changed).
    std::size_t current_pos() const;
    /// `reset_kv_cache()`: every block's cache emptied, position 0 (preallocated ones keep
    /// their memory).
    void reset() {
        if (capacity == 0) layers.clear();
        for (KVCache& c : layers) c.reset();
    }
    /// Bytes of keys and values held, all blocks together.
    std::size_t bytes() const;
};

/// His `GPTModel(cfg)`, for token ids `in_idx [b, T]` (`T <= context_length`):
/// ```
/// x = tok_emb(in_idx) + pos_emb(arange(T))    # [b, T, E]
/// x = drop_emb(x); x = trf_blocks(x); x = final_norm(x)
/// logits = out_head(x)                         # [b, T, vocab_size]
/// ```
/// Built in his order from `gen` (after `manual_seed(123)`, his weights, bit for bit):
/// `tok_emb` (`normal_`), `pos_emb`, each block (`TransformerBlock`), `final_norm` (no draws),
/// `out_head = Linear(E, vocab_size, bias=False)`: for GPT_CONFIG_124M 163,009,536 parameters,
/// 652 MB of float32 (no weight tying, as his chapter 4). The forward's float operations are
/// PyTorch 1.13's on the reference BLAS (the layers' own comments say how), so its logits are
/// Debian's python3-torch's bit for bit (tests/test_gpt_model.cpp); the attention runs on the
/// core's automatic backend (`fast`), whose bits are the `step` backend's. A model is a value:
/// copying it copies 652 MB.
class GPTModel : public nn::Module {
public:
    /// Builds the model from `gen`.
    /// @throws std::invalid_argument or std::length_error as `GPTConfig::check` (nothing is
    /// drawn then).
    explicit GPTModel(const GPTConfig& cfg, Generator& gen = default_generator());

    /// `forward(in_idx)`: int64 ids `[b, T]` -> logits `[b, T, vocab_size]`, float32. In
    /// training mode the dropout masks are drawn from `gen`, `drop_emb`'s first, then each
    /// block's.
    /// @throws std::invalid_argument when `in_idx` is not 2-D, `T > context_length` ("3 tokens,
    /// but the context holds context_length = 2"), an id is outside `[0, vocab_size)` ("token
    /// id 50257 at [0, 3] is out of range [0, vocab_size = 50257)"), or a public field no longer
    /// fits (naming it).
    Tensor operator()(const LongTensor& in_idx, Generator& gen = default_generator()) const;

    /// `operator()` into `logits`, in a tensor the caller keeps between calls (`operator()` is
    /// this into a fresh one): given the shape `[b, T, vocab_size]` by `sized`, its memory
    /// reused when it already holds that many floats. A 1024-token prefill's 206 MB of logits are then allocated once, not mapped and
    /// faulted in anew by every forward (PyTorch's best side keeps them through its allocator).
    /// @throws std::invalid_argument as `operator()` (`logits` unchanged then);
    /// std::length_error when the logits cannot be allocated (`check_allocation`).
    void forward_into(const LongTensor& in_idx, Tensor& logits, Generator& gen = default_generator()) const;

    /// `forward(in_idx, use_cache=True)` of his gpt_with_kv_cache.py: the ids are the tokens at
    /// positions `cache.current_pos() ..`, their position embeddings those rows of `pos_emb`,
    /// each block appends their keys and values to its cache and attends to everything cached.
    /// The logits `[b, T, vocab_size]` are the last `T` rows of a forward over the whole
    /// sequence up to rounding, as in PyTorch: a row's softmax adds its keys in the order
    /// PyTorch's kernel takes for the row's length (in order below 8 keys, in 8 lanes from 8
    /// on), and a forward of the whole sequence computes the earlier tokens' rows with more
    /// (masked) keys than their cached steps did, so their hidden states may differ in the last
    /// bits (chapter 23, tests/test_gpt_model.cpp). Each path alone gives PyTorch's bits.
    /// @throws std::invalid_argument as `operator()`, when a position would lie beyond
    /// `context_length` ("a token beyond the context: positions 1024..1024 but context_length =
    /// 1024"), or when the cache holds another batch or another model's shape (nothing is
    /// changed then).
    Tensor forward(const LongTensor& in_idx, GPTCache& cache, Generator& gen = default_generator()) const;

    /// What the training forward keeps for `backward` (reused across steps): for ids `[b, T]`.
    struct Saved {
        LongTensor in_idx;                          ///< the ids `[b, T]` (a copy)
        Tensor drop_emb;                            ///< `drop_emb`'s multipliers `[b, T, E]` (empty: none drawn)
        Tensor embeddings;                          ///< `drop_emb(tok_emb(in_idx) + pos_emb(...))`: `[b, T, E]`
        std::vector<TransformerBlock::Saved> blocks;  ///< one per block
        LayerNorm::Saved final_norm;                ///< `final_norm`'s; its `y` `[b, T, E]` is `out_head`'s input
        Tensor logits;                              ///< the forward's output `[b, T, vocab_size]`
    };

    /// `forward(in_idx)` keeping in `saved` what `backward` needs: the same draws and bits as
    /// `operator()`. Returns the logits `[b, T, vocab_size]`, held in `saved.logits` (its
    /// storage reused from step to step: 103 MB at GPT_CONFIG_124M, batch 2, 256 tokens).
    /// @throws std::invalid_argument as `operator()`.
    const Tensor& forward(const LongTensor& in_idx, Saved& saved, Generator& gen = default_generator()) const;

    /// The backward pass of the whole model, without autograd (llm.c's `gpt2_backward`), given
    /// `grad_logits = dL/d logits` (`[b, T, vocab_size]`, e.g. `cross_entropy_backward` of the
    /// flattened logits): `out_head.backward`, `final_norm.backward`, each block's `backward`
    /// from the last to the first, `drop_emb`'s mask reused, then the embeddings: `tok_emb`'s
    /// rows receive their tokens' gradients (`Embedding::backward`), `pos_emb`'s rows the
    /// gradient summed over the batch (`sum_to` of `tok_embeds + pos_embeds`, PyTorch's
    /// column-sum order). Accumulates `.grad` of every parameter, as `loss.backward()` does;
    /// with Debian's reference BLAS these are PyTorch's bits (tests/test_gpt_training.cpp).
    /// The gradients between the layers live in this thread's kept buffers, and the forward's
    /// tensors in `saved`: a training step reuses the last step's memory and faults no page
    /// after its first.
    /// @throws std::invalid_argument when `grad_logits` or `saved` do not fit the model, or a
    /// layer was replaced since the forward.
    void backward(const Saved& saved, const Tensor& grad_logits);

    /// `"GPTModel"`.
    std::string type_name() const override { return "GPTModel"; }
    /// `tok_emb`, `pos_emb`, `drop_emb`, `trf_blocks`, `final_norm`, `out_head`.
    std::vector<nn::NamedChild> children() override {
        return {{"tok_emb", &tok_emb}, {"pos_emb", &pos_emb}, {"drop_emb", &drop_emb},
                {"trf_blocks", &trf_blocks}, {"final_norm", &final_norm}, {"out_head", &out_head}};
    }

    /// `cfg["context_length"]`: `pos_emb`'s rows.
    /// @throws std::invalid_argument when `pos_emb.weight` is not 2-D.
    std::size_t context_length() const;
    /// `cfg["vocab_size"]`: `tok_emb`'s rows.
    /// @throws std::invalid_argument when `tok_emb.weight` is not 2-D.
    std::size_t vocab_size() const;

    nn::Embedding tok_emb;                        ///< `Embedding(vocab_size, E)`
    nn::Embedding pos_emb;                        ///< `Embedding(context_length, E)`
    nn::Dropout drop_emb;                         ///< `Dropout(drop_rate)` on the embeddings
    nn::SequentialList<TransformerBlock> trf_blocks;  ///< `n_layers` blocks, an `nn.Sequential`
    LayerNorm final_norm;                         ///< `LayerNorm(E)`
    nn::Linear out_head;                          ///< `Linear(E, vocab_size, bias=False)`

private:
    // Checks the ids and the fields, and returns the embeddings of positions start..,
    // tok_emb(in_idx) + pos_emb(arange(start, start + T)), before drop_emb: [b, T, E].
    Tensor embed(const LongTensor& in_idx, std::size_t start) const;
    // embed into x, given the shape [b, T, E] by `sized` (x unchanged when it throws).
    void embed_into(const LongTensor& in_idx, std::size_t start, Tensor& x) const;
    // final_norm and out_head.
    Tensor head(const Tensor& x) const;
};

}  // namespace attn
