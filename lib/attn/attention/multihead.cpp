#include "attn/attention/multihead.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>

#include <xtensor/xbuilder.hpp>

#include "attn/kernels/fused_attention.hpp"
#include "attn/core/functional.hpp"

namespace attn {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

long to_long(std::size_t n) { return static_cast<long>(n); }

// Checks x is [b, T, width] and returns its shape.
Shape check_batch(const std::string& where, const Tensor& x, std::size_t width) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != width)
        throw_shape_error(where, "[b, T, " + std::to_string(width) + "]", s);
    return s;
}

// Rows [begin, end) of a Linear's weight (and bias): the layer that computes those outputs.
nn::Linear linear_rows(const nn::Linear& l, std::size_t begin, std::size_t end) {
    Tensor w = attn::slice(l.weight, 0, to_long(begin), to_long(end));
    std::optional<Tensor> b;
    if (l.bias) b = attn::slice(*l.bias, 0, to_long(begin), to_long(end));
    return nn::Linear(std::move(w), std::move(b));
}

// Several Linear layers with the same input stacked along their outputs.
nn::Linear linear_stack(const std::vector<const nn::Linear*>& layers) {
    std::vector<Tensor> ws, bs;
    for (const auto* l : layers) {
        ws.push_back(l->weight);
        if (l->bias) bs.push_back(*l->bias);
    }
    std::optional<Tensor> b;
    if (!bs.empty()) {
        if (bs.size() != layers.size())
            throw std::invalid_argument("stack_heads: some heads have a bias and some do not");
        b = attn::cat(bs, 0);
    }
    return nn::Linear(attn::cat(ws, 0), std::move(b));
}

}  // namespace

// ------------------------------------------------------------------------- split

std::vector<Tensor> split(const Tensor& x, std::size_t split_size, long dim) {
    if (split_size == 0) throw std::invalid_argument("split: expected split_size > 0, got 0");
    if (x.dimension() == 0) throw_shape_error("split", "at least 1-D", shape_of(x));
    const std::size_t d = wrap_dim("split", dim, x.dimension());
    const std::size_t n = x.shape()[d];
    std::vector<Tensor> parts;
    for (std::size_t start = 0; start < n; start += split_size)
        parts.push_back(attn::slice(x, to_long(d), to_long(start),
                                    to_long(std::min(n, start + split_size))));
    if (parts.empty()) parts.push_back(x);  // torch.split of an empty dim gives one empty chunk
    return parts;
}

// ------------------------------------------------------------------------- wrapper

void MultiHeadAttentionWrapperConfig::validate() const {
    const std::string where = "MultiHeadAttentionWrapper";
    require_positive(where, "num_heads", num_heads);
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    require_positive(where, "context_length", context_length);
    require_probability(where, "dropout", dropout);
    require_weight_size(where, "d_out", d_out, "d_in", d_in);
    require_mask_size(where, "context_length", context_length);
}

MultiHeadAttentionWrapper::MultiHeadAttentionWrapper(const MultiHeadAttentionWrapperConfig& config,
                                                     Generator& gen) {
    config.validate();
    heads.reserve(config.num_heads);
    for (std::size_t h = 0; h < config.num_heads; ++h)
        heads.emplace_back(CausalAttentionConfig{.d_in = config.d_in,
                                                 .d_out = config.d_out,
                                                 .context_length = config.context_length,
                                                 .dropout = config.dropout,
                                                 .qkv_bias = config.qkv_bias,
                                                 .backend = config.backend},
                           gen);
}

MultiHeadAttentionWrapper::Steps MultiHeadAttentionWrapper::forward_steps(const Tensor& x,
                                                                          Generator& gen) const {
    Steps st;
    for (const auto& head : heads) st.head_outputs.push_back(head(x, gen));
    st.context_vec = attn::cat(st.head_outputs, -1);
    return st;
}

Tensor MultiHeadAttentionWrapper::operator()(const Tensor& x, Generator& gen) const {
    return forward_steps(x, gen).context_vec;
}

void MultiHeadAttentionWrapper::train(bool mode) {
    for (auto& head : heads) head.train(mode);
}

// ------------------------------------------------------------------------- weight split

void MultiHeadAttentionConfig::validate() const {
    const std::string where = "MultiHeadAttention";
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    require_divisible(where, "d_out", d_out, "num_heads", num_heads);
    require_positive(where, "context_length", context_length);
    require_probability(where, "dropout", dropout);
    require_weight_size(where, "d_out", d_out, "d_in", d_in);
    require_weight_size(where, "d_out", d_out, "d_out", d_out);
    require_mask_size(where, "context_length", context_length);
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionConfig& config, Generator& gen)
    : num_heads((config.validate(), config.num_heads)),
      head_dim(config.d_out / config.num_heads),
      W_query(config.d_in, config.d_out, config.qkv_bias, gen),
      W_key(config.d_in, config.d_out, config.qkv_bias, gen),
      W_value(config.d_in, config.d_out, config.qkv_bias, gen),
      out_proj(config.d_out, config.d_out, config.out_bias, gen),
      dropout(config.dropout, config.backend),
      mask(attn::triu(attn::ones({config.context_length, config.context_length}), 1)) {}

MultiHeadAttention::MultiHeadAttention(nn::Linear Wq, nn::Linear Wk, nn::Linear Wv,
                                       nn::Linear out, std::size_t context_length,
                                       std::size_t num_heads_, double dropout_p,
                                       nn::BernoulliBackend backend)
    : num_heads(num_heads_),
      head_dim(0),
      W_query(std::move(Wq)),
      W_key(std::move(Wk)),
      W_value(std::move(Wv)),
      out_proj(std::move(out)),
      dropout(dropout_p, backend) {
    const Shape wq = shape_of(W_query.weight);
    check_same_shape("MultiHeadAttention (W_key)", wq, shape_of(W_key.weight));
    check_same_shape("MultiHeadAttention (W_value)", wq, shape_of(W_value.weight));
    check_same_shape("MultiHeadAttention (out_proj)", Shape{wq[0], wq[0]},
                     shape_of(out_proj.weight));
    require_divisible("MultiHeadAttention", "d_out", wq[0], "num_heads", num_heads);
    head_dim = wq[0] / num_heads;
    if (context_length == 0)
        throw std::invalid_argument("MultiHeadAttention: expected context_length > 0, got 0");
    require_mask_size("MultiHeadAttention", "context_length", context_length);
    mask = attn::triu(attn::ones({context_length, context_length}), 1);
}

MultiHeadAttention::Steps MultiHeadAttention::forward_steps(const Tensor& x,
                                                            Generator& gen) const {
    const Shape s = check_batch("MultiHeadAttention", x, d_in());
    const long b = to_long(s[0]), T = to_long(s[1]);
    const long H = to_long(num_heads), hd = to_long(head_dim);
    const BoolTensor causal_mask = causal_mask_for("MultiHeadAttention", mask, s[1]);
    Steps st;
    st.queries = W_query(x);
    st.keys = W_key(x);
    st.values = W_value(x);
    // Split the last dimension d_out into H heads of hd columns: head h owns columns
    // h*hd .. (h+1)*hd - 1, then move the head dimension before the tokens.
    st.queries_split = attn::view(st.queries, {b, T, H, hd});
    st.keys_split = attn::view(st.keys, {b, T, H, hd});
    st.values_split = attn::view(st.values, {b, T, H, hd});
    st.queries_heads = attn::transpose(st.queries_split, 1, 2);
    st.keys_heads = attn::transpose(st.keys_split, 1, 2);
    st.values_heads = attn::transpose(st.values_split, 1, 2);
    // [b, H, T, hd] @ [b, H, hd, T] -> [b, H, T, T]; the [T, T] mask broadcasts over b and H.
    st.attn_scores = attn::masked_fill(
        attn::matmul(st.queries_heads, attn::transpose(st.keys_heads, 2, 3)), causal_mask,
        neg_inf);
    const float d_k = static_cast<float>(head_dim);
    st.attn_weights = attn::softmax(Tensor(st.attn_scores / std::sqrt(d_k)), -1);
    st.dropped_weights = dropout(st.attn_weights, gen);
    st.context_heads = attn::matmul(st.dropped_weights, st.values_heads);
    st.context_transposed = attn::transpose(st.context_heads, 1, 2);
    st.context_merged = attn::view(st.context_transposed, {b, T, to_long(d_out())});
    st.context_vec = out_proj(st.context_merged);
    return st;
}

Tensor MultiHeadAttention::operator()(const Tensor& x, Generator& gen) const {
    // The fast path gives forward_steps' bits without its [b, H, T, T] intermediates
    // (fast_attention.hpp); with dropout active it falls back to the steps.
    if (x.dimension() == 3 && x.shape()[2] == d_in() && x.size() > 0 &&
        fast::supports(*this, x.shape()[1]))
        return fast::multihead_forward(*this, x);
    return forward_steps(x, gen).context_vec;
}

// ------------------------------------------------------------------------- GPT-2

namespace {

// Every check of a GPT2Config, before the layer draws anything.
const GPT2Config& checked(const GPT2Config& config) {
    const std::string where = "GPT2Attention";
    require_divisible(where + " (n_embd, n_head)", "d_out", config.n_embd, "num_heads", config.n_head);
    require_positive(where, "block_size", config.block_size);
    require_probability(where, "dropout", config.dropout);
    std::size_t three = 0;
    if (__builtin_mul_overflow(config.n_embd, std::size_t{3}, &three))
        throw std::length_error(where + " (c_attn weight [3 * n_embd, n_embd]): 3 * n_embd = 3 * " +
                                std::to_string(config.n_embd) + " overflows");
    require_weight_size(where + " (c_attn)", "3 * n_embd", three, "n_embd", config.n_embd);
    require_mask_size(where, "block_size", config.block_size);
    return config;
}

}  // namespace

GPT2Attention::GPT2Attention(const GPT2Config& config, nn::BernoulliBackend backend,
                             Generator& gen)
    : max_positions(checked(config).block_size),
      embed_dim(config.n_embd),
      num_heads((require_divisible("GPT2Attention (n_embd, n_head)", "d_out", config.n_embd, "num_heads", config.n_head),
                 config.n_head)),
      head_dim(config.n_embd / config.n_head),
      c_attn(config.n_embd, 3 * config.n_embd, config.bias, gen),
      c_proj(config.n_embd, config.n_embd, config.bias, gen),
      attn_dropout(config.dropout, backend),
      resid_dropout(config.dropout, backend) {
    if (config.block_size == 0)
        throw std::invalid_argument("GPT2Attention: expected block_size > 0, got 0");
    const long n = to_long(config.block_size);
    bias = attn::view(attn::tril(attn::ones({config.block_size, config.block_size})),
                      {1, 1, n, n});
}

GPT2Attention::Steps GPT2Attention::forward_steps(const Tensor& x, Generator& gen) const {
    const Shape s = check_batch("GPT2Attention", x, embed_dim);
    const long B = to_long(s[0]), T = to_long(s[1]), S = to_long(s[2]);
    const long H = to_long(num_heads), hs = to_long(head_dim);
    if (s[1] > max_positions) {
        throw std::invalid_argument("GPT2Attention: got " + std::to_string(s[1]) +
                                    " tokens, but block_size is " +
                                    std::to_string(max_positions) +
                                    " (the causal buffer has only that many rows)");
    }
    Steps st;
    st.qkv = c_attn(x);
    const auto parts = attn::split(st.qkv, embed_dim, 2);
    st.q = parts[0];
    st.k = parts[1];
    st.v = parts[2];
    st.q_heads = attn::transpose(attn::view(st.q, {B, T, H, hs}), 1, 2);
    st.k_heads = attn::transpose(attn::view(st.k, {B, T, H, hs}), 1, 2);
    st.v_heads = attn::transpose(attn::view(st.v, {B, T, H, hs}), 1, 2);
    // `* (1.0 / math.sqrt(k.size(-1)))`: a Python double, rounded to float32 by the multiply.
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    st.att_scores = attn::matmul(st.q_heads, attn::transpose(st.k_heads, -2, -1)) * scale;
    // bias[:, :, :T, :T] == 0 marks the future; [1, 1, T, T] broadcasts over B and H.
    const Tensor causal = attn::slice(attn::slice(bias, 2, 0, T), 3, 0, T);
    st.att_masked = attn::masked_fill(st.att_scores, attn::eq(causal, 0.0f), neg_inf);
    st.att = attn::softmax(st.att_masked, -1);
    st.att_dropped = attn_dropout(st.att, gen);
    st.y_heads = attn::matmul(st.att_dropped, st.v_heads);
    st.y = attn::view(attn::transpose(st.y_heads, 1, 2), {B, T, S});
    st.proj = c_proj(st.y);
    st.output = resid_dropout(st.proj, gen);
    return st;
}

Tensor GPT2Attention::operator()(const Tensor& x, Generator& gen) const {
    return forward_steps(x, gen).output;
}

// ------------------------------------------------------------------------- layout maps

MultiHeadAttention stack_heads(const MultiHeadAttentionWrapper& wrapper) {
    const auto& first = wrapper.heads.at(0);
    std::vector<const nn::Linear*> q, k, v;
    for (const auto& head : wrapper.heads) {
        check_same_shape("stack_heads (W_query of a head)", shape_of(first.W_query.weight),
                         shape_of(head.W_query.weight));
        check_same_shape("stack_heads (mask of a head)", shape_of(first.mask),
                         shape_of(head.mask));
        q.push_back(&head.W_query);
        k.push_back(&head.W_key);
        v.push_back(&head.W_value);
    }
    const std::size_t d_out = first.d_out() * wrapper.num_heads();
    // Identity out_proj: the merged heads are the result, as torch.cat gives it.
    Tensor eye = xt::eye<float>(d_out);
    MultiHeadAttention m(linear_stack(q), linear_stack(k), linear_stack(v),
                         nn::Linear(std::move(eye), std::nullopt), first.context_length(),
                         wrapper.num_heads(), first.dropout.p, first.dropout.backend);
    m.train(first.dropout.training);
    return m;
}

MultiHeadAttention split_c_attn(const GPT2Attention& layer) {
    const std::size_t S = layer.embed_dim;
    MultiHeadAttention m(linear_rows(layer.c_attn, 0, S), linear_rows(layer.c_attn, S, 2 * S),
                         linear_rows(layer.c_attn, 2 * S, 3 * S), layer.c_proj,
                         layer.max_positions, layer.num_heads, layer.attn_dropout.p,
                         layer.attn_dropout.backend);
    m.train(layer.attn_dropout.training);
    return m;
}

}  // namespace attn
