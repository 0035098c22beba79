// GPTModel (gpt_model.hpp): Raschka ch. 4.6, and the KV-cached forward of his ch04/03_kv-cache.
#include "attn/model/gpt_model.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "attn/core/reduce.hpp"
#include "attn/modules/module.hpp"

namespace attn {

namespace {

const GPTConfig& checked_model_config(const GPTConfig& cfg) {
    cfg.check("GPTModel");
    return cfg;
}

nn::SequentialList<TransformerBlock> make_blocks(const GPTConfig& cfg, Generator& gen) {
    nn::SequentialList<TransformerBlock> blocks;
    blocks.reserve(cfg.n_layers);
    for (std::size_t i = 0; i < cfg.n_layers; ++i) blocks.emplace_back(cfg, gen);
    return blocks;
}

std::string index_str(std::size_t i, std::size_t j) {
    return "[" + std::to_string(i) + ", " + std::to_string(j) + "]";
}

}  // namespace

std::size_t GPTCache::current_pos() const {
    if (layers.empty()) return 0;
    const std::size_t pos = layers.front().pos;
    for (std::size_t i = 1; i < layers.size(); ++i)
        if (layers[i].pos != pos)
            throw std::invalid_argument("GPTCache: block " + std::to_string(i) + "'s cache holds " +
                                        std::to_string(layers[i].pos) + " tokens, block 0's " +
                                        std::to_string(pos));
    return pos;
}

std::size_t GPTCache::bytes() const {
    std::size_t total = 0;
    for (const KVCache& c : layers) total += c.bytes();
    return total;
}

GPTModel::GPTModel(const GPTConfig& cfg, Generator& gen)
    : tok_emb(checked_model_config(cfg).vocab_size, cfg.emb_dim, gen),
      pos_emb(cfg.context_length, cfg.emb_dim, gen),
      drop_emb(cfg.drop_rate, cfg.backend),
      trf_blocks(make_blocks(cfg, gen)),
      final_norm(cfg.emb_dim),
      out_head(cfg.emb_dim, cfg.vocab_size, false, gen) {}

std::size_t GPTModel::context_length() const {
    check_rank("GPTModel (pos_emb.weight)", shape_of(pos_emb.weight), 2);
    return pos_emb.weight.shape()[0];
}

std::size_t GPTModel::vocab_size() const {
    check_rank("GPTModel (tok_emb.weight)", shape_of(tok_emb.weight), 2);
    return tok_emb.weight.shape()[0];
}

void GPTModel::embed_into(const LongTensor& in_idx, std::size_t start, Tensor& x) const {
    const std::string where = "GPTModel";
    const Shape s = shape_of(in_idx);
    if (s.size() != 2) throw_shape_error(where + " (in_idx)", "[batch_size, seq_len]", s);
    const std::size_t b = s[0], T = s[1], V = vocab_size(), C = context_length();
    const std::size_t E = tok_emb.weight.shape()[1];
    if (pos_emb.weight.shape()[1] != E)
        throw std::invalid_argument(where + ": pos_emb is " + std::to_string(pos_emb.weight.shape()[1]) +
                                    " wide, tok_emb " + std::to_string(E));
    if (start == 0 && T > C)
        throw std::invalid_argument(where + ": " + std::to_string(T) + " tokens, but the context holds context_length = " +
                                    std::to_string(C) + " (pos_emb has " + std::to_string(C) + " positions)");
    check_positions(where, start, T, C);
    // No token (T = 0): nothing to check or add, whatever the batch (not 2^40 empty rows walked).
    for (std::size_t i = 0; T != 0 && i < b; ++i)
        for (std::size_t t = 0; t < T; ++t) {
            const std::int64_t id = in_idx(i, t);
            if (id < 0 || static_cast<std::uint64_t>(id) >= V)
                throw std::invalid_argument(where + ": token id " + std::to_string(id) + " at " + index_str(i, t) +
                                            " is out of range [0, vocab_size = " + std::to_string(V) + ")");
        }
    if (trf_blocks.empty())  // PyTorch would compute it: an empty nn.Sequential is the identity
        throw std::invalid_argument(where + ": trf_blocks is empty (PyTorch's empty nn.Sequential would pass the "
                                            "embeddings straight to final_norm; this model has at least one block, "
                                            "which its forward, backward and caches assume)");
    // tok_emb(in_idx) + pos_emb(arange(start, start + T)): [b, T, E] + [T, E], each row
    // gathered (F.embedding) and added to its position's
    check_allocation(where + " (embeddings)", Shape{b, T, E});
    float* px = sized(x, {b, T, E}, where + " (embeddings)");
    const float* pos = pos_emb.weight.data() + start * E;
    const float* tok = tok_emb.weight.data();
    // One walk over the b * T ids (a count in memory already), not b rows of T: with T = 0 and a
    // batch of 2^40 the rows would be walked empty.
    const std::int64_t* ids = in_idx.data();
    for (std::size_t n = 0, rows = b * T; n < rows; ++n) {
        const float* row = tok + static_cast<std::size_t>(ids[n]) * E;
        const float* p = pos + (n % T) * E;
        float* out = px + n * E;
        for (std::size_t j = 0; j < E; ++j) out[j] = row[j] + p[j];
    }
}

Tensor GPTModel::embed(const LongTensor& in_idx, std::size_t start) const {
    Tensor x;
    embed_into(in_idx, start, x);
    return x;
}

Tensor GPTModel::head(const Tensor& x) const {
    return out_head(final_norm(x));
}

Tensor GPTModel::operator()(const LongTensor& in_idx, Generator& gen) const {
    Tensor logits;
    forward_into(in_idx, logits, gen);
    return logits;
}

void GPTModel::forward_into(const LongTensor& in_idx, Tensor& logits, Generator& gen) const {
    // The activations in this thread's memory, kept between forwards as PyTorch's allocator at
    // its best keeps its blocks: [b, T, E] each, the block's input and output, the attention's
    // output, a norm's output.
    thread_local Tensor x, a, normed;
    embed_into(in_idx, 0, x);
    if (!drop_emb.is_identity()) x = drop_emb(x, gen);  // (no copy when it is x itself)
    for (const TransformerBlock& block : trf_blocks) block.forward_into(x, a, normed, gen);
    const Shape s = shape_of(x);
    const std::size_t rows = s[0] * s[1];
    if (final_norm.emb_dim() != s[2]) throw_shape_error("LayerNorm", "[..., " + std::to_string(final_norm.emb_dim()) + "]", s);
    final_norm.forward_into(x.data(), rows, sized(normed, s, "GPTModel (final_norm)"));
    out_head.check_parameters();
    if (out_head.in_features() != s[2])
        throw std::invalid_argument("GPTModel: out_head takes " + std::to_string(out_head.in_features()) +
                                    " features, final_norm gives " + std::to_string(s[2]));
    out_head.forward_into(normed.data(), rows, sized(logits, {s[0], s[1], out_head.out_features()}, "GPTModel (logits)"));
}

Tensor GPTModel::forward(const LongTensor& in_idx, GPTCache& cache, Generator& gen) const {
    const std::string where = "GPTModel";
    if (!cache.layers.empty() && cache.layers.size() != trf_blocks.size())
        throw std::invalid_argument(where + ": the cache holds " + std::to_string(cache.layers.size()) +
                                    " blocks' keys and values, the model has " +
                                    std::to_string(trf_blocks.size()) + " blocks");
    const std::size_t start = cache.current_pos();
    Tensor x = embed(in_idx, start);
    if (!drop_emb.is_identity()) x = drop_emb(x, gen);
    // Every block's cache is checked before the first is appended to (a batch of another size,
    // another model's cache), so that a refused call changes nothing.
    const Shape s = shape_of(in_idx);
    for (std::size_t i = 0; i < cache.layers.size(); ++i) {
        const MultiHeadAttention& att = trf_blocks[i].att;
        check_full_cache(where + " (block " + std::to_string(i) + "'s cache)", cache.layers[i], s[0],
                         att.num_heads, att.head_dim, s[1], att.context_length());
    }
    if (cache.layers.empty()) {
        if (cache.capacity && s[1] > cache.capacity)
            throw std::invalid_argument(where + ": " + std::to_string(s[1]) + " tokens for a cache of capacity = " +
                                        std::to_string(cache.capacity));
        cache.layers.assign(trf_blocks.size(), cache.capacity ? KVCache::preallocated(cache.capacity) : KVCache());
    }
    for (std::size_t i = 0; i < trf_blocks.size(); ++i) x = trf_blocks[i].forward(x, cache.layers[i], gen);
    return head(x);
}

const Tensor& GPTModel::forward(const LongTensor& in_idx, Saved& saved, Generator& gen) const {
    // Every tensor in saved's memory, reused by the next step (no page faulted in again).
    embed_into(in_idx, 0, saved.embeddings);
    const Tensor* x = &drop_emb.forward_into(saved.embeddings, saved.drop_emb, saved.embeddings, gen);
    saved.in_idx = in_idx;
    saved.blocks.resize(trf_blocks.size());
    for (std::size_t i = 0; i < trf_blocks.size(); ++i) x = &trf_blocks[i].forward(*x, saved.blocks[i], gen);
    const Tensor& h = final_norm.forward(*x, saved.final_norm);  // out_head's input, kept for backward
    const Shape s = shape_of(h);
    out_head.check_parameters();
    const std::size_t rows = s[0] * s[1];
    out_head.forward_into(h.data(), rows, sized(saved.logits, {s[0], s[1], out_head.out_features()}, "GPTModel (logits)"));
    return saved.logits;
}

void GPTModel::backward(const Saved& saved, const Tensor& grad_logits) {
    const std::string where = "GPTModel::backward";
    const Shape s = shape_of(saved.in_idx);
    if (s.size() != 2) throw_shape_error(where + " (saved.in_idx)", "[batch_size, seq_len] (a forward's)", s);
    const std::size_t b = s[0], T = s[1], E = tok_emb.weight.shape()[1];
    check_same_shape(where + " (grad_logits)", Shape{b, T, vocab_size()}, shape_of(grad_logits));
    if (saved.blocks.size() != trf_blocks.size())
        throw std::invalid_argument(where + ": saved holds " + std::to_string(saved.blocks.size()) +
                                    " blocks' tensors, the model has " + std::to_string(trf_blocks.size()) + " blocks");
    const Tensor& head_input = saved.final_norm.y;  // final_norm(x): out_head's input
    check_same_shape(where + " (saved.final_norm.y)", Shape{b, T, E}, shape_of(head_input));
    // The gradients [b, T, E] between the blocks in this thread's two kept buffers, each
    // block's dL/dx written into the one its dL/d output is not in.
    thread_local Tensor g_head, g_a, g_b, g_pos;
    thread_local LongTensor positions;
    // out_head.backward(head_input, grad_logits), its checks first, dL/d head_input kept
    out_head.check_backward(shape_of(head_input), shape_of(grad_logits));
    out_head.backward_into(head_input.data(), b * T, grad_logits.data(),
                           sized(g_head, {b, T, E}, "GPTModel::backward (out_head)"));
    final_norm.backward_into(saved.final_norm, g_head, nullptr, g_a);
    Tensor* g = &g_a;
    Tensor* other = &g_b;
    for (std::size_t i = trf_blocks.size(); i-- > 0;) {
        trf_blocks[i].backward_into(saved.blocks[i], *g, *other);
        std::swap(g, other);
    }
    const Tensor& g_x = nn::Dropout::backward_into(*g, saved.drop_emb, *g);  // in place
    // x = tok_embeds + pos_embeds: both receive g; pos_embeds [T, E] its sum over the batch.
    tok_emb.backward(saved.in_idx, g_x);
    detail::column_sums(g_x.data(), b, T * E, sized(g_pos, {T, E}, "GPTModel::backward (pos_emb)"));
    positions.resize({T});
    for (std::size_t t = 0; t < T; ++t) positions.data()[t] = static_cast<std::int64_t>(t);
    pos_emb.backward(positions, g_pos);
}

}  // namespace attn
