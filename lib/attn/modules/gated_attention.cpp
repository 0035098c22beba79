// Gated attention (gated_attention.hpp): the attention core, then the sigmoid gate.
#include "attn/modules/gated_attention.hpp"

#include <cmath>
#include <stdexcept>

#include "attn/core/elementwise.hpp"
#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {
const char* const kModule = "GatedMultiHeadAttention";
}  // namespace

void GatedMultiHeadAttention::validate(const AttentionConfig& c) {
    const std::string where = kModule;
    c.check(where, {ConfigField::d_in, ConfigField::d_out, ConfigField::context_length,
                    ConfigField::dropout, ConfigField::num_heads, ConfigField::qkv_bias,
                    ConfigField::backend});
    require_weight_size(where, "d_out", c.d_out, "d_in", c.d_in);
    require_weight_size(where, "d_out", c.d_out, "d_out", c.d_out);
}

GatedMultiHeadAttention::GatedMultiHeadAttention(const GatedMultiHeadAttentionConfig& c, Generator& gen)
    : num_heads((validate(c), c.num_heads)),
      head_dim(c.d_out / c.num_heads),
      context_length(c.context_length),
      W_query(c.d_in, c.d_out, c.qkv_bias, gen),
      W_gate(c.d_in, c.d_out, c.qkv_bias, gen),
      W_key(c.d_in, c.d_out, c.qkv_bias, gen),
      W_value(c.d_in, c.d_out, c.qkv_bias, gen),
      out_proj(c.d_out, c.d_out, true, gen),
      dropout(c.dropout, c.backend) {}

Shape GatedMultiHeadAttention::check(const Tensor& x) const {
    const std::string where = kModule;
    // The widths most fields agree on: a replaced layer (or head field) is the one named.
    const std::size_t in = agreed_width({width_of(W_query, true), width_of(W_gate, true), width_of(W_key, true),
                                         width_of(W_value, true)});
    const std::size_t d = agreed_width({width_of(W_query), heads_width(num_heads, head_dim), width_of(W_gate),
                                        width_of(W_key), width_of(W_value), width_of(out_proj, true)});
    check_linear(where, "W_query", W_query, in, d);
    check_heads(where, num_heads, head_dim, d);
    check_linear(where, "W_gate", W_gate, in, d);
    check_linear(where, "W_key", W_key, in, d);
    check_linear(where, "W_value", W_value, in, d);
    check_output_linear(where, "out_proj", out_proj, d, d);
    const Shape s = check_tokens(where, x, in);
    check_dropout(where, dropout);
    return s;
}

Tensor GatedMultiHeadAttention::gated(const Tensor& x, const HeadsView& q, const HeadsView& k,
                                      const HeadsView& v, std::size_t start, Generator& gen) const {
    const std::size_t rows = q.B * q.T, d = d_out();
    const std::size_t n = checked_mul(rows, d, "GatedMultiHeadAttention (b * T * d_out)");
    float* context = detail::scratch(7, n);
    attend(q, k, v, context, causal_options(head_dim, start, dropout, gen));
    float* gate = detail::scratch(3, n);
    W_gate.forward_into(x.data(), rows, gate);
    sigmoid_into(gate, n, gate);
    for (std::size_t i = 0; i < n; ++i) context[i] = context[i] * gate[i];  // context * sigmoid(gate)
    check_allocation("GatedMultiHeadAttention (output)", Shape{q.B, q.T, d});
    Tensor y = Tensor::from_shape({q.B, q.T, d});
    out_proj.forward_into(context, rows, y.data());
    return y;
}

Tensor GatedMultiHeadAttention::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    check_positions(kModule, 0, s[1], context_length);
    const HeadsView queries = detail::project_heads(0, W_query, x, num_heads, head_dim);
    const HeadsView keys = detail::project_heads(1, W_key, x, num_heads, head_dim);
    const HeadsView values = detail::project_heads(2, W_value, x, num_heads, head_dim);
    return gated(x, queries, keys, values, 0, gen);
}

Tensor GatedMultiHeadAttention::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = kModule;
    check(x);
    const std::size_t start = cache.pos;
    const HeadsView queries = detail::project_into_cache(where, cache, W_query, W_key, W_value, x, num_heads,
                                                         num_heads, head_dim, context_length);
    return gated(x, queries, HeadsView::of(cache.key), HeadsView::of(cache.value), start, gen);
}

}  // namespace attn
