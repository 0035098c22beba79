#include "attn/attention/swa.hpp"

#include <stdexcept>

#include <xtensor/xview.hpp>

#include "attn/attention/attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/attention/heads_common.hpp"

namespace attn {

using detail::to_long;

BoolTensor sliding_window_mask(std::size_t q_start, std::size_t Tq, std::size_t k_start,
                               std::size_t Tk, std::size_t window) {
    require_positive("sliding_window_mask", "window", window);
    BoolTensor m = xt::zeros<bool>(std::vector<std::size_t>{Tq, Tk});
    for (std::size_t i = 0; i < Tq; ++i)
        for (std::size_t j = 0; j < Tk; ++j) {
            const long diff = to_long(q_start + i) - to_long(k_start + j);
            m(i, j) = diff < 0 || diff >= to_long(window);
        }
    return m;
}

void MultiHeadAttentionWithSWAConfig::validate() const {
    const std::string where = "MultiHeadAttentionWithSWA";
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    require_positive(where, "num_heads", num_heads);
    require_positive(where, "context_length", context_length);
    require_positive(where, "sliding_window_size", sliding_window_size);
    require_divisible(where, "d_out", d_out, "num_heads", num_heads);
    require_probability(where, "dropout", dropout);
}

// ---------------------------------------------------------------- ring buffer

RingKVCache::RingKVCache(std::size_t b, std::size_t H, std::size_t W, std::size_t hd)
    : window(W) {
    const std::string where = "RingKVCache";
    require_positive(where, "batch", b);
    require_positive(where, "num_heads", H);
    require_positive(where, "window", W);
    require_positive(where, "head_dim", hd);
    key = attn::zeros({b, H, W, hd});
    value = attn::zeros({b, H, W, hd});
}

namespace {

// The n most recent entries of a ring [b, H, W, hd] whose next position is pos, oldest first.
Tensor recent(const Tensor& ring, std::size_t window, std::size_t pos, std::size_t n) {
    if (n > pos || n > window)
        throw std::invalid_argument("RingKVCache: asked for " + std::to_string(n) +
                                    " recent tokens, holds " + std::to_string(pos < window ? pos : window));
    const std::size_t first = (pos - n) % window;  // slot of the oldest wanted token
    if (first + n <= window) return attn::slice(ring, 2, to_long(first), to_long(first + n));
    return attn::cat({attn::slice(ring, 2, to_long(first), to_long(window)),
                      attn::slice(ring, 2, 0, to_long(first + n - window))}, 2);
}

}  // namespace

Tensor RingKVCache::recent_keys(std::size_t n) const { return recent(key, window, pos, n); }
Tensor RingKVCache::recent_values(std::size_t n) const { return recent(value, window, pos, n); }

void RingKVCache::append(const Tensor& keys, const Tensor& values) {
    const Shape s = shape_of(keys), ring = shape_of(key);
    if (s.size() != 4 || s[0] != ring[0] || s[1] != ring[1] || s[3] != ring[3])
        throw_shape_error("RingKVCache::append", "[" + std::to_string(ring[0]) + ", " +
                          std::to_string(ring[1]) + ", T, " + std::to_string(ring[3]) + "]", s);
    check_same_shape("RingKVCache::append (values)", s, shape_of(values));
    const std::size_t T = s[2];
    const std::size_t keep = T < window ? T : window;  // older ones would be overwritten anyway
    for (std::size_t t = T - keep; t < T; ++t) {
        const std::size_t slot = (pos + t) % window;
        xt::view(key, xt::all(), xt::all(), slot, xt::all()) =
            xt::view(keys, xt::all(), xt::all(), t, xt::all());
        xt::view(value, xt::all(), xt::all(), slot, xt::all()) =
            xt::view(values, xt::all(), xt::all(), t, xt::all());
    }
    pos += T;
}

// ---------------------------------------------------------------- module

MultiHeadAttentionWithSWA::MultiHeadAttentionWithSWA(const MultiHeadAttentionWithSWAConfig& c,
                                                     Generator& gen)
    : num_heads((c.validate(), c.num_heads)),
      head_dim(c.d_out / c.num_heads),
      context_length(c.context_length),
      sliding_window_size(c.sliding_window_size),
      W_query(c.d_in, c.d_out, c.qkv_bias, gen),
      W_key(c.d_in, c.d_out, c.qkv_bias, gen),
      W_value(c.d_in, c.d_out, c.qkv_bias, gen),
      out_proj(c.d_out, c.d_out, true, gen),
      dropout(c.dropout, c.backend) {}

Tensor MultiHeadAttentionWithSWA::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = detail::check_tokens("MultiHeadAttentionWithSWA", x, d_in());
    const std::size_t b = s[0], T = s[1];
    detail::check_positions("MultiHeadAttentionWithSWA", 0, T, context_length);
    const Tensor q = detail::split_heads(W_query(x), b, T, num_heads, head_dim);  // [b, H, T, hd]
    const Tensor k = detail::split_heads(W_key(x), b, T, num_heads, head_dim);    // [b, H, T, hd]
    const Tensor v = detail::split_heads(W_value(x), b, T, num_heads, head_dim);  // [b, H, T, hd]
    const BoolTensor masked = sliding_window_mask(0, T, 0, T, sliding_window_size);
    return out_proj(detail::attend_heads(q, k, v, masked, dropout, gen));  // [b, T, d_out]
}

RingKVCache MultiHeadAttentionWithSWA::make_cache(std::size_t batch) const {
    return RingKVCache(batch, num_heads, sliding_window_size, head_dim);
}

Tensor MultiHeadAttentionWithSWA::forward(const Tensor& x, RingKVCache& cache, Generator& gen) const {
    const Shape s = detail::check_tokens("MultiHeadAttentionWithSWA", x, d_in());
    const std::size_t b = s[0], T = s[1];
    const Shape ring = shape_of(cache.key);
    if (ring != Shape{b, num_heads, sliding_window_size, head_dim})
        throw_shape_error("MultiHeadAttentionWithSWA (cache)",
                          "a ring [" + std::to_string(b) + ", " + std::to_string(num_heads) + ", " +
                              std::to_string(sliding_window_size) + ", " + std::to_string(head_dim) + "]",
                          ring);
    const std::size_t P = cache.pos;
    detail::check_positions("MultiHeadAttentionWithSWA", P, T, context_length);
    const Tensor q = detail::split_heads(W_query(x), b, T, num_heads, head_dim);      // [b, H, T, hd]
    const Tensor k_new = detail::split_heads(W_key(x), b, T, num_heads, head_dim);    // [b, H, T, hd]
    const Tensor v_new = detail::split_heads(W_value(x), b, T, num_heads, head_dim);  // [b, H, T, hd]
    // The chunk's first query (position P) sees back to P - (W - 1): keep that many older keys.
    const std::size_t older = std::min(P, sliding_window_size - 1);
    const Tensor k = older ? attn::cat({cache.recent_keys(older), k_new}, 2) : k_new;  // [b, H, older + T, hd]
    const Tensor v = older ? attn::cat({cache.recent_values(older), v_new}, 2) : v_new;
    const BoolTensor masked = sliding_window_mask(P, T, P - older, older + T, sliding_window_size);
    const Tensor out = out_proj(detail::attend_heads(q, k, v, masked, dropout, gen));  // [b, T, d_out]
    cache.append(k_new, v_new);
    return out;
}

}  // namespace attn
