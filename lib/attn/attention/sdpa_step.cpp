// The step backend of attn::scaled_dot_product_attention (sdpa.hpp): the computation written
// out as the notebooks write it, every intermediate a tensor, and its backward.
//
// Shapes: query [B, H, Tq, E], key [B, Hkv, Tk, E], value [B, Hkv, Tk, Ev]; g = H / Hkv.
//   1. keys, values repeated g times along the heads (repeat_interleave): [B, H, Tk, *]
//   2. attn_scores = query @ keys^T                                       [B, H, Tq, Tk]
//   3. masked_scores = attn_scores * scale (or / scale) + attn_bias (+ ALiBi), -inf where hidden
//   4. attn_weights = softmax(masked_scores) (masked_softmax: rows of -inf give 0)
//   5. dropped_weights = attn_weights * dropout multipliers
//   6. output = dropped_weights @ values                                  [B, H, Tq, Ev]
#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/attention/sdpa_problem.hpp"
#include "attn/core/functional.hpp"

namespace attn::detail {

namespace {

constexpr float step_neg_inf = -std::numeric_limits<float>::infinity();

// Keys or values [B, Hkv, T, *] for each of the H query heads (a copy when g > 1).
Tensor per_query_head(const HeadsView& x, std::size_t group) {
    const Tensor c = x.contiguous();
    return group == 1 ? c : attn::repeat_interleave(c, group, 1);
}

// dK or dV of the H query heads [B, H, T, *] summed over each group: [B, Hkv, T, *].
Tensor sum_groups(const Tensor& x, std::size_t group) {
    if (group == 1) return x;
    const Shape s = shape_of(x);
    Tensor out = attn::zeros({s[0], s[1] / group, s[2], s[3]});
    const std::size_t block = s[2] * s[3];
    if (block == 0) return out;
    for (std::size_t bh = 0; bh < s[0] * s[1]; ++bh) {
        const float* src = x.data() + bh * block;
        float* dst = out.data() + (bh / group) * block;
        for (std::size_t i = 0; i < block; ++i) dst[i] += src[i];
    }
    return out;
}

}  // namespace

SDPASteps step_attention(const SDPAProblem& p, const Tensor& noise) {
    const std::size_t g = p.group();
    const Tensor queries = p.q.contiguous();
    const Tensor keys = per_query_head(p.k, g), values = per_query_head(p.v, g);
    SDPASteps st;
    st.attn_scores = attn::matmul(queries, attn::transpose(keys, 2, 3));
    st.hidden = xt::empty<bool>(Shape{p.B, p.H, p.Tq, p.Tk});
    st.scaled_scores = st.attn_scores;
    st.masked_scores = st.attn_scores;
    bool* hidden = st.hidden.data();
    float* scaled = st.scaled_scores.data();
    float* s = st.masked_scores.data();
    const std::size_t B = st.hidden.size() == 0 ? 0 : p.B;  // no 2^40 walks over empty rows
    const bool additive = p.options->mask_op == MaskOp::additive;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < p.H; ++h)
            for (std::size_t i = 0; i < p.Tq; ++i)
                for (std::size_t j = 0; j < p.Tk; ++j, ++hidden, ++scaled, ++s) {
                    *hidden = !p.band_visible(i, j) || (p.allow.data && !p.allow.at(b, h, i, j));
                    float x = p.divide ? *scaled / p.scale : *scaled * p.scale;
                    const float unbiased = x;
                    bool has = false;
                    const float add = p.score_bias(b, h, i, j, has);  // attn_bias, ALiBi, or their sum
                    if (has) x = x + add;
                    *scaled = x;
                    // masked_fill_(mask, -inf), or + (-inf): NaN where the product is +inf or NaN
                    *s = !*hidden ? x : additive ? unbiased + step_neg_inf : step_neg_inf;
                }
    st.attn_weights = p.options->fully_masked_rows == FullyMaskedRows::zero
                          ? attn::masked_softmax(st.masked_scores)
                          : attn::softmax(st.masked_scores, -1);
    st.dropped_weights = noise.dimension() != 0 ? Tensor(st.attn_weights * noise) : st.attn_weights;
    st.output = attn::matmul(st.dropped_weights, values);
    return st;
}

Tensor step_logsumexp(const SDPAProblem& p, const SDPASteps& st) {
    Tensor lse = attn::zeros({p.B, p.H, p.Tq});
    const std::size_t rows = p.B * p.H * p.Tq;
    for (std::size_t r = 0; r < rows; ++r) {  // m + log(sum exp(s - m)), in order
        const float* s = st.masked_scores.data() + r * p.Tk;
        float m = step_neg_inf, l = 0.0f;
        for (std::size_t j = 0; j < p.Tk; ++j) m = std::max(m, s[j]);
        if (m != step_neg_inf)
            for (std::size_t j = 0; j < p.Tk; ++j) l += std::exp(s[j] - m);
        lse.data()[r] = l == 0.0f ? step_neg_inf : m + std::log(l);
    }
    return lse;
}

void step_forward(const SDPAProblem& p, const OutLayout& out, const Tensor& noise, float* logsumexp) {
    const SDPASteps st = step_attention(p, noise);
    if (logsumexp) {
        const Tensor lse = step_logsumexp(p, st);
        std::copy_n(lse.data(), lse.size(), logsumexp);
    }
    const HeadsView o = HeadsView::of(st.output);  // [B, H, Tq, Ev] into the caller's layout
    for (std::size_t b = 0; b < p.B; ++b)
        for (std::size_t h = 0; h < p.H; ++h)
            for (std::size_t t = 0; t < p.Tq; ++t)
                std::copy_n(o.data + b * o.stride_b + h * o.stride_h + t * o.stride_t, p.Ev,
                            out.head(p, b, h) + t * out.ld(p));
}

void step_backward(const SDPAProblem& p, const BackwardArgs& a) {
    const Tensor grad_output = a.grad_output.contiguous();
    const Tensor& noise = *a.noise;
    // The weights again, without drawing: the saved multipliers stand for the dropout.
    const SDPASteps st = step_attention(p, Tensor());
    const std::size_t g = p.group();
    const Tensor& P = st.attn_weights;  // [B, H, Tq, Tk]
    const Tensor queries = p.q.contiguous();
    const Tensor keys = per_query_head(p.k, g), values = per_query_head(p.v, g);
    const Tensor dropped = noise.dimension() != 0 ? Tensor(P * noise) : P;
    // dV = dropped^T dO; dP = (dO V^T) * noise
    const Tensor grad_values = attn::matmul(attn::transpose(dropped, 2, 3), grad_output);
    Tensor dP = attn::matmul(grad_output, attn::transpose(values, 2, 3));
    if (noise.dimension() != 0) dP = Tensor(dP * noise);
    // dS = (dP - rowsum(dP * P)) * P: the softmax's Jacobian-vector product, row by row, in
    // PyTorch's order (attn::softmax_backward); then the masked_fill's backward (0 where a key
    // is hidden, whatever the softmax gave: a row of NaN weights stops here; an additive mask
    // passes the gradient on) and the scaling's (DivBackward0 or MulBackward0).
    Tensor dS = attn::softmax_backward(dP, P);
    float* ds = dS.data();
    const bool* hidden = st.hidden.data();
    const bool masked_fill = p.options->mask_op == MaskOp::masked_fill;
    for (std::size_t i = 0; i < dS.size(); ++i)
        ds[i] = hidden[i] && masked_fill ? 0.0f : p.divide ? ds[i] / p.scale : ds[i] * p.scale;
    // [B, H, Tq, E], [B, Hkv, Tk, E], [B, Hkv, Tk, Ev] into the caller's views.
    const auto copy = [](const Tensor& t, const GradHeads& to) {
        if (t.size() == 0) return;  // (no walk over 2^40 empty rows)
        const Shape s = shape_of(t);
        const float* src = t.data();
        for (std::size_t b = 0; b < s[0]; ++b)
            for (std::size_t h = 0; h < s[1]; ++h)
                for (std::size_t i = 0; i < s[2]; ++i, src += s[3])
                    std::copy_n(src, s[3], to.data + b * to.stride_b + h * to.stride_h + i * to.stride_t);
    };
    copy(attn::matmul(dS, keys), a.dq);
    copy(sum_groups(attn::matmul(attn::transpose(dS, 2, 3), queries), g), a.dk);
    copy(sum_groups(grad_values, g), a.dv);
}

}  // namespace attn::detail
