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

long to_long(std::size_t n) { return static_cast<long>(n); }

std::size_t heads_of(const std::string& where, std::size_t d_out, std::size_t num_heads) {
    require_divisible(where, "d_out", d_out, "num_heads", num_heads);
    return d_out / num_heads;
}

Tensor rows(const Tensor& w, std::size_t begin, std::size_t end) {
    return attn::slice(w, 0, to_long(begin), to_long(end));
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

// ------------------------------------------------------------------------- nn.MultiheadAttention

MultiheadAttention::MultiheadAttention(Tensor w, std::optional<Tensor> b, nn::Linear out,
                                       std::size_t num_heads_)
    : embed_dim(0), num_heads(num_heads_), in_proj_weight(std::move(w)),
      in_proj_bias(std::move(b)), out_proj(std::move(out)) {
    embed_dim = out_proj.out_features();
    const std::size_t E = embed_dim;
    check_same_shape("MultiheadAttention (out_proj)", Shape{E, E}, shape_of(out_proj.weight));
    check_rank("MultiheadAttention (in_proj_weight)", shape_of(in_proj_weight), 2);
    check_same_shape("MultiheadAttention (in_proj_weight)", Shape{3 * E, in_proj_weight.shape()[1]},
                     shape_of(in_proj_weight));
    if (in_proj_bias)
        check_same_shape("MultiheadAttention (in_proj_bias)", Shape{3 * E}, shape_of(*in_proj_bias));
    heads_of("MultiheadAttention", E, num_heads);
}

MultiheadAttentionOutput MultiheadAttention::operator()(const Tensor& query, const Tensor& key,
                                                        const Tensor& value,
                                                        const std::optional<BoolTensor>& attn_mask,
                                                        bool need_weights) const {
    const std::string where = "MultiheadAttention";
    const std::size_t E = embed_dim;
    check_linear(where, "out_proj", out_proj, E, E);
    const Shape sw = shape_of(in_proj_weight);
    if (sw.size() != 2 || sw[0] != 3 * E) throw_shape_error(where + " (in_proj_weight)", "[3E, d_in]", sw);
    if (in_proj_bias) check_same_shape(where + " (in_proj_bias)", Shape{3 * E}, shape_of(*in_proj_bias));
    const std::size_t hd = heads_of(where, E, num_heads), d_in = sw[1];
    const Shape sq = check_tokens(where + " (query)", query, d_in);
    const Shape sk = check_tokens(where + " (key)", key, d_in);
    check_same_shape(where + " (value)", sk, shape_of(value));
    if (sk[0] != sq[0]) throw_shape_error(where + " (key)", "[" + std::to_string(sq[0]) + ", S, E]", sk);
    BoolTensor allow;  // nn.MultiheadAttention's attn_mask is true where a key may NOT be seen
    if (attn_mask) {
        // [L, S] for every head, or [b * num_heads, L, S]: PyTorch views the latter as
        // [b, num_heads, L, S] (head-major within each batch element).
        const Shape sm = shape_of(*attn_mask), per_head{checked_mul(sq[0], num_heads, where + " (b * num_heads)"), sq[1], sk[1]};
        if (sm != Shape{sq[1], sk[1]} && sm != per_head)
            throw_shape_error(where + " (attn_mask)",
                              shape_str(Shape{sq[1], sk[1]}) + " or " + shape_str(per_head) + " ([b * num_heads, L, S])", sm);
        allow = !(*attn_mask);
        if (sm.size() == 3) allow.reshape({sq[0], num_heads, sq[1], sk[1]});
    }
    auto in_proj = [&](const Tensor& x, std::size_t block) {  // rows block*E .. (block+1)*E-1
        std::optional<Tensor> bias;
        if (in_proj_bias) bias = rows(*in_proj_bias, block * E, (block + 1) * E);
        return nn::Linear(rows(in_proj_weight, block * E, (block + 1) * E), std::move(bias))(x);
    };
    const Tensor k = in_proj(key, 1), v = in_proj(value, 2);  // [b, S, E]
    MultiheadAttentionOutput out;
    SDPAOptions o{.attn_mask = attn_mask ? &allow : nullptr};
    Tensor context;  // [b, L, E], heads merged
    if (need_weights) {
        // q_scaled = q * math.sqrt(1.0 / float(E_head)) before the product (the module's math
        // path), then the core with the scores as they are: * 1.0f changes nothing.
        const float scale = static_cast<float>(std::sqrt(1.0 / static_cast<double>(hd)));
        const Tensor q_scaled = Tensor(in_proj(query, 0) * scale);
        o.scale = ScoreScale::multiply_by(1.0f);
        const SDPASteps st = scaled_dot_product_attention_steps(
            HeadsView::split(q_scaled, num_heads, hd).contiguous(),
            HeadsView::split(k, num_heads, hd).contiguous(),
            HeadsView::split(v, num_heads, hd).contiguous(), o);
        const long b = to_long(sq[0]), L = to_long(sq[1]);
        context = attn::view(attn::transpose(st.output, 1, 2), {b, L, to_long(E)});
        out.attn_output_weights = Tensor(attn::sum(st.attn_weights, 1) / static_cast<float>(num_heads));  // mean(dim=1)
    } else {
        context = attend(HeadsView::split(in_proj(query, 0), num_heads, hd),
                         HeadsView::split(k, num_heads, hd), HeadsView::split(v, num_heads, hd), o);
    }
    out.attn_output = out_proj(context);
    return out;
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
