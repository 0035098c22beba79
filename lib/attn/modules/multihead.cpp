// MultiHeadAttention (multihead.hpp): Raschka ch. 3.6.2, and stack_heads.
#include "attn/modules/multihead.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include <xtensor/xbuilder.hpp>

#include "attn/attention/positions.hpp"
#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/modules/train.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {

long to_long(std::size_t n) { return static_cast<long>(n); }

// Several Linear layers with the same input stacked along their outputs.
nn::Linear linear_stack(const std::vector<const nn::Linear*>& layers) {
    std::vector<Tensor> ws, bs;
    for (const auto* l : layers) {
        ws.push_back(l->weight);
        if (l->bias) bs.push_back(l->bias_vector());
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

void MultiHeadAttention::validate(const AttentionConfig& c) {
    const std::string where = "MultiHeadAttention";
    c.check(where, {ConfigField::d_in, ConfigField::d_out, ConfigField::context_length,
                    ConfigField::dropout, ConfigField::num_heads, ConfigField::qkv_bias,
                    ConfigField::out_bias, ConfigField::backend, ConfigField::positions,
                    ConfigField::rope_base, ConfigField::rope_freq, ConfigField::projection_order});
    require_weight_size(where, "d_out", c.d_out, "d_in", c.d_in);
    require_weight_size(where, "d_out", c.d_out, "d_out", c.d_out);
    require_mask_size(where, "context_length", c.context_length);
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionConfig& config, Generator& gen)
    : num_heads((validate(config), config.num_heads)),
      head_dim(config.d_out / config.num_heads),
      positions(ModulePositions::of("MultiHeadAttention", config, config.num_heads, config.d_out / config.num_heads)),
      W_query(config.d_in, config.d_out, config.qkv_bias, gen),
      W_key(config.d_in, config.d_out, config.qkv_bias, gen),
      W_value(config.d_in, config.d_out, config.qkv_bias, gen),
      out_proj(config.d_out, config.d_out, config.out_bias, gen),
      dropout(config.dropout, config.backend),
      mask(attn::triu(attn::ones({config.context_length, config.context_length}), 1)),
      projection_order(config.projection_order) {}

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

Shape MultiHeadAttention::check(const Tensor& x) const {
    const std::string where = "MultiHeadAttention";
    // The widths most fields agree on: a replaced layer (or head field) is the one named.
    const std::size_t in = agreed_width({width_of(W_query, true), width_of(W_key, true), width_of(W_value, true)});
    const std::size_t d = agreed_width({width_of(W_query), heads_width(num_heads, head_dim), width_of(W_key),
                                        width_of(W_value), width_of(out_proj, true)});
    check_linear(where, "W_query", W_query, in, d);
    check_linear(where, "W_key", W_key, in, d);
    check_linear(where, "W_value", W_value, in, d);
    check_output_linear(where, "out_proj", out_proj, d, d);
    check_heads(where, num_heads, head_dim, d);
    const Shape s = check_tokens(where, x, in);
    check_dropout(where, dropout);
    return s;
}

SDPAOptions MultiHeadAttention::options(const BufferMask& causal, Generator& gen) const {
    SDPAOptions o = dropout_options(dropout, gen);
    o.scale = ScoreScale::divide_by(std::sqrt(static_cast<float>(head_dim)));
    causal.apply(o);
    positions.apply(o);  // ALiBi's slopes, if any
    return o;
}

MultiHeadAttention::Steps MultiHeadAttention::forward_steps(const Tensor& x,
                                                            Generator& gen) const {
    const Shape s = check(x);
    const long b = to_long(s[0]), T = to_long(s[1]);
    const long H = to_long(num_heads), hd = to_long(head_dim);
    const BufferMask causal = read_buffer("MultiHeadAttention", mask, s[1], 1.0f);
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
    // RoPE (his Llama 2 module): queries and keys rotated by their positions, as heads.
    if (positions.scheme == PositionScheme::rope) {
        st.queries_rotated = compute_rope(st.queries_heads, positions.cos, positions.sin);
        st.keys_rotated = compute_rope(st.keys_heads, positions.cos, positions.sin);
    }
    const bool rope = positions.scheme == PositionScheme::rope;
    // [b, H, T, hd] @ [b, H, hd, T] -> [b, H, T, T], masked, softmax(/ sqrt(hd)), dropout,
    // @ values: the core's steps. The [T, T] mask broadcasts over b and H.
    const SDPASteps core = scaled_dot_product_attention_steps(
        rope ? st.queries_rotated : st.queries_heads, rope ? st.keys_rotated : st.keys_heads, st.values_heads,
        options(causal, gen));
    st.attn_scores = core.masked_attn_scores();
    st.attn_weights = core.attn_weights;
    st.dropped_weights = core.dropped_weights;
    st.context_heads = core.output;
    st.context_transposed = attn::transpose(st.context_heads, 1, 2);
    st.context_merged = attn::view(st.context_transposed, {b, T, to_long(d_out())});
    st.context_vec = out_proj(st.context_merged);
    return st;
}

Tensor MultiHeadAttention::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    const BufferMask causal = read_buffer("MultiHeadAttention", mask, s[1], 1.0f);
    // W_query(x).view(b, T, H, hd).transpose(1, 2), without a copy, in reused workspaces:
    // (the three products in one pass over x: detail::project_qkv)
    const detail::QKVHeads qkv =
        detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_heads, head_dim, &positions);
    // The core, the heads merged as .transpose(1, 2).contiguous().view(b, T, d_out), out_proj.
    return detail::attend_project(qkv.queries, qkv.keys, qkv.values, &out_proj,
                                  options(causal, gen));
}

void MultiHeadAttention::forward_into(const Tensor& x, Tensor& y, Generator& gen) const {
    const Shape s = check(x);
    const BufferMask causal = read_buffer("MultiHeadAttention", mask, s[1], 1.0f);
    const detail::QKVHeads qkv =
        detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_heads, head_dim, &positions);
    detail::attend_project_into(qkv.queries, qkv.keys, qkv.values, &out_proj, options(causal, gen), y);
}

Tensor MultiHeadAttention::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = "MultiHeadAttention";
    const Shape s = check(x);
    const std::size_t start = cache.pos;
    check_positions(where, start, s[1], context_length());
    // Rows start .. start + T - 1 of the buffer: causal from positions while it is intact.
    const BufferMask causal = read_buffer(where, mask, s[1], 1.0f, start);
    // The new keys and values [b, H, T, hd] appended; the queries attend to every cached key.
    // Under RoPE the queries and new keys are rotated at their positions start .. start + T - 1.
    const HeadsView queries = detail::project_into_cache(where, cache, W_query, W_key, W_value, x,
                                                         num_heads, num_heads, head_dim, context_length(),
                                                         &positions);
    SDPAOptions o = options(causal, gen);
    o.query_start = start;
    return detail::attend_project(queries, detail::held_heads(cache, cache.key), detail::held_heads(cache, cache.value), &out_proj, o);
}

const Tensor& MultiHeadAttention::forward(const Tensor& x, AttentionSaved& saved, Generator& gen) const {
    const Shape s = check(x);
    saved.mask = read_buffer("MultiHeadAttention", mask, s[1], 1.0f);
    const SDPAOptions o = options(saved.mask, gen);
    return detail::train_forward(W_query, W_key, W_value, &out_proj, x, num_heads, head_dim,
                                 o.dropout_p, o, saved, &positions);
}

Tensor MultiHeadAttention::backward(const AttentionSaved& saved, const Tensor& grad_output) {
    return detail::train_backward(W_query, W_key, W_value, &out_proj, saved, grad_output,
                                  "MultiHeadAttention::backward", nullptr, &positions, projection_order);
}

void MultiHeadAttention::backward_into(const AttentionSaved& saved, const Tensor& grad_output, Tensor& grad_x) {
    detail::train_backward_into(W_query, W_key, W_value, &out_proj, saved, grad_output,
                                "MultiHeadAttention::backward", nullptr, &positions, projection_order, grad_x);
}

Tensor MultiHeadAttention::backward(const AttentionSaved& saved, const Tensor& grad_output,
                                    const Tensor& grad_x_before) {
    return detail::train_backward(W_query, W_key, W_value, &out_proj, saved, grad_output,
                                  "MultiHeadAttention::backward", &grad_x_before, &positions, projection_order);
}

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

}  // namespace attn
