#include "attn/modules/scratch.hpp"

#include "attn/modules/module.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/kernels/gemm.hpp"

namespace attn::detail {

namespace {

// layers[r](x) for `rows` rows of `x [rows, in_features]` into ys[r] (count <= 3), each with
// the bits of nn::Linear::forward_into, in its arithmetic (the calling thread's). On the
// reference BLAS, one fast::gemm_multi: the blocks of x packed once for every layer, one team
// of threads, each bias added to the finished sums in the same pass (no serial loop over the
// result).
void linears_into(const nn::Linear* const* layers, float* const* ys, std::size_t count,
                  const float* x, std::size_t rows) {
#if ATTN_BLAS_REFERENCE
    std::array<fast::GemmRight, 3> rights;
    const std::size_t in = layers[0]->in_features();
    for (std::size_t r = 0; r < count; ++r) {
        const nn::Linear& l = *layers[r];
        l.check_parameters();
        if (l.in_features() != in)
            throw std::invalid_argument("linears_into: expected in_features " + std::to_string(in) +
                                        " for every layer, got " + std::to_string(l.in_features()));
        const std::size_t out = l.out_features();
        // A [1] bias (broadcast) is added after the products: the same sums, then + b.
        rights.at(r) = {l.weight.data(), in, /*trans_b=*/true, out, ys[r], out,
                        l.bias && l.bias->size() == out ? l.bias->data() : nullptr};
    }
    fast::gemm_multi(rows, in, x, in, false, rights.data(), count, 0, Arithmetic::automatic);
    for (std::size_t r = 0; r < count; ++r) {
        const nn::Linear& l = *layers[r];
        const std::size_t out = l.out_features();
        if (!l.bias || l.bias->size() == out) continue;
        const float b = l.bias->data()[0];
        for (std::size_t i = 0; i < rows * out; ++i) ys[r][i] += b;
    }
#else
    for (std::size_t r = 0; r < count; ++r) layers[r]->forward_into(x, rows, ys[r]);
#endif
}

// B * T of x [B, T, in_features], checked against the layer.
std::size_t linear_token_rows(const nn::Linear& layer, const Shape& s) {
    if (s.size() != 3 || s[2] != layer.in_features())
        throw_shape_error("project_heads (x)", "[B, T, " + std::to_string(layer.in_features()) + "]", s);
    return checked_mul(s[0], s[1], "project_heads (B * T)");
}

}  // namespace

float* scratch(std::size_t slot, std::size_t floats) {
    thread_local std::array<std::vector<float>, 8> buffers;
    std::vector<float>& b = buffers.at(slot);
    // At least one float: an empty vector's data() may be null, and a buffer of 0 floats (a
    // batch or a sequence of 0 tokens) is still a buffer, not a missing one.
    if (b.size() < std::max<std::size_t>(floats, 1)) b.resize(std::max<std::size_t>(floats, 1));
    return b.data();
}

HeadsView project_heads(std::size_t slot, const nn::Linear& layer, const Tensor& x,
                        std::size_t num_heads, std::size_t head_dim) {
    const Shape s = shape_of(x);
    const std::size_t out = layer.out_features(), rows = linear_token_rows(layer, s);
    float* y = scratch(slot, checked_mul(rows, out, "project_heads (B * T * out_features)"));
    layer.forward_into(x.data(), rows, y);
    return HeadsView::split(y, s[0], s[1], out, num_heads, head_dim);
}

QKVHeads project_qkv(const nn::Linear& W_query, const nn::Linear& W_key,
                     const nn::Linear& W_value, const Tensor& x, std::size_t num_heads,
                     std::size_t num_kv_heads, std::size_t head_dim, const ModulePositions* positions) {
    const Shape s = shape_of(x);
    const nn::Linear* layers[3] = {&W_query, &W_key, &W_value};
    float* ys[3];
    std::size_t rows = 0;
    for (std::size_t r = 0; r < 3; ++r) {
        rows = linear_token_rows(*layers[r], s);
        ys[r] = scratch(r, checked_mul(rows, layers[r]->out_features(),
                                       "project_heads (B * T * out_features)"));
    }
    linears_into(layers, ys, 3, x.data(), rows);
    if (positions) {  // RoPE: queries and keys rotated at positions 0 .. T - 1
        positions->rotate(ys[0], s[0], s[1], W_query.out_features(), num_heads, head_dim, 0);
        positions->rotate(ys[1], s[0], s[1], W_key.out_features(), num_kv_heads, head_dim, 0);
    }
    return {HeadsView::split(ys[0], s[0], s[1], W_query.out_features(), num_heads, head_dim),
            HeadsView::split(ys[1], s[0], s[1], W_key.out_features(), num_kv_heads, head_dim),
            HeadsView::split(ys[2], s[0], s[1], W_value.out_features(), num_kv_heads, head_dim)};
}

Tensor attend_project(const HeadsView& q, const HeadsView& k, const HeadsView& v,
                      const nn::Linear* out_proj, const SDPAOptions& options) {
    if (!out_proj) {
        const std::size_t width = checked_mul(q.H, v.hd, "attend (H * dv)");
        Tensor y = Tensor::from_shape({q.B, q.T, width});
        attend(q, k, v, y.data(), options);
        return y;
    }
    Tensor y;
    attend_project_into(q, k, v, out_proj, options, y);
    return y;
}

void attend_project_into(const HeadsView& q, const HeadsView& k, const HeadsView& v,
                         const nn::Linear* out_proj, const SDPAOptions& options, Tensor& y) {
    if (!out_proj) throw std::invalid_argument("attend_project_into: no out_proj to write into y");
    const std::size_t rows = checked_mul(q.B, q.T, "attend (B * Tq)");
    const std::size_t width = checked_mul(q.H, v.hd, "attend (H * dv)");
    if (out_proj->in_features() != width)
        throw std::invalid_argument("attend: the merged heads are " + std::to_string(width) +
                                    " wide, but out_proj takes " + std::to_string(out_proj->in_features()));
    check_allocation("attend (output)", Shape{q.B, q.T, out_proj->out_features()});
    float* merged = scratch(7, checked_mul(rows, width, "attend (B * Tq * H * dv)"));
    attend(q, k, v, merged, options);
    float* const out = sized(y, {q.B, q.T, out_proj->out_features()}, "attend (output)");
    linears_into(&out_proj, &out, 1, merged, rows);
}

HeadsView project_into_cache(const std::string& where, KVCache& cache, const nn::Linear& W_query,
                             const nn::Linear& W_key, const nn::Linear& W_value, const Tensor& x,
                             std::size_t num_heads, std::size_t num_kv_heads, std::size_t head_dim,
                             std::size_t context_length, const ModulePositions* positions) {
    const Shape s = shape_of(x);
    check_full_cache(where, cache, s[0], num_kv_heads, head_dim, s[1], context_length);
    const HeadsView queries = project_heads(0, W_query, x, num_heads, head_dim);
    const HeadsView keys = project_heads(1, W_key, x, num_kv_heads, head_dim);
    if (positions) {  // RoPE: the new tokens at their own positions, before their keys are cached
        // (the views look at this thread's scratch, which is ours to write)
        positions->rotate(const_cast<float*>(queries.data), s[0], s[1], W_query.out_features(), num_heads,
                          head_dim, cache.pos);
        positions->rotate(const_cast<float*>(keys.data), s[0], s[1], W_key.out_features(), num_kv_heads,
                          head_dim, cache.pos);
    }
    cache.append(keys.contiguous(), project_heads(2, W_value, x, num_kv_heads, head_dim).contiguous());
    return queries;
}

HeadsView held_heads(const KVCache& cache, const Tensor& t) {
    HeadsView v = HeadsView::of(t);
    if (v.T < cache.pos)
        throw std::invalid_argument("held_heads: the cache's tensor holds " + std::to_string(v.T) + " tokens, pos = " +
                                    std::to_string(cache.pos));
    v.T = cache.pos;
    return v;
}

}  // namespace attn::detail
