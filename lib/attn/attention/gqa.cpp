#include "attn/attention/gqa.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attn/attention/attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/attention/heads_common.hpp"

namespace attn {

using detail::to_long;

namespace {

Tensor repeat_impl(const std::string& where, const Tensor& x, std::size_t repeats, long dim,
                   bool interleave) {
    if (repeats == 0) throw std::invalid_argument(where + ": expected repeats > 0, got 0");
    const std::size_t d = wrap_dim(where, dim, x.dimension());
    const std::size_t n = x.shape()[d];
    std::vector<Tensor> parts;
    if (interleave) {
        for (std::size_t i = 0; i < n; ++i) {
            const Tensor one = attn::slice(x, to_long(d), to_long(i), to_long(i + 1));
            for (std::size_t r = 0; r < repeats; ++r) parts.push_back(one);
        }
    } else {
        for (std::size_t r = 0; r < repeats; ++r) parts.push_back(x);
    }
    if (parts.empty()) return x;
    return attn::cat(parts, to_long(d));
}

// true where the key lies in the query's future: q_pos < k_pos (Raschka's mask since PR #697)
BoolTensor future_mask(std::size_t q_start, std::size_t Tq, std::size_t Tk) {
    BoolTensor m = xt::zeros<bool>(std::vector<std::size_t>{Tq, Tk});
    for (std::size_t i = 0; i < Tq; ++i)
        for (std::size_t j = 0; j < Tk; ++j) m(i, j) = q_start + i < j;
    return m;
}

}  // namespace

Tensor repeat_interleave(const Tensor& x, std::size_t repeats, long dim) {
    return repeat_impl("repeat_interleave", x, repeats, dim, true);
}

Tensor repeat_along(const Tensor& x, std::size_t repeats, long dim) {
    return repeat_impl("repeat", x, repeats, dim, false);
}

void GroupedQueryAttentionConfig::validate() const {
    const std::string where = "GroupedQueryAttention";
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    require_positive(where, "num_heads", num_heads);
    require_positive(where, "num_kv_groups", num_kv_groups);
    require_positive(where, "context_length", context_length);
    require_divisible(where, "d_out", d_out, "num_heads", num_heads);
    require_divisible(where, "num_heads", num_heads, "num_kv_groups", num_kv_groups);
    require_probability(where, "dropout", dropout);
}

GroupedQueryAttention::GroupedQueryAttention(const GroupedQueryAttentionConfig& c, Generator& gen)
    : num_heads((c.validate(), c.num_heads)),
      num_kv_groups(c.num_kv_groups),
      group_size(c.num_heads / c.num_kv_groups),
      head_dim(c.d_out / c.num_heads),
      context_length(c.context_length),
      W_key(c.d_in, c.num_kv_groups * (c.d_out / c.num_heads), c.qkv_bias, gen),
      W_value(c.d_in, c.num_kv_groups * (c.d_out / c.num_heads), c.qkv_bias, gen),
      W_query(c.d_in, c.d_out, c.qkv_bias, gen),
      out_proj(c.d_out, c.d_out, false, gen),
      dropout(c.dropout, c.backend) {}

Tensor GroupedQueryAttention::attend(const Tensor& x, const Tensor* past_k, const Tensor* past_v,
                                     std::size_t start, Tensor* new_k, Tensor* new_v,
                                     Generator& gen) const {
    const Shape s = detail::check_tokens("GroupedQueryAttention", x, d_in());
    const std::size_t b = s[0], T = s[1];
    if (past_k && past_k->shape()[0] != b)
        throw_shape_error("GroupedQueryAttention (cache)",
                          "a cache of batch size " + std::to_string(b), shape_of(*past_k));
    detail::check_positions("GroupedQueryAttention", start, T, context_length);
    const Tensor queries = detail::split_heads(W_query(x), b, T, num_heads, head_dim);   // [b, H, T, hd]
    Tensor keys = detail::split_heads(W_key(x), b, T, num_kv_groups, head_dim);          // [b, G, T, hd]
    Tensor values = detail::split_heads(W_value(x), b, T, num_kv_groups, head_dim);      // [b, G, T, hd]
    if (past_k) {
        keys = attn::cat({*past_k, keys}, 2);  // [b, G, start + T, hd]
        values = attn::cat({*past_v, values}, 2);
    }
    const std::size_t Tk = keys.shape()[2];
    // Each key/value head serves group_size consecutive query heads: [b, G, Tk, hd] -> [b, H, Tk, hd]
    const Tensor keys_h = repeat_interleave(keys, group_size, 1);
    const Tensor values_h = repeat_interleave(values, group_size, 1);
    const Tensor context = detail::attend_heads(queries, keys_h, values_h,
                                                future_mask(start, T, Tk), dropout, gen);
    if (new_k) *new_k = std::move(keys);
    if (new_v) *new_v = std::move(values);
    return out_proj(context);  // [b, T, d_out]
}

Tensor GroupedQueryAttention::operator()(const Tensor& x, Generator& gen) const {
    return attend(x, nullptr, nullptr, 0, nullptr, nullptr, gen);
}

Tensor GroupedQueryAttention::forward(const Tensor& x, GroupedKVCache& cache, Generator& gen) const {
    const bool empty = cache.pos == 0;
    Tensor k, v;
    Tensor out = attend(x, empty ? nullptr : &cache.key, empty ? nullptr : &cache.value,
                        cache.pos, &k, &v, gen);
    cache.key = std::move(k);
    cache.value = std::move(v);
    cache.pos += x.shape()[1];
    return out;
}

MultiHeadAttention expand_kv_groups(const GroupedQueryAttention& gqa) {
    // W_key's weight [G * hd, d_in] viewed as [G, hd, d_in]; each group's rows repeated.
    const auto expand = [&](const nn::Linear& l) {
        const long G = to_long(gqa.num_kv_groups), hd = to_long(gqa.head_dim);
        Tensor w = attn::view(l.weight, {G, hd, to_long(gqa.d_in())});
        w = attn::view(repeat_interleave(w, gqa.group_size, 0), {-1, to_long(gqa.d_in())});
        std::optional<Tensor> bias;
        if (l.bias)
            bias = attn::view(repeat_interleave(attn::view(*l.bias, {G, hd}), gqa.group_size, 0), {-1});
        return nn::Linear(std::move(w), std::move(bias));
    };
    MultiHeadAttention m(gqa.W_query, expand(gqa.W_key), expand(gqa.W_value), gqa.out_proj,
                         gqa.context_length, gqa.num_heads, gqa.dropout.p, gqa.dropout.backend);
    m.train(gqa.dropout.training);
    return m;
}

// ---------------------------------------------------------------- memory estimator

std::size_t dtype_bytes(const std::string& dtype) {
    if (dtype == "fp32") return 4;
    if (dtype == "bf16" || dtype == "fp16") return 2;
    if (dtype == "fp8" || dtype == "int8") return 1;
    throw std::invalid_argument("dtype_bytes: expected fp32, bf16, fp16, fp8 or int8, got " + dtype);
}

std::size_t kv_bytes_per_layer(std::size_t batch, std::size_t tokens, std::size_t head_dim,
                               std::size_t n_kv_heads, std::size_t bytes_per_elem) {
    return batch * tokens * head_dim * n_kv_heads * 2 * bytes_per_elem;
}

std::pair<std::size_t, std::size_t> distribute_layers(std::size_t n_layers, std::size_t a,
                                                      std::size_t b) {
    if (a + b == 0) throw std::invalid_argument("distribute_layers: expected a + b > 0, got 0:0");
    const std::size_t block = a + b, blocks = n_layers / block, rem = n_layers % block;
    return {blocks * a + std::min(a, rem), blocks * b + (rem > a ? rem - a : 0)};
}

void KVMemoryConfig::validate() const {
    const std::string where = "KVMemoryConfig";
    require_positive(where, "batch", batch);
    require_positive(where, "context_length", context_length);
    require_positive(where, "emb_dim", emb_dim);
    require_positive(where, "n_heads", n_heads);
    require_positive(where, "n_kv_heads", n_kv_heads);
    require_positive(where, "n_layers", n_layers);
    require_positive(where, "bytes_per_elem", bytes_per_elem);
    require_divisible(where, "n_heads", n_heads, "n_kv_heads", n_kv_heads);
    if (swa_a + swa_b == 0) throw std::invalid_argument(where + ": expected swa_a + swa_b > 0, got 0:0");
}

std::size_t kv_cache_total_bytes(const KVMemoryConfig& c) {
    c.validate();
    const std::size_t head_dim = (c.emb_dim + c.n_heads - 1) / c.n_heads;  // math.ceil
    const auto [swa, full] = c.sliding_window_size == 0
                                 ? std::pair<std::size_t, std::size_t>{0, c.n_layers}
                                 : distribute_layers(c.n_layers, c.swa_a, c.swa_b);
    const std::size_t eff_W = std::min(c.context_length, c.sliding_window_size);
    return swa * kv_bytes_per_layer(c.batch, eff_W, head_dim, c.n_kv_heads, c.bytes_per_elem) +
           full * kv_bytes_per_layer(c.batch, c.context_length, head_dim, c.n_kv_heads,
                                     c.bytes_per_elem);
}

}  // namespace attn
