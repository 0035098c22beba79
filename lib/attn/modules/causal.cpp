// CausalAttention and MultiHeadAttentionWrapper (causal.hpp): Raschka ch. 3.5.3 and 3.6.1.
#include "attn/modules/causal.hpp"

#include <cmath>
#include <limits>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/modules/train.hpp"

namespace attn {

// ------------------------------------------------------------------------- CausalAttention

void CausalAttention::validate(const AttentionConfig& c) {
    const std::string where = "CausalAttention";
    c.check(where, {ConfigField::d_in, ConfigField::d_out, ConfigField::context_length,
                    ConfigField::dropout, ConfigField::qkv_bias, ConfigField::backend});
    require_weight_size(where, "d_out", c.d_out, "d_in", c.d_in);
    require_mask_size(where, "context_length", c.context_length);
}

CausalAttention::CausalAttention(const CausalAttentionConfig& config, Generator& gen)
    : W_query((validate(config), config.d_in), config.d_out, config.qkv_bias, gen),
      W_key(config.d_in, config.d_out, config.qkv_bias, gen),
      W_value(config.d_in, config.d_out, config.qkv_bias, gen),
      dropout(config.dropout, config.backend),
      mask(attn::triu(attn::ones({config.context_length, config.context_length}), 1)) {}

Shape CausalAttention::check(const Tensor& x) const {
    const std::string where = "CausalAttention";
    // The widths most layers agree on: a replaced layer is the one named.
    const std::size_t in = agreed_width({width_of(W_query, true), width_of(W_key, true), width_of(W_value, true)});
    const std::size_t d = agreed_width({width_of(W_query), width_of(W_key), width_of(W_value)});
    check_linear(where, "W_query", W_query, in, d);
    check_linear(where, "W_key", W_key, in, d);
    check_linear(where, "W_value", W_value, in, d);
    const Shape s = check_tokens(where, x, in);
    check_dropout(where, dropout);
    return s;
}

SDPAOptions CausalAttention::options(const BufferMask& causal, Generator& gen) const {
    // keys.shape[-1]**0.5 is a Python float; dividing a float32 tensor by it rounds it to
    // float32 first, as std::sqrt of the float d_k does.
    SDPAOptions o = dropout_options(dropout, gen);
    o.scale = ScoreScale::divide_by(std::sqrt(static_cast<float>(d_out())));
    causal.apply(o);
    return o;
}

Tensor CausalAttention::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    // Checked before any work, so a bad input draws nothing from the generator.
    const BufferMask causal = read_buffer("CausalAttention", mask, s[1], 1.0f);
    const std::size_t d = d_out();  // one head of width d_out: [b, 1, T, d_out]
    const HeadsView queries = detail::project_heads(0, W_query, x, 1, d);
    const HeadsView keys = detail::project_heads(1, W_key, x, 1, d);
    const HeadsView values = detail::project_heads(2, W_value, x, 1, d);
    return detail::attend_project(queries, keys, values, nullptr, options(causal, gen));
}

const Tensor& CausalAttention::forward(const Tensor& x, AttentionSaved& saved, Generator& gen) const {
    const Shape s = check(x);
    saved.mask = read_buffer("CausalAttention", mask, s[1], 1.0f);
    const SDPAOptions o = options(saved.mask, gen);
    return detail::train_forward(W_query, W_key, W_value, nullptr, x, 1, d_out(), o.dropout_p, o, saved);
}

Tensor CausalAttention::backward(const AttentionSaved& saved, const Tensor& grad_output) {
    return detail::train_backward(W_query, W_key, W_value, nullptr, saved, grad_output,
                                  "CausalAttention::backward");
}

CausalAttention::Steps CausalAttention::forward_steps(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    const BufferMask causal = read_buffer("CausalAttention", mask, s[1], 1.0f);
    Steps st;
    st.queries = W_query(x);
    st.keys = W_key(x);
    st.values = W_value(x);
    // queries @ keys.transpose(1, 2): [b, T, d_out] x [b, d_out, T] -> [b, T, T], masked, then
    // softmax(attn_scores / sqrt(d_out)), dropout, @ values: the core's steps on b heads.
    const SDPASteps core = scaled_dot_product_attention_steps(st.queries, st.keys, st.values,
                                                              options(causal, gen));
    st.attn_scores = core.masked_attn_scores();
    st.attn_weights = core.attn_weights;
    st.dropped_weights = core.dropped_weights;
    st.context_vec = core.output;
    return st;
}

// ------------------------------------------------------------------------- wrapper

void MultiHeadAttentionWrapper::validate(const AttentionConfig& c) {
    const std::string where = "MultiHeadAttentionWrapper";
    // Raschka's wrapper: d_out is each head's width, so num_heads need not divide it.
    c.check(where,
            {ConfigField::d_in, ConfigField::d_out, ConfigField::context_length, ConfigField::dropout,
             ConfigField::num_heads, ConfigField::qkv_bias, ConfigField::backend},
            /*heads_split_d_out=*/false);
    require_weight_size(where, "d_out", c.d_out, "d_in", c.d_in);
    require_mask_size(where, "context_length", c.context_length);
}

MultiHeadAttentionWrapper::MultiHeadAttentionWrapper(const MultiHeadAttentionWrapperConfig& config,
                                                     Generator& gen) {
    validate(config);
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
    if (heads.empty())
        throw std::invalid_argument("MultiHeadAttentionWrapper: no heads (torch.cat of an empty list fails)");
    Steps st;
    for (const auto& head : heads) st.head_outputs.push_back(head(x, gen));
    st.context_vec = attn::cat(st.head_outputs, -1);
    return st;
}

Tensor MultiHeadAttentionWrapper::operator()(const Tensor& x, Generator& gen) const {
    return forward_steps(x, gen).context_vec;
}

}  // namespace attn
