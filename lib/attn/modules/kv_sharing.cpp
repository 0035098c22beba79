// MultiHeadAttentionWithKVSharing (kv_sharing.hpp): Raschka's ch04/10_kv-sharing module on the
// attention core; producers and consumers share the one KVCache.
#include "attn/modules/kv_sharing.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {

std::string heads_shape(std::size_t b, std::size_t H, const std::string& S, std::size_t hd) {
    // Built by appending (GCC 12 warns falsely on a literal + std::string&&).
    std::string text = "[";
    text.append(std::to_string(b)).append(", ").append(std::to_string(H)).append(", ");
    return text.append(S).append(", ").append(std::to_string(hd)).append("]");
}

}  // namespace

MultiHeadAttentionWithKVSharing::MultiHeadAttentionWithKVSharing(
    const MultiHeadAttentionWithKVSharingConfig& c, Generator& gen)
    : ProjectedAttention("MultiHeadAttentionWithKVSharing", c) {
    build_layers(c, gen);
}

Tensor MultiHeadAttentionWithKVSharing::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check_projections(x, num_heads, true);
    check_positions(type_name(), 0, s[1], context_length);
    // [b, H, T, hd] each, one pass over x (detail::project_qkv).
    const auto [q, k, v] = detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_heads, head_dim);
    return detail::attend_project(q, k, v, &out_proj, core_options(0, gen));  // [b, T, d_out]
}

Tensor MultiHeadAttentionWithKVSharing::forward(const Tensor& x, KVCache& cache, Generator& gen) const {
    const std::string where = type_name();
    check_projections(x, num_heads, true);
    const std::size_t start = cache.pos;
    const HeadsView q = detail::project_into_cache(where, cache, W_query, W_key, W_value, x, num_heads,
                                                   num_heads, head_dim, context_length);
    return detail::attend_project(q, detail::held_heads(cache, cache.key), detail::held_heads(cache, cache.value), &out_proj,
                                  core_options(start, gen));
}

Tensor MultiHeadAttentionWithKVSharing::forward_shared(const Tensor& x, const KVCache& shared_kv,
                                                       Generator& gen) const {
    const std::string where = "MultiHeadAttentionWithKVSharing (consumer)";
    const Shape s = check_projections(x, num_heads, false);
    const std::size_t b = s[0], T = s[1], S = shared_kv.pos;
    if (shared_kv.window != 0)
        throw std::invalid_argument(where + ": expected a producer's full KVCache, got a sliding-window one");
    shared_kv.validate(where + " (shared_kv)");
    if (S < T)
        throw std::invalid_argument(where + ": the " + std::to_string(T) + " tokens of x must be the last of " +
                                    "those shared_kv holds, but it holds " + std::to_string(S));
    for (const auto& [name, t] : {std::pair{"shared_kv.key", &shared_kv.key}, {"shared_kv.value", &shared_kv.value}})
        if (shape_of(*t) != Shape{b, num_heads, S, head_dim})
            throw_shape_error(where + " (" + name + ")", heads_shape(b, num_heads, std::to_string(S), head_dim),
                              shape_of(*t));
    check_positions(where, S - T, T, context_length);
    const HeadsView q = detail::project_heads(0, W_query, x, num_heads, head_dim);
    return detail::attend_project(q, HeadsView::of(shared_kv.key), HeadsView::of(shared_kv.value), &out_proj,
                                  core_options(S - T, gen));
}

KVSharingOutput MultiHeadAttentionWithKVSharing::forward_with_kv(const Tensor& x, const KVCache* shared_kv,
                                                                 Generator& gen) const {
    if (shared_kv != nullptr) return {forward_shared(x, *shared_kv, gen), std::nullopt};
    KVCache produced;  // his new_shared_kv = (keys, values) of this call alone
    Tensor context_vec = forward(x, produced, gen);
    return {std::move(context_vec), std::move(produced)};
}

Tensor forward_kv_sharing(const std::vector<MultiHeadAttentionWithKVSharing>& layers,
                          std::size_t n_kv_producing_layers, const Tensor& x,
                          std::vector<KVCache>& caches, Generator& gen) {
    if (n_kv_producing_layers == 0 || n_kv_producing_layers > layers.size())
        throw std::invalid_argument("forward_kv_sharing: n_kv_producing_layers must be between 1 and n_layers = " +
                                    std::to_string(layers.size()) + ", got " +
                                    std::to_string(n_kv_producing_layers));
    if (caches.empty()) caches.resize(n_kv_producing_layers);
    if (caches.size() != n_kv_producing_layers)
        throw std::invalid_argument("forward_kv_sharing: expected one cache per producer, " +
                                    std::to_string(n_kv_producing_layers) + ", got " +
                                    std::to_string(caches.size()));
    Tensor h = x;
    for (std::size_t i = 0; i < layers.size(); ++i)
        h = i < n_kv_producing_layers ? layers[i].forward(h, caches[i], gen)
                                      : layers[i].forward_shared(h, caches.back(), gen);
    return h;
}

}  // namespace attn
