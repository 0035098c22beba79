/// @file attention_only.cpp
/// @brief The attention-only transformer's forward and backward (see attention_only.hpp).

#include "attn/modules/attention_only.hpp"

#include "attn/core/require.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"

namespace attn {
namespace {

// Checks the sizes before anything is drawn (a constructor's member initialisers run first).
const AttentionOnlyConfig& validated_attention_only(const AttentionOnlyConfig& config) {
    config.validate();
    return config;
}

std::vector<MultiHeadAttention> make_attention_blocks(const AttentionOnlyConfig& c, Generator& gen) {
    std::vector<MultiHeadAttention> blocks;
    for (std::size_t i = 0; i < c.num_layers; ++i)
        blocks.emplace_back(MultiHeadAttentionConfig{.d_in = c.emb_dim, .d_out = c.emb_dim,
                                                     .context_length = c.context_length,
                                                     .dropout = 0.0, .num_heads = c.num_heads},
                            gen);
    return blocks;
}

}  // namespace

void AttentionOnlyConfig::validate() const {
    const auto zero = [](const char* field) {
        throw std::invalid_argument(std::string("AttentionOnlyConfig: ") + field + " must be at least 1, got 0");
    };
    if (vocab_size == 0) zero("vocab_size");
    if (context_length == 0) zero("context_length");
    if (emb_dim == 0) zero("emb_dim");
    if (num_heads == 0) zero("num_heads");
    if (num_layers == 0) zero("num_layers");
    if (emb_dim % num_heads != 0)
        throw std::invalid_argument("AttentionOnlyConfig: num_heads (" + std::to_string(num_heads) +
                                    ") must divide emb_dim (" + std::to_string(emb_dim) + ")");
    check_allocation("AttentionOnlyConfig (tok_emb)", Shape{vocab_size, emb_dim});
    check_allocation("AttentionOnlyConfig (pos_emb)", Shape{context_length, emb_dim});
    // Each block's weights [emb_dim, emb_dim] and causal mask [context_length, context_length].
    require_weight_size("AttentionOnlyConfig", "emb_dim", emb_dim, "emb_dim", emb_dim);
    require_mask_size("AttentionOnlyConfig", "context_length", context_length);
}

AttentionOnlyTransformer::AttentionOnlyTransformer(const AttentionOnlyConfig& config, Generator& gen)
    : tok_emb(validated_attention_only(config).vocab_size, config.emb_dim, gen),
      pos_emb(config.context_length, config.emb_dim, gen),
      blocks(make_attention_blocks(config, gen)),
      out_head(config.emb_dim, config.vocab_size, /*bias=*/false, gen) {}

Tensor AttentionOnlyTransformer::forward(const LongTensor& ids, Saved& saved) const {
    const Shape s = shape_of(ids);
    if (s.size() != 2) throw_shape_error("AttentionOnlyTransformer (ids)", "[b, T]", s);
    check_rank("AttentionOnlyTransformer (pos_emb.weight)", shape_of(pos_emb.weight), 2);
    if (s[1] > pos_emb.weight.shape()[0])
        throw std::invalid_argument("AttentionOnlyTransformer: " + std::to_string(s[1]) +
                                    " tokens exceed context_length " + std::to_string(pos_emb.weight.shape()[0]));
    // x = tok_emb(ids) + pos_emb(arange(T)), the positions broadcast over the batch
    Tensor x = tok_emb(ids);
    const Tensor pos = pos_emb(arange(static_cast<std::int64_t>(s[1])));
    const std::size_t per_sequence = pos.size();
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] + pos.data()[i % per_sequence];
    saved.ids = ids;
    saved.blocks.assign(blocks.size(), AttentionSaved{});
    for (std::size_t l = 0; l < blocks.size(); ++l) {
        const Tensor y = blocks[l].forward(x, saved.blocks[l]);  // x = x + block(x)
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] + y.data()[i];
    }
    Tensor logits = out_head(x);
    saved.x_final = std::move(x);
    return logits;
}

Tensor AttentionOnlyTransformer::operator()(const LongTensor& ids) const {
    Saved saved;
    return forward(ids, saved);
}

void AttentionOnlyTransformer::backward(const Saved& saved, const Tensor& grad_logits) {
    const Shape s = shape_of(saved.ids);
    if (s.size() != 2 || saved.blocks.size() != blocks.size())
        throw std::invalid_argument("AttentionOnlyTransformer::backward: saved is not a forward of this model");
    check_same_shape("AttentionOnlyTransformer::backward (grad_logits)",
                     Shape{s[0], s[1], out_head.out_features()}, shape_of(grad_logits));
    Tensor g = out_head.backward(saved.x_final, grad_logits);
    for (std::size_t l = blocks.size(); l-- > 0;)  // d(x + block(x)): identity first, then the block's shares
        g = blocks[l].backward(saved.blocks[l], g, g);
    // pos_emb(arange(T)) was broadcast over the batch: its gradient is g.sum(0)
    const std::size_t d = g.shape()[2];
    Tensor g_pos = Tensor::from_shape({s[1], d});
    detail::column_sums(g.data(), s[0], s[1] * d, g_pos.data());
    pos_emb.backward(arange(static_cast<std::int64_t>(s[1])), g_pos);
    tok_emb.backward(saved.ids, g);
}

std::vector<Tensor> AttentionOnlyTransformer::attn_weights(const LongTensor& ids) const {
    Saved saved;
    forward(ids, saved);  // checks ids; each block's input is then rebuilt step by step
    Tensor x = tok_emb(ids);
    const Tensor pos = pos_emb(arange(static_cast<std::int64_t>(ids.shape()[1])));
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] + pos.data()[i % pos.size()];
    std::vector<Tensor> weights;
    for (const MultiHeadAttention& block : blocks) {
        MultiHeadAttention::Steps steps = block.forward_steps(x);
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] + steps.context_vec.data()[i];
        weights.push_back(std::move(steps.attn_weights));
    }
    return weights;
}

std::pair<LongTensor, LongTensor> next_token_pairs(const LongTensor& seq) {
    const Shape s = shape_of(seq);
    if (s.size() != 2 || s[1] < 2) throw_shape_error("next_token_pairs (seq)", "[b, n] with n >= 2", s);
    LongTensor input = LongTensor::from_shape({s[0], s[1] - 1});
    LongTensor targets = LongTensor::from_shape({s[0], s[1] - 1});
    for (std::size_t i = 0; i < s[0]; ++i)
        for (std::size_t j = 0; j + 1 < s[1]; ++j) {
            input(i, j) = seq(i, j);
            targets(i, j) = seq(i, j + 1);
        }
    return {std::move(input), std::move(targets)};
}

namespace {

// logits[:, from:to].reshape(-1, V) and targets[:, from:to].reshape(-1), checked.
std::pair<Tensor, LongTensor> loss_positions(const Tensor& logits, const LongTensor& targets,
                                        std::size_t from, std::size_t to, const char* where) {
    const Shape s = shape_of(logits);
    if (s.size() != 3) throw_shape_error(where, "logits [b, T, V]", s);
    check_same_shape(std::string(where) + " (targets)", Shape{s[0], s[1]}, shape_of(targets));
    if (to == 0) to = s[1];
    if (from >= to || to > s[1])
        throw std::invalid_argument(std::string(where) + ": positions [" + std::to_string(from) + ", " +
                                    std::to_string(to) + ") are empty or past T = " + std::to_string(s[1]));
    const std::size_t n = to - from, V = s[2];
    Tensor rows = Tensor::from_shape({s[0] * n, V});
    LongTensor t = LongTensor::from_shape({s[0] * n});
    for (std::size_t i = 0; i < s[0]; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            std::copy_n(logits.data() + (i * s[1] + from + j) * V, V, rows.data() + (i * n + j) * V);
            t(i * n + j) = targets(i, from + j);
        }
    return {std::move(rows), std::move(t)};
}

}  // namespace

Tensor sequence_cross_entropy(const Tensor& logits, const LongTensor& targets, std::size_t from, std::size_t to) {
    const auto rows = loss_positions(logits, targets, from, to, "sequence_cross_entropy");
    return cross_entropy(rows.first, rows.second);
}

Tensor sequence_cross_entropy_backward(const Tensor& logits, const LongTensor& targets) {
    const auto rows = loss_positions(logits, targets, 0, 0, "sequence_cross_entropy_backward");
    Tensor grad = cross_entropy_backward(scalar_tensor(1.0f), rows.first, rows.second);
    grad.reshape(logits.shape());
    return grad;
}

LongTensor repeated_tokens(std::size_t b, std::size_t half, std::size_t vocab_size, Generator& gen) {
    if (b == 0 || half == 0 || vocab_size == 0)
        throw std::invalid_argument("repeated_tokens: b, half and vocab_size must be at least 1, got " +
                                    std::to_string(b) + ", " + std::to_string(half) + ", " +
                                    std::to_string(vocab_size));
    const LongTensor first = randint(0, static_cast<std::int64_t>(vocab_size), {b, half}, gen);
    LongTensor seq = LongTensor::from_shape({b, 2 * half});
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t j = 0; j < 2 * half; ++j) seq(i, j) = first(i, j % half);
    return seq;
}

}  // namespace attn
