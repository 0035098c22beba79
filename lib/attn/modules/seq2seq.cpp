// The attention-only encoder-decoder of chapter 25 (seq2seq.hpp): forward, backward, greedy
// decoding with the cross-attention cache, and the copy task's batches.
#include "attn/modules/seq2seq.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attn/attention/masks.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"
#include "attn/core/require.hpp"

namespace attn {

namespace {

const std::string kSeq2SeqWhere = "AttentionOnlySeq2Seq";

const Seq2SeqConfig& validated_seq2seq(const Seq2SeqConfig& c) {
    c.validate();
    return c;
}

MultiheadAttentionConfig attention_config(const Seq2SeqConfig& c) {
    return {.embed_dim = c.emb_dim, .num_heads = c.num_heads, .batch_first = true};
}

// Checks ids [B, T] against the position table and returns T.
std::size_t check_ids(const LongTensor& ids, const nn::Embedding& pos_emb, const char* what) {
    const Shape s = shape_of(ids);
    if (s.size() != 2) throw_shape_error(kSeq2SeqWhere + " (" + what + ")", "[B, T] token ids", s);
    check_rank(kSeq2SeqWhere + " (pos_emb.weight)", shape_of(pos_emb.weight), 2);
    if (s[1] > pos_emb.weight.shape()[0])
        throw std::invalid_argument(kSeq2SeqWhere + ": " + what + " has " + std::to_string(s[1]) +
                                    " tokens, beyond context_length " + std::to_string(pos_emb.weight.shape()[0]));
    return s[1];
}

// emb(ids) + pos_emb(arange(T)), the positions broadcast over the batch: [B, T, d].
Tensor embed(const nn::Embedding& emb, const nn::Embedding& pos_emb, const LongTensor& ids, const char* what) {
    const std::size_t T = check_ids(ids, pos_emb, what);
    Tensor x = emb(ids);
    const Tensor pos = pos_emb(arange(static_cast<std::int64_t>(T)));
    const std::size_t per_sequence = pos.size();
    if (per_sequence != 0)
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] + pos.data()[i % per_sequence];
    return x;
}

void add_tensor_into(Tensor& x, const Tensor& y) {
    check_same_shape(kSeq2SeqWhere + " (residual)", shape_of(x), shape_of(y));
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] + y.data()[i];
}

// The backward of emb(ids) + pos_emb(arange(T)): the ids' rows of emb, the batch's sum
// (sum_to over dim 0, PyTorch's order) for the positions.
void embed_backward(nn::Embedding& emb, nn::Embedding& pos_emb, const LongTensor& ids, const Tensor& g) {
    const std::size_t B = ids.shape()[0], T = ids.shape()[1], d = g.shape()[2];
    Tensor g_pos = Tensor::from_shape({T, d});
    detail::column_sums(g.data(), B, T * d, g_pos.data());
    pos_emb.backward(arange(static_cast<std::int64_t>(T)), g_pos);
    emb.backward(ids, g);
}

}  // namespace

void Seq2SeqConfig::validate() const {
    require_positive(kSeq2SeqWhere, "vocab_size", vocab_size);
    require_positive(kSeq2SeqWhere, "context_length", context_length);
    require_positive(kSeq2SeqWhere, "emb_dim", emb_dim);
    require_positive(kSeq2SeqWhere, "num_heads", num_heads);
    require_divisible(kSeq2SeqWhere, "emb_dim", emb_dim, "num_heads", num_heads);
    check_allocation(kSeq2SeqWhere + " (src_emb)", Shape{vocab_size, emb_dim});
    check_allocation(kSeq2SeqWhere + " (pos_emb)", Shape{context_length, emb_dim});
    attention_config(*this).validate();
}

AttentionOnlySeq2Seq::AttentionOnlySeq2Seq(const Seq2SeqConfig& config, Generator& gen)
    : src_emb(validated_seq2seq(config).vocab_size, config.emb_dim, gen),
      tgt_emb(config.vocab_size, config.emb_dim, gen),
      pos_emb(config.context_length, config.emb_dim, gen),
      encoder(attention_config(config), gen),
      self_attn(attention_config(config), gen),
      cross_attn(attention_config(config), gen),
      out_head(config.emb_dim, config.vocab_size, /*bias=*/false, gen) {}

Tensor AttentionOnlySeq2Seq::encode(const LongTensor& src) const {
    Tensor x = embed(src_emb, pos_emb, src, "src");
    add_tensor_into(x, encoder(x, x, x, {.need_weights = false}).attn_output);
    return x;
}

namespace {

// The decoder's stream after its causal self-attention: [B, T, d].
Tensor decoder_stream(const AttentionOnlySeq2Seq& m, const LongTensor& tgt, MultiheadAttentionSaved* saved) {
    Tensor y = embed(m.tgt_emb, m.pos_emb, tgt, "tgt");
    const BoolTensor causal = causal_attn_mask(tgt.shape()[1]);
    const MultiheadAttentionArgs args{.need_weights = false, .attn_mask = &causal};
    add_tensor_into(y, saved ? m.self_attn.forward(y, y, y, args, *saved).attn_output : m.self_attn(y, y, y, args).attn_output);
    return y;
}

}  // namespace

Tensor AttentionOnlySeq2Seq::decode(const Tensor& memory, const LongTensor& tgt) const {
    Tensor y = decoder_stream(*this, tgt, nullptr);
    add_tensor_into(y, cross_attn(y, memory, memory, {.need_weights = false}).attn_output);
    return out_head(y);
}

Tensor AttentionOnlySeq2Seq::decode(const KVCache& memory_cache, const LongTensor& tgt) const {
    Tensor y = decoder_stream(*this, tgt, nullptr);
    add_tensor_into(y, cross_attn(y, memory_cache, {.need_weights = false}).attn_output);
    return out_head(y);
}

Tensor AttentionOnlySeq2Seq::operator()(const LongTensor& src, const LongTensor& tgt) const {
    return decode(encode(src), tgt);
}

Tensor AttentionOnlySeq2Seq::forward(const LongTensor& src, const LongTensor& tgt, Saved& saved) const {
    Tensor x = embed(src_emb, pos_emb, src, "src");
    add_tensor_into(x, encoder.forward(x, x, x, {.need_weights = false}, saved.encoder).attn_output);
    const Tensor& memory = x;
    Tensor y = decoder_stream(*this, tgt, &saved.self_attn);
    add_tensor_into(y, cross_attn.forward(y, memory, memory, {.need_weights = false}, saved.cross_attn).attn_output);
    saved.src = src;
    saved.tgt = tgt;
    Tensor logits = out_head(y);
    saved.decoder_out = std::move(y);
    return logits;
}

void AttentionOnlySeq2Seq::backward(const Saved& saved, const Tensor& grad_logits) {
    const Shape st = shape_of(saved.tgt);
    if (st.size() != 2 || shape_of(saved.src).size() != 2)
        throw std::invalid_argument(kSeq2SeqWhere + "::backward: saved is not a forward of this model");
    check_same_shape(kSeq2SeqWhere + "::backward (grad_logits)", Shape{st[0], st[1], out_head.out_features()},
                     shape_of(grad_logits));
    // out_head, then the decoder's blocks: y2 = y1 + cross(y1, memory), y1 = y0 + self(y0)
    Tensor g = out_head.backward(saved.decoder_out, grad_logits);
    const MultiheadAttentionGrads cross = cross_attn.backward(saved.cross_attn, g);
    add_tensor_into(g, cross.query);
    const MultiheadAttentionGrads self = self_attn.backward(saved.self_attn, g);
    add_tensor_into(g, self.query);
    embed_backward(tgt_emb, pos_emb, saved.tgt, g);
    // the memory's gradient (its keys and values, one tensor), back through x1 = x0 + encoder(x0)
    Tensor gm = *cross.key;
    const MultiheadAttentionGrads enc = encoder.backward(saved.encoder, gm);
    add_tensor_into(gm, enc.query);
    embed_backward(src_emb, pos_emb, saved.src, gm);
}

Tensor AttentionOnlySeq2Seq::cross_attention_weights(const LongTensor& src, const LongTensor& tgt) const {
    const Tensor memory = encode(src);
    const Tensor y = decoder_stream(*this, tgt, nullptr);
    return *cross_attn(y, memory, memory).attn_output_weights;
}

LongTensor AttentionOnlySeq2Seq::greedy_decode(const LongTensor& src, std::size_t length) const {
    if (length == 0 || length > pos_emb.weight.shape()[0])
        throw std::invalid_argument(kSeq2SeqWhere + "::greedy_decode: expected 1 <= length <= context_length = " +
                                    std::to_string(pos_emb.weight.shape()[0]) + ", got " + std::to_string(length));
    const Tensor memory = encode(src);
    const KVCache memory_cache = cross_attn.memory_cache(memory, memory);  // once, for every step
    const std::size_t B = src.shape()[0];
    check_allocation(kSeq2SeqWhere + "::greedy_decode (the decoded ids [B, length])", Shape{B, length}, sizeof(std::int64_t));
    LongTensor ys = LongTensor::from_shape({B, length});
    for (std::size_t b = 0; b < B; ++b) ys(b, 0) = 1;
    for (std::size_t t = 1; t < length; ++t) {
        LongTensor prefix = LongTensor::from_shape({B, t});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < t; ++j) prefix(b, j) = ys(b, j);
        const Tensor logits = decode(memory_cache, prefix);  // [B, t, V]
        // [:, -1].argmax(-1): the first maximum, a NaN counting as the largest (PyTorch's argmax)
        const LongTensor next = argmax(attn::slice(logits, 1, static_cast<long>(t) - 1, static_cast<long>(t)), -1);
        for (std::size_t b = 0; b < B; ++b) ys(b, t) = next(b, 0);
    }
    return ys;
}

CopyBatch copy_batch(std::size_t batch_size, std::size_t vocab_size, std::size_t length, bool reverse,
                     Generator& gen) {
    if (batch_size == 0 || length == 0 || vocab_size < 2)
        throw std::invalid_argument("copy_batch: expected batch_size, length >= 1 and vocab_size >= 2, got " +
                                    std::to_string(batch_size) + ", " + std::to_string(length) + ", " +
                                    std::to_string(vocab_size));
    CopyBatch out;
    out.src = randint(1, static_cast<std::int64_t>(vocab_size), {batch_size, length}, gen);
    for (std::size_t b = 0; b < batch_size; ++b) out.src(b, 0) = 1;
    out.tgt = out.src;
    if (reverse)
        for (std::size_t b = 0; b < batch_size; ++b)
            for (std::size_t j = 1; j < length; ++j) out.tgt(b, j) = out.src(b, length - j);
    return out;
}

}  // namespace attn
