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

MultiHeadAttentionWithSWA::MultiHeadAttentionWithSWA(const MultiHeadAttentionWithSWAConfig& c,
                                                     Generator& gen)
    : ProjectedAttention("MultiHeadAttentionWithSWA", c, {ConfigField::sliding_window_size}),
      sliding_window_size(c.sliding_window_size) {
    build_layers(c, gen);
}

Shape MultiHeadAttentionWithSWA::check(const Tensor& x) const {
    require_positive(type_name(), "sliding_window_size", sliding_window_size);
    return check_projections(x, num_heads);
}

SDPAOptions MultiHeadAttentionWithSWA::options(std::size_t query_start, std::size_t key_start,
                                               Generator& gen) const {
    // Raschka's mask: key hidden when diff = q_pos - k_pos is < 0 or >= W.
    SDPAOptions o = core_options(query_start, gen);
    o.window = sliding_window_size;
    o.key_start = key_start;
    return o;
}

Tensor MultiHeadAttentionWithSWA::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    check_positions(type_name(), 0, s[1], context_length);
    // [b, H, T, hd] each, one pass over x (detail::project_qkv).
    const auto [q, k, v] = detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_heads, head_dim);
    return detail::attend_project(q, k, v, &out_proj, options(0, 0, gen));  // [b, T, d_out]
}

KVCache MultiHeadAttentionWithSWA::make_cache() const {
    return KVCache::sliding_window(sliding_window_size);
}

Tensor MultiHeadAttentionWithSWA::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = type_name();
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
