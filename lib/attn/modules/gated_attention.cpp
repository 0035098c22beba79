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

GatedMultiHeadAttention::GatedMultiHeadAttention(const GatedMultiHeadAttentionConfig& c, Generator& gen)
    : ProjectedAttention("GatedMultiHeadAttention", c) {
    // His order: the gate between the queries and the keys.
    W_query = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_gate = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_key = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    W_value = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    out_proj = nn::Linear(c.d_out, c.d_out, true, gen);
}

Tensor GatedMultiHeadAttention::gated(const Tensor& x, const HeadsView& q, const HeadsView& k,
                                      const HeadsView& v, std::size_t start, Generator& gen) const {
    const std::size_t rows = q.B * q.T, d = d_out();
    const std::size_t n = checked_mul(rows, d, "GatedMultiHeadAttention (b * T * d_out)");
    float* context = detail::scratch(7, n);
    attend(q, k, v, context, core_options(start, gen));
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
    check_positions(type_name(), 0, s[1], context_length);
    // [b, H, T, hd] each, one pass over x (detail::project_qkv).
    const auto [queries, keys, values] = detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_heads, head_dim);
    return gated(x, queries, keys, values, 0, gen);
}

Tensor GatedMultiHeadAttention::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = type_name();
    check(x);
    const std::size_t start = cache.pos;
    const HeadsView queries = detail::project_into_cache(where, cache, W_query, W_key, W_value, x, num_heads,
                                                         num_heads, head_dim, context_length);
    return gated(x, queries, detail::held_heads(cache, cache.key), detail::held_heads(cache, cache.value), start, gen);
}

}  // namespace attn
