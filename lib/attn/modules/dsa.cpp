// DeepSeek sparse attention (dsa.hpp): the lightning indexer, the top-k selection with a stated
// tie rule, and the module, whose attention is the core's with the selection as its mask.
#include "attn/modules/dsa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"
#include "attn/print/torch.hpp"

namespace attn {

namespace {

const char* const kDsaModule = "MultiHeadAttentionWithDSA";

// torch.topk's order (largest): NaN above every number, then by value.
bool torch_greater(float x, float y) { return (std::isnan(x) && !std::isnan(y)) || x > y; }

void check_ties(const std::string& where, IndexTies ties) {
    if (ties != IndexTies::earliest && ties != IndexTies::torch_topk)
        throw std::invalid_argument(where + ": ties is not an IndexTies value (" +
                                    std::to_string(static_cast<int>(ties)) + ")");
}

// One query's selection: `row` holds its S scores, `visible` keys may be seen; `kept` gets
// true for the keys kept.
void select_row(const float* row, std::size_t S, std::size_t visible, std::size_t topk,
                IndexTies ties, bool* kept) {
    std::fill_n(kept, S, false);
    if (ties == IndexTies::earliest) {
        const std::size_t k = std::min(topk, visible);
        if (k == visible) {
            std::fill_n(kept, visible, true);
            return;
        }
        thread_local std::vector<std::size_t> order;
        order.resize(visible);
        std::iota(order.begin(), order.end(), std::size_t{0});
        // A total order (score, then position), so the k first are one set whatever the
        // algorithm: the earliest of equal scores first.
        std::nth_element(order.begin(), order.begin() + static_cast<long>(k - 1), order.end(),
                         [&](std::size_t a, std::size_t b) {
                             if (torch_greater(row[a], row[b])) return true;
                             if (torch_greater(row[b], row[a])) return false;
                             return a < b;
                         });
        for (std::size_t i = 0; i < k; ++i) kept[order[i]] = true;
        return;
    }
    // His index_scores + causal_float, then topk (TopKImpl.h, topk_impl_loop, largest=True):
    // the same libstdc++ algorithms on the same (value, index) queue pick the same keys.
    const std::size_t k = std::min(topk, S);
    using elem_t = std::pair<float, std::int64_t>;
    thread_local std::vector<elem_t> queue;
    queue.resize(S);
    const float minus_inf = -std::numeric_limits<float>::infinity();
    for (std::size_t s = 0; s < S; ++s)
        queue[s] = {s < visible ? row[s] : row[s] + minus_inf, static_cast<std::int64_t>(s)};
    const auto comp = [](const elem_t& x, const elem_t& y) { return torch_greater(x.first, y.first); };
    if (k * 64 <= S) {
        std::partial_sort(queue.begin(), queue.begin() + static_cast<long>(k), queue.end(), comp);
    } else {
        std::nth_element(queue.begin(), queue.begin() + static_cast<long>(k - 1), queue.end(), comp);
        std::sort(queue.begin(), queue.begin() + static_cast<long>(k - 1), comp);  // sorted=True
    }
    for (std::size_t i = 0; i < k; ++i) {
        const auto s = static_cast<std::size_t>(queue[i].second);
        if (s < visible) kept[s] = true;  // beyond the causal mask: -inf in his combined mask
    }
}

// The selection of b * T queries at positions start.. over S keys, into `kept` [b, T, S].
void select_into(const float* scores, std::size_t b, std::size_t T, std::size_t S, std::size_t topk,
                 std::size_t start, IndexTies ties, bool* kept) {
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t t = 0; t < T; ++t) {
            const std::size_t pos = checked_add(start, t, "topk_selection (query position)");
            const std::size_t visible = pos >= S ? S : pos + 1;
            const std::size_t row = (i * T + t) * S;
            select_row(scores + row, S, visible, topk, ties, kept + row);
        }
}

}  // namespace

BoolTensor topk_selection(const Tensor& index_scores, std::size_t topk, std::size_t query_start,
                          IndexTies ties) {
    const Shape s = shape_of(index_scores);
    if (s.size() != 3) throw_shape_error("topk_selection (index_scores)", "[b, T, S]", s);
    if (topk == 0) throw std::invalid_argument("topk_selection: expected topk > 0, got 0");
    check_ties("topk_selection", ties);
    BoolTensor kept = BoolTensor::from_shape(s);
    select_into(index_scores.data(), s[0], s[1], s[2], topk, query_start, ties, kept.data());
    return kept;
}

// ---------------------------------------------------------------- LightningIndexer

namespace {
std::size_t index_width(const std::string& where, std::size_t heads, std::size_t dim) {
    return checked_mul(heads, dim, where + " (index_n_heads * index_head_dim)");
}
}  // namespace

LightningIndexer::LightningIndexer(std::size_t d_model, std::size_t n_heads, std::size_t head_dim,
                                   Generator& gen)
    : index_n_heads((require_positive("LightningIndexer", "d_model", d_model),
                     require_positive("LightningIndexer", "index_n_heads", n_heads),
                     require_positive("LightningIndexer", "index_head_dim", head_dim),
                     require_weight_size("LightningIndexer", "index_n_heads * index_head_dim",
                                         index_width("LightningIndexer", n_heads, head_dim), "d_model", d_model),
                     n_heads)),
      index_head_dim(head_dim),
      scale(static_cast<float>(std::pow(static_cast<double>(head_dim), -0.5))),
      W_q_index(d_model, n_heads * head_dim, false, gen),
      W_k_index(d_model, head_dim, false, gen),
      W_weights(d_model, n_heads, false, gen) {}

void LightningIndexer::check(const std::string& where, std::size_t d_model_) const {
    require_positive(where, "index_n_heads", index_n_heads);
    require_positive(where, "index_head_dim", index_head_dim);
    check_linear(where, "W_q_index", W_q_index, d_model_, index_width(where, index_n_heads, index_head_dim));
    check_linear(where, "W_k_index", W_k_index, d_model_, index_head_dim);
    check_linear(where, "W_weights", W_weights, d_model_, index_n_heads);
    if (!std::isfinite(scale))
        throw std::invalid_argument(where + ": expected a finite scale, got " + std::to_string(scale));
}

Tensor LightningIndexer::keys(const Tensor& x_ctx) const {
    check("LightningIndexer", d_model());
    check_tokens("LightningIndexer (x_ctx)", x_ctx, d_model());
    return W_k_index(x_ctx);
}

void LightningIndexer::scores_into(const float* x, std::size_t b, std::size_t T, const float* index_keys,
                                   std::size_t S, float* out) const {
    const std::size_t H = index_n_heads, D = index_head_dim, rows = b * T;
    float* q = detail::scratch(3, checked_mul(rows, H * D, "LightningIndexer (queries)"));
    W_q_index.forward_into(x, rows, q);
    Tensor w = Tensor::from_shape({rows, H});  // softmax over the index heads (small)
    W_weights.forward_into(x, rows, w.data());
    w = attn::softmax(w, -1);
    // raw[t, h, s] = q[t, h] . k[s]: einsum's batched product, in order over d (the gemm of
    // the reference BLAS); then * scale, ReLU, and the weighted sum over h in order from 0.
    float* raw = detail::scratch(6, checked_mul(T * H, S, "LightningIndexer (raw scores)"));
    for (std::size_t i = 0; i < b; ++i) {
        gemm_rowmajor(q + i * T * H * D, index_keys + i * S * D, raw, T * H, D, S, true);
        for (std::size_t t = 0; t < T; ++t) {
            float* o = out + (i * T + t) * S;
            std::fill_n(o, S, 0.0f);
            for (std::size_t h = 0; h < H; ++h) {
                const float wh = w.data()[(i * T + t) * H + h];
                const float* r = raw + (t * H + h) * S;
                for (std::size_t s = 0; s < S; ++s) {
                    const float scaled = r[s] * scale;
                    o[s] += wh * (scaled < 0.0f ? 0.0f : scaled);
                }
            }
        }
    }
}

Tensor LightningIndexer::scores(const Tensor& x, const Tensor& index_keys) const {
    check("LightningIndexer", d_model());
    const Shape s = check_tokens("LightningIndexer (x)", x, d_model());
    const Shape k = shape_of(index_keys);
    if (k.size() != 3 || k[0] != s[0] || k[2] != index_head_dim)
        throw_shape_error("LightningIndexer (index_keys)",
                          "[" + std::to_string(s[0]) + ", S, " + std::to_string(index_head_dim) + "]", k);
    check_allocation("LightningIndexer (scores)", Shape{s[0], s[1], k[1]});
    Tensor out = Tensor::from_shape({s[0], s[1], k[1]});
    scores_into(x.data(), s[0], s[1], index_keys.data(), k[1], out.data());
    return out;
}

BoolTensor LightningIndexer::operator()(const Tensor& x, const Tensor& x_ctx, std::size_t topk,
                                        std::size_t query_start, IndexTies ties) const {
    return topk_selection(scores(x, keys(x_ctx)), topk, query_start, ties);
}

// ---------------------------------------------------------------- the cache

void DSACache::validate(const std::string& where) const {
    kv.validate(where + " (kv)");
    index.validate(where + " (index)");
    if (kv.window != 0 || index.window != 0)
        throw std::invalid_argument(where + ": expected full caches, got a sliding-window one");
    if (kv.pos != index.pos)
        throw std::invalid_argument(where + ": kv holds " + std::to_string(kv.pos) +
                                    " tokens but index holds " + std::to_string(index.pos));
}

std::size_t DSACache::length() const {
    validate();
    return kv.pos;
}

std::size_t DSACache::bytes() const {
    validate();
    return kv.bytes() + index.bytes();
}

void DSACache::reset() {
    kv.reset();
    index.reset();
}

// ---------------------------------------------------------------- the module

std::size_t MultiHeadAttentionWithDSA::checked_topk(const AttentionConfig& c) {
    require_weight_size(kDsaModule, "index_n_heads * index_head_dim",
                        index_width(kDsaModule, c.index_n_heads, c.index_head_dim), "d_in", c.d_in);
    return c.topk;
}

MultiHeadAttentionWithDSA::MultiHeadAttentionWithDSA(const MultiHeadAttentionWithDSAConfig& c, Generator& gen)
    : ProjectedAttention(kDsaModule, c,
                         {ConfigField::index_n_heads, ConfigField::index_head_dim, ConfigField::topk, ConfigField::ties}),
      topk(checked_topk(c)),
      ties(c.ties),
      // The indexer is drawn after the attention's layers, as his __init__ builds it.
      indexer(c.d_in, c.index_n_heads, c.index_head_dim, build_layers(c, gen)) {}

Shape MultiHeadAttentionWithDSA::check(const Tensor& x) const {
    const Shape s = check_projections(x, num_heads);
    require_positive(type_name(), "topk", topk);
    check_ties(type_name(), ties);
    indexer.check(type_name() + " (indexer)", d_in());
    return s;
}

Tensor MultiHeadAttentionWithDSA::attend_selected(const Tensor& x, const HeadsView& queries,
                                                  const HeadsView& keys, const HeadsView& values,
                                                  const float* index_keys, std::size_t S,
                                                  std::size_t start, Generator& gen) const {
    const std::size_t b = queries.B, T = queries.T;
    float* scores = detail::scratch(5, checked_mul(b * T, S, "MultiHeadAttentionWithDSA (index scores)"));
    indexer.scores_into(x.data(), b, T, index_keys, S, scores);
    // The selection as the core's attn_mask [b, 1, T, S] (broadcast over the heads), kept
    // between forwards of one shape.
    thread_local BoolTensor kept;
    const Shape mask_shape{b, 1, T, S};
    if (shape_of(kept) != mask_shape) {
        check_allocation("MultiHeadAttentionWithDSA (selection)", mask_shape, sizeof(bool));
        kept = BoolTensor::from_shape(mask_shape);
    }
    select_into(scores, b, T, S, topk, start, ties, kept.data());
    SDPAOptions options = core_options(start, gen);
    options.attn_mask = &kept;
    return detail::attend_project(queries, keys, values, &out_proj, options);
}

Tensor MultiHeadAttentionWithDSA::operator()(const Tensor& x, Generator& gen) const {
    const Shape s = check(x);
    check_positions(type_name(), 0, s[1], context_length);
    // [b, H, T, hd] each, one pass over x (detail::project_qkv).
    const auto [queries, keys, values] = detail::project_qkv(W_query, W_key, W_value, x, num_heads, num_heads, head_dim);
    const std::size_t rows = s[0] * s[1];
    float* index_keys = detail::scratch(4, checked_mul(rows, indexer.index_head_dim, "MultiHeadAttentionWithDSA (index keys)"));
    indexer.W_k_index.forward_into(x.data(), rows, index_keys);
    return attend_selected(x, queries, keys, values, index_keys, s[1], 0, gen);
}

Tensor MultiHeadAttentionWithDSA::forward(const Tensor& x, DSACache& cache, Generator& gen) const {
    const std::string where = type_name();
    const Shape s = check(x);
    cache.validate(where + " (cache)");
    const std::size_t b = s[0], T = s[1], start = cache.kv.pos;
    if (start > 0 && shape_of(cache.kv.key) != Shape{b, num_heads, start, head_dim})
        throw_shape_error(where + " (cache.kv.key)", shape_str(Shape{b, num_heads, start, head_dim}),
                          shape_of(cache.kv.key));
    if (start > 0 && shape_of(cache.index.key) != Shape{b, start, indexer.index_head_dim})
        throw_shape_error(where + " (cache.index.key)", shape_str(Shape{b, start, indexer.index_head_dim}),
                          shape_of(cache.index.key));
    check_positions(where, start, T, context_length);
    const HeadsView queries = detail::project_heads(0, W_query, x, num_heads, head_dim);
    cache.kv.append(detail::project_heads(1, W_key, x, num_heads, head_dim).contiguous(),
                    detail::project_heads(2, W_value, x, num_heads, head_dim).contiguous());
    cache.index.append(indexer.W_k_index(x), Tensor::from_shape({b, T, 0}));
    return attend_selected(x, queries, HeadsView::of(cache.kv.key), HeadsView::of(cache.kv.value),
                           cache.index.key.data(), start + T, start, gen);
}

MultiHeadAttentionWithDSA::Selection MultiHeadAttentionWithDSA::select(const Tensor& x) const {
    const Shape s = check(x);
    check_positions(type_name(), 0, s[1], context_length);
    Selection out;
    out.index_scores = indexer.scores(x, indexer.W_k_index(x));
    out.selected = topk_selection(out.index_scores, topk, 0, ties);
    return out;
}

}  // namespace attn
