#include "attn/modules/efficient.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <xtensor/xmanipulation.hpp>

#include "attn/core/functional.hpp"
#include "attn/modules/module.hpp"
#include "attn/modules/scratch.hpp"

namespace attn {

namespace {

std::size_t heads_of(const std::string& where, std::size_t d_out, std::size_t num_heads) {
    require_divisible(where, "d_out", d_out, "num_heads", num_heads);
    return d_out / num_heads;
}

// Raschka's `/ head_dim**0.5`: a Python float, rounded to float32 by the division.
ScoreScale divide_by_root(std::size_t head_dim) {
    return ScoreScale::divide_by(static_cast<float>(std::sqrt(static_cast<double>(head_dim))));
}

}  // namespace

// ------------------------------------------------------------------------- combined QKV

void MultiHeadAttentionCombinedQKVConfig::validate() const {
    const std::string where = "MultiHeadAttentionCombinedQKV";
    require_positive(where, "d_in", d_in);
    require_positive(where, "d_out", d_out);
    heads_of(where, d_out, num_heads);
    require_positive(where, "context_length", context_length);
}

MultiHeadAttentionCombinedQKV::MultiHeadAttentionCombinedQKV(
    const MultiHeadAttentionCombinedQKVConfig& config, Generator& gen)
    : num_heads((config.validate(), config.num_heads)),
      head_dim(config.d_out / config.num_heads),
      qkv(config.d_in, 3 * config.d_out, config.qkv_bias, gen),
      proj(config.d_out, config.d_out, true, gen),
      mask(attn::triu(attn::ones({config.context_length, config.context_length}), 1)),
      kernel(config.kernel) {}

MultiHeadAttentionCombinedQKV::MultiHeadAttentionCombinedQKV(nn::Linear qkv_, nn::Linear proj_,
                                                             std::size_t context_length,
                                                             std::size_t num_heads_,
                                                             AttentionKernel kernel_)
    : num_heads(num_heads_), head_dim(0), qkv(std::move(qkv_)), proj(std::move(proj_)),
      kernel(kernel_) {
    const std::size_t d_out = proj.out_features();
    check_same_shape("MultiHeadAttentionCombinedQKV (proj)", Shape{d_out, d_out},
                     shape_of(proj.weight));
    if (qkv.out_features() != 3 * d_out)
        throw_shape_error("MultiHeadAttentionCombinedQKV (qkv)",
                          "[" + std::to_string(3 * d_out) + ", d_in]", shape_of(qkv.weight));
    head_dim = heads_of("MultiHeadAttentionCombinedQKV", d_out, num_heads);
    require_positive("MultiHeadAttentionCombinedQKV", "context_length", context_length);
    mask = attn::triu(attn::ones({context_length, context_length}), 1);
}

Tensor MultiHeadAttentionCombinedQKV::operator()(const Tensor& x) const {
    const std::string where = "MultiHeadAttentionCombinedQKV";
    const Shape s = check_tokens(where, x, qkv.in_features());
    const std::size_t d = proj.out_features();
    check_heads(where, num_heads, head_dim, d);
    check_linear(where, "qkv", qkv, qkv.in_features(), 3 * d);
    check_output_linear(where, "proj", proj, d, d);
    BufferMask causal = read_buffer(where, mask, s[1], 1.0f);
    // Each of Raschka's variants is a setting of the core.
    SDPAOptions o;
    switch (kernel) {
        case AttentionKernel::matmul_softmax:
            o.scale = divide_by_root(head_dim);
            causal.apply(o);
            break;
        case AttentionKernel::sdpa_is_causal:
            o.is_causal = true;  // scale=None: * 1 / sqrt(hd)
            break;
        case AttentionKernel::sdpa_attn_mask:
            causal.is_causal = false;  // the explicit [T, T] mask, true = may attend
            causal.allow = causal_mask_for(where, mask, s[1]);
            for (std::size_t i = 0; i < causal.allow.size(); ++i) causal.allow.data()[i] = !causal.allow.data()[i];
            causal.apply(o);
            break;
        case AttentionKernel::tiled:
            o = {.is_causal = true,
                 .scale = ScoreScale::divide_by(std::sqrt(static_cast<float>(head_dim))),
                 .fully_masked_rows = FullyMaskedRows::zero,
                 .backend = SDPABackend::tiled};
            break;
        default:
            throw std::invalid_argument(where + ": kernel holds " + std::to_string(static_cast<int>(kernel)) +
                                        ", not an AttentionKernel");
    }
    // [b, T, 3 d_out] -> view(b, T, 3, H, hd).permute(2, 0, 3, 1, 4): q, k, v as heads, in place.
    const HeadsView q = detail::project_heads(0, qkv, x, num_heads, head_dim);
    const HeadsView k = HeadsView::split(q.data, s[0], s[1], 3 * d, num_heads, head_dim, d);
    const HeadsView v = HeadsView::split(q.data, s[0], s[1], 3 * d, num_heads, head_dim, 2 * d);
    return detail::attend_project(q, k, v, &proj, o);
}

// ------------------------------------------------------------------------- einsum

Tensor einsum_bnd_di(const Tensor& x, const Tensor& W) {
    const Shape sx = shape_of(x), sw = shape_of(W);
    if (sx.size() != 3 || sw.size() != 2 || sx[2] != sw[0])
        throw std::invalid_argument("einsum(\"bnd,di->bni\"): shapes " + shape_str(sx) + " and " +
                                    shape_str(sw) + " do not fit");
    const std::size_t rows = sx[0] * sx[1], D = sx[2], I = sw[1];
    check_allocation("einsum(\"bnd,di->bni\")", Shape{sx[0], sx[1], I});
    Tensor y = xt::zeros<float>(Shape{sx[0], sx[1], I});
    // Each output is the sum over d in order; the loop over i inside runs the I sums side
    // by side (the same additions in the same order, vectorised across outputs).
    for (std::size_t r = 0; r < rows; ++r) {
        float* yr = y.data() + r * I;
        for (std::size_t d = 0; d < D; ++d) {
            const float a = x.data()[r * D + d];
            const float* w = W.data() + d * I;
            for (std::size_t i = 0; i < I; ++i) yr[i] += a * w[i];
        }
    }
    return y;
}

MHAEinsum::MHAEinsum(Tensor Wq, Tensor Wk, Tensor Wv, std::optional<Tensor> bq,
                     std::optional<Tensor> bk, std::optional<Tensor> bv, nn::Linear out,
                     std::size_t context_length, std::size_t num_heads_)
    : num_heads(num_heads_), head_dim(0), W_query(std::move(Wq)), W_key(std::move(Wk)),
      W_value(std::move(Wv)), bias_q(std::move(bq)), bias_k(std::move(bk)),
      bias_v(std::move(bv)), out_proj(std::move(out)) {
    check_rank("MHAEinsum (W_query)", shape_of(W_query), 2);
    check_same_shape("MHAEinsum (W_key)", shape_of(W_query), shape_of(W_key));
    check_same_shape("MHAEinsum (W_value)", shape_of(W_query), shape_of(W_value));
    const std::size_t d_out = W_query.shape()[1];
    for (const auto* b : {&bias_q, &bias_k, &bias_v})
        if (*b) check_same_shape("MHAEinsum (bias)", Shape{d_out}, shape_of(**b));
    check_same_shape("MHAEinsum (out_proj)", Shape{d_out, d_out}, shape_of(out_proj.weight));
    head_dim = heads_of("MHAEinsum", d_out, num_heads);
    require_positive("MHAEinsum", "context_length", context_length);
    mask = attn::triu(attn::ones({context_length, context_length}), 1);
}

Tensor MHAEinsum::operator()(const Tensor& x) const {
    const std::string where = "MHAEinsum";
    const Shape w = shape_of(W_query);
    if (w.size() != 2) throw_shape_error(where + " (W_query)", "[d_in, d_out]", w);
    check_same_shape(where + " (W_key)", w, shape_of(W_key));
    check_same_shape(where + " (W_value)", w, shape_of(W_value));
    const std::size_t d_out = w[1];
    for (const auto* b : {&bias_q, &bias_k, &bias_v})
        if (*b) check_same_shape(where + " (bias)", Shape{d_out}, shape_of(**b));
    check_linear(where, "out_proj", out_proj, d_out, d_out);
    check_heads(where, num_heads, head_dim, d_out);
    const Shape s = check_tokens(where, x, w[0]);
    BufferMask causal = read_buffer(where, mask, s[1], 1.0f);
    auto project = [&](const Tensor& W, const std::optional<Tensor>& bias) {
        Tensor y = einsum_bnd_di(x, W);  // [b, T, d_out]
        if (bias) y += *bias;
        return y;
    };
    const Tensor Q = project(W_query, bias_q), K = project(W_key, bias_k), V = project(W_value, bias_v);
    SDPAOptions o{.scale = divide_by_root(head_dim)};
    causal.apply(o);
    const Tensor context = attend(HeadsView::split(Q, num_heads, head_dim),
                                  HeadsView::split(K, num_heads, head_dim),
                                  HeadsView::split(V, num_heads, head_dim), o);  // [b, T, d_out]
    return out_proj(context);
}

// ------------------------------------------------------------------------- maps

namespace {

// The three projections' biases side by side as one [3 d_out] bias (a missing one as zeros,
// which is what a layer without bias adds; a [1] one broadcast); none when no layer has one.
std::optional<Tensor> qkv_bias(const MultiHeadAttention& m) {
    if (!m.W_query.bias && !m.W_key.bias && !m.W_value.bias) return std::nullopt;
    return attn::cat({m.W_query.bias_vector(), m.W_key.bias_vector(), m.W_value.bias_vector()}, 0);
}

}  // namespace

MultiHeadAttentionCombinedQKV combine_qkv(const MultiHeadAttention& m, AttentionKernel kernel) {
    const std::optional<Tensor> bias = qkv_bias(m);
    nn::Linear qkv(attn::cat({m.W_query.weight, m.W_key.weight, m.W_value.weight}, 0), bias);
    return MultiHeadAttentionCombinedQKV(std::move(qkv), m.out_proj, m.context_length(),
                                         m.num_heads, kernel);
}

MHAEinsum to_einsum(const MultiHeadAttention& m) {
    // Each bias as [d_out] (a [1] one broadcast), or none.
    const auto bias = [](const nn::Linear& l) { return l.bias ? std::optional<Tensor>(l.bias_vector()) : std::nullopt; };
    return MHAEinsum(attn::T(m.W_query.weight), attn::T(m.W_key.weight), attn::T(m.W_value.weight),
                     bias(m.W_query), bias(m.W_key), bias(m.W_value), m.out_proj, m.context_length(),
                     m.num_heads);
}

MultiheadAttention to_torch_layout(const MultiHeadAttention& m) {
    std::optional<Tensor> bias = qkv_bias(m);
    if (!bias && m.out_proj.bias) bias = attn::zeros({3 * m.d_out()});
    return MultiheadAttention(attn::cat({m.W_query.weight, m.W_key.weight, m.W_value.weight}, 0),
                              bias, m.out_proj, m.num_heads);
}

}  // namespace attn
