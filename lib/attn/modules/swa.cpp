// MultiHeadAttentionWithSWA (swa.hpp): Raschka's ch04/06_swa module on the attention core.
#include "attn/modules/swa.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

void MultiHeadAttentionWithSWA::validate(const AttentionConfig& c) {
    const std::string where = "MultiHeadAttentionWithSWA";
    c.check(where, {ConfigField::d_in, ConfigField::d_out, ConfigField::context_length,
                    ConfigField::dropout, ConfigField::num_heads, ConfigField::qkv_bias,
                    ConfigField::sliding_window_size, ConfigField::backend});
}

MultiHeadAttentionWithSWA::MultiHeadAttentionWithSWA(const MultiHeadAttentionWithSWAConfig& c,
                                                     Generator& gen)
    : num_heads((validate(c), c.num_heads)),
      head_dim(c.d_out / c.num_heads),
      context_length(c.context_length),
      sliding_window_size(c.sliding_window_size),
      W_query(c.d_in, c.d_out, c.qkv_bias, gen),
      W_key(c.d_in, c.d_out, c.qkv_bias, gen),
      W_value(c.d_in, c.d_out, c.qkv_bias, gen),
      out_proj(c.d_out, c.d_out, true, gen),
      dropout(c.dropout, c.backend) {}

Shape MultiHeadAttentionWithSWA::check(const Tensor& x) const {
    const std::string where = "MultiHeadAttentionWithSWA";
    // The widths most fields agree on: a replaced layer (or head field) is the one named.
    const std::size_t in = agreed_width({width_of(W_query, true), width_of(W_key, true), width_of(W_value, true)});
    const std::size_t d = agreed_width({width_of(W_query), heads_width(num_heads, head_dim), width_of(W_key),
                                        width_of(W_value), width_of(out_proj, true)});
    check_linear(where, "W_query", W_query, in, d);
    check_heads(where, num_heads, head_dim, d);
    require_positive(where, "sliding_window_size", sliding_window_size);
    check_linear(where, "W_key", W_key, in, d);
    check_linear(where, "W_value", W_value, in, d);
    check_output_linear(where, "out_proj", out_proj, d, d);
    const Shape s = check_tokens(where, x, in);
    check_dropout(where, dropout);
    return s;
}

SDPAOptions MultiHeadAttentionWithSWA::options(std::size_t query_start, std::size_t key_start,
                                               Generator& gen) const {
    // Raschka's mask: key hidden when diff = q_pos - k_pos is < 0 or >= W.
    SDPAOptions o = causal_options(head_dim, query_start, dropout, gen);
    o.window = sliding_window_size;
    o.key_start = key_start;
    return o;
}

Tensor MultiHeadAttentionWithSWA::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    check_positions("MultiHeadAttentionWithSWA", 0, s[1], context_length);
    const HeadsView q = detail::project_heads(0, W_query, x, num_heads, head_dim);  // [b, H, T, hd]
    const HeadsView k = detail::project_heads(1, W_key, x, num_heads, head_dim);
    const HeadsView v = detail::project_heads(2, W_value, x, num_heads, head_dim);
    return detail::attend_project(q, k, v, &out_proj, options(0, 0, gen));  // [b, T, d_out]
}

KVCache MultiHeadAttentionWithSWA::make_cache() const {
    return KVCache::sliding_window(sliding_window_size);
}

Tensor MultiHeadAttentionWithSWA::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = "MultiHeadAttentionWithSWA";
    const Shape s = check(x);
    const std::size_t b = s[0], T = s[1], P = cache.pos, W = sliding_window_size;
    if (cache.window != W)
        throw std::invalid_argument(where + ": expected a sliding-window KVCache of window " +
                                    std::to_string(W) + " (make_cache()), got window = " +
                                    std::to_string(cache.window));
    cache.validate(where + " (cache)");
    if (cache.key.dimension() != 0 && shape_of(cache.key) != Shape{b, num_heads, W, head_dim})
        throw_shape_error(where + " (cache.key)",
                          "a ring [" + std::to_string(b) + ", " + std::to_string(num_heads) + ", " +
                              std::to_string(W) + ", " + std::to_string(head_dim) + "]",
                          shape_of(cache.key));
    check_positions(where, P, T, context_length);
    const HeadsView q = detail::project_heads(0, W_query, x, num_heads, head_dim);         // [b, H, T, hd]
    const Tensor k_new = detail::project_heads(1, W_key, x, num_heads, head_dim).contiguous();
    const Tensor v_new = detail::project_heads(2, W_value, x, num_heads, head_dim).contiguous();
    // The chunk's first query (position P) sees back to P - (W - 1): keep that many older keys.
    const std::size_t older = std::min(P, W - 1);
    const Tensor k = older ? attn::cat({cache.recent_keys(older), k_new}, 2) : k_new;  // [b, H, older + T, hd]
    const Tensor v = older ? attn::cat({cache.recent_values(older), v_new}, 2) : v_new;
    Tensor out = detail::attend_project(q, HeadsView::of(k), HeadsView::of(v), &out_proj,
                                        options(P, P - older, gen));  // [b, T, d_out]
    cache.append(k_new, v_new);
    return out;
}

}  // namespace attn
