#include "attn/modules/gqa.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {
long gqa_long(std::size_t n) { return static_cast<long>(n); }
}  // namespace

GroupedQueryAttention::GroupedQueryAttention(const GroupedQueryAttentionConfig& c, Generator& gen)
    : ProjectedAttention("GroupedQueryAttention", c,
                         {ConfigField::num_kv_groups, ConfigField::positions, ConfigField::rope_base,
                          ConfigField::rope_freq}),
      num_kv_heads(c.num_kv_groups),
      group_size(c.num_heads / c.num_kv_groups),
      positions(ModulePositions::of(type_name(), c, num_heads, head_dim)) {
    // His order: keys and values first.
    W_key = nn::Linear(c.d_in, num_kv_heads * head_dim, c.qkv_bias, gen);
    W_value = nn::Linear(c.d_in, num_kv_heads * head_dim, c.qkv_bias, gen);
    W_query = nn::Linear(c.d_in, c.d_out, c.qkv_bias, gen);
    out_proj = nn::Linear(c.d_out, c.d_out, false, gen);
}

Shape GroupedQueryAttention::check(const Tensor& x) const {
    std::size_t paired = 0;
    if (num_kv_heads == 0 || __builtin_mul_overflow(num_kv_heads, group_size, &paired) ||
        paired != num_heads)
        throw std::invalid_argument(type_name() + ": expected num_kv_heads * group_size = num_heads = " +
                                    std::to_string(num_heads) + ", got num_kv_heads = " +
                                    std::to_string(num_kv_heads) + ", group_size = " +
                                    std::to_string(group_size));
    return check_projections(x, num_kv_heads);
}

SDPAOptions GroupedQueryAttention::options(std::size_t query_start, Generator& gen) const {
    // Raschka's mask from positions (PR #697): key j hidden when its position is past the
    // query's; the cached keys start at position 0.
    SDPAOptions o = core_options(query_start, gen);
    positions.apply(o);  // ALiBi's slopes, if any
    return o;
}

Tensor GroupedQueryAttention::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    check_positions(type_name(), 0, s[1], context_length);
    // [b, T, H * hd] and [b, T, G * hd] seen as [b, H, T, hd] and [b, G, T, hd]: query head
    // h reads key/value head h / group_size, as repeat_interleave pairs them.
    const detail::QKVHeads qkv =
        detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_kv_heads, head_dim, &positions);
    return detail::attend_project(qkv.queries, qkv.keys, qkv.values, &out_proj, options(0, gen));
}

Tensor GroupedQueryAttention::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = type_name();
    check(x);
    const std::size_t start = cache.pos;
    // The new keys and values [b, G, T, hd] appended; the queries attend to every cached key.
    const HeadsView queries = detail::project_into_cache(where, cache, W_query, W_key, W_value, x,
                                                         num_heads, num_kv_heads, head_dim, context_length,
                                                         &positions);
    return detail::attend_project(queries, detail::held_heads(cache, cache.key), detail::held_heads(cache, cache.value),
                                  &out_proj, options(start, gen));
}

MultiHeadAttention expand_kv_groups(const GroupedQueryAttention& gqa) {
    // W_key's weight [G * hd, d_in] viewed as [G, hd, d_in]; each group's rows repeated.
    const auto expand = [&](const nn::Linear& l) {
        const long G = gqa_long(gqa.num_kv_heads), hd = gqa_long(gqa.head_dim);
        Tensor w = attn::view(l.weight, {G, hd, gqa_long(gqa.d_in())});
        w = attn::view(repeat_interleave(w, gqa.group_size, 0), {-1, gqa_long(gqa.d_in())});
        std::optional<Tensor> bias;
        if (l.bias)
            bias = attn::view(repeat_interleave(attn::view(l.bias_vector(), {G, hd}), gqa.group_size, 0), {-1});
        return nn::Linear(std::move(w), std::move(bias));
    };
    MultiHeadAttention m(gqa.W_query, expand(gqa.W_key), expand(gqa.W_value), gqa.out_proj,
                         gqa.context_length, gqa.num_heads, gqa.dropout.p, gqa.dropout.backend);
    m.train(gqa.dropout.training);
    m.positions = gqa.positions;
    return m;
}

}  // namespace attn
