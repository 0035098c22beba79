#include "attn/attention/flash.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include <sleef.h>

#include "attn/core/functional.hpp"
#include "attn/attention/padding.hpp"
#include "attn/attention/attention.hpp"

// sleef.h declares the FMA variant only when compiled with FMA enabled (see functional.cpp).
extern "C" float Sleef_expf1_u10purecfma(float);

namespace attn::flash {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// exp as attn::softmax takes it (SLEEF's expf_u10, PyTorch's vectorised CPU exp).
float exp_u10(float x) {
    static const bool has_fma = __builtin_cpu_supports("fma");
    return has_fma ? Sleef_expf1_u10purecfma(x) : Sleef_expf1_u10purec(x);
}

long to_long(std::size_t n) { return static_cast<long>(n); }

// Runs f(row, n) on every row along the last dimension of a copy of x.
template <class F>
Tensor map_rows(const char* where, const Tensor& x, F f) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error(where, "at least 1-D", s);
    Tensor y = x;
    const std::size_t n = s.back();
    const std::size_t rows = n ? y.size() / n : 0;
    for (std::size_t r = 0; r < rows; ++r) f(y.data() + r * n, n);
    return y;
}

struct Dims {
    std::size_t B, H, Tq, Tk, d, dv;
};

Dims check_heads(const char* where, const Tensor& q, const Tensor& k, const Tensor& v,
                 const std::optional<LongTensor>& mask) {
    const Shape sq = shape_of(q), sk = shape_of(k), sv = shape_of(v);
    const std::string w = where;
    if (sq.size() != 4) throw_shape_error(w + " (q)", "[B, H, Tq, hd]", sq);
    const std::string bh = std::to_string(sq[0]) + ", " + std::to_string(sq[1]);
    if (sk.size() != 4 || sk[0] != sq[0] || sk[1] != sq[1] || sk[3] != sq[3])
        throw_shape_error(w + " (k)", "[" + bh + ", Tk, " + std::to_string(sq[3]) + "]", sk);
    if (sv.size() != 4 || sv[0] != sq[0] || sv[1] != sq[1] || sv[2] != sk[2])
        throw_shape_error(w + " (v)", "[" + bh + ", " + std::to_string(sk[2]) + ", dv]", sv);
    if (mask && shape_of(*mask) != Shape{sq[0], sk[2]})
        throw_shape_error(w + " (attention_mask)",
                          "[" + std::to_string(sq[0]) + ", " + std::to_string(sk[2]) + "]",
                          shape_of(*mask));
    return {sq[0], sq[1], sq[2], sk[2], sq[3], sv[3]};
}

// One block of `nk` keys for one query row: the scores are in s[0..nk), already masked;
// updates (m, l, O) and leaves exp(s_j - m_new) in s. Returns false when every score so far
// is -inf (nothing changes).
inline __attribute__((always_inline)) bool absorb_block(float* s, std::size_t nk, const float* V,
                                                        std::size_t dv, float& m, float& l,
                                                        float* O) {
    float block_max = neg_inf;
    for (std::size_t c = 0; c < nk; ++c) block_max = std::max(block_max, s[c]);
    const float m_new = std::max(m, block_max);
    if (m_new == neg_inf) return false;  // a query that may attend to nothing yet
    const float alpha = exp_u10(m - m_new);  // exp(-inf) = 0 on the first block
    float sum = 0.0f;
    for (std::size_t c = 0; c < nk; ++c) {
        s[c] = exp_u10(s[c] - m_new);
        sum += s[c];
    }
    l = l * alpha + sum;
    if (alpha != 1.0f)
        for (std::size_t e = 0; e < dv; ++e) O[e] *= alpha;
    for (std::size_t c = 0; c < nk; ++c) {
        const float p = s[c];
        if (p == 0.0f) continue;
        const float* vr = V + c * dv;
        for (std::size_t e = 0; e < dv; ++e) O[e] += p * vr[e];
    }
    m = m_new;
    return true;
}

// One (batch, head): q [Tq, d], k [Tk, d], v [Tk, dv] -> out [Tq, dv], tile by tile.
// Compiled twice, for AVX2 (8 lanes) and for the baseline, chosen at run time; neither uses
// fused multiply-adds (AVX2 alone does not include FMA), so both give the same bits.
__attribute__((target_clones("avx2", "default")))
void attend_head(const float* q, const float* k, const float* v, float* out, const Dims& n,
                 const Config& cfg, const std::int64_t* key_mask) {
    const float divisor = std::sqrt(static_cast<float>(n.d));
    std::vector<float> kt(n.d * cfg.block_k);          // the key tile, transposed [d, Bc]
    std::vector<float> s(cfg.block_q * cfg.block_k);   // the score tile [Br, Bc]
    std::vector<float> m(cfg.block_q), l(cfg.block_q), O(cfg.block_q * n.dv);
    for (std::size_t i0 = 0; i0 < n.Tq; i0 += cfg.block_q) {
        const std::size_t nq = std::min(cfg.block_q, n.Tq - i0);
        std::fill_n(m.begin(), nq, neg_inf);
        std::fill_n(l.begin(), nq, 0.0f);
        std::fill_n(O.begin(), nq * n.dv, 0.0f);
        for (std::size_t j0 = 0; j0 < n.Tk; j0 += cfg.block_k) {
            if (cfg.is_causal && j0 > i0 + nq - 1) break;  // the whole tile is in the future
            const std::size_t nk = std::min(cfg.block_k, n.Tk - j0);
            for (std::size_t c = 0; c < nk; ++c)
                for (std::size_t e = 0; e < n.d; ++e) kt[e * nk + c] = k[(j0 + c) * n.d + e];
            for (std::size_t r = 0; r < nq; ++r) {
                float* sr = s.data() + r * nk;
                const float* qr = q + (i0 + r) * n.d;
                std::fill_n(sr, nk, 0.0f);
                // (q . k_j) summed in order over e, as the reference BLAS sums a product.
                for (std::size_t e = 0; e < n.d; ++e) {
                    const float a = qr[e];
                    const float* ke = kt.data() + e * nk;
                    for (std::size_t c = 0; c < nk; ++c) sr[c] += a * ke[c];
                }
                for (std::size_t c = 0; c < nk; ++c) {
                    sr[c] /= divisor;
                    const bool future = cfg.is_causal && j0 + c > i0 + r;
                    const bool padded = key_mask && key_mask[j0 + c] == 0;
                    if (future || padded) sr[c] = neg_inf;
                }
                absorb_block(sr, nk, v + j0 * n.dv, n.dv, m[r], l[r], O.data() + r * n.dv);
            }
        }
        for (std::size_t r = 0; r < nq; ++r) {
            // A row with nothing to attend to has l = 0: zeros, never 0/0.
            const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
            float* o = out + (i0 + r) * n.dv;
            for (std::size_t e = 0; e < n.dv; ++e) o[e] = O[r * n.dv + e] * inv;
        }
    }
}

}  // namespace

// ------------------------------------------------------------------------- softmax

Tensor softmax_three_pass(const Tensor& x) {
    return map_rows("softmax_three_pass", x, [](float* row, std::size_t n) {
        float m = neg_inf;  // pass 1: the maximum
        for (std::size_t j = 0; j < n; ++j) m = std::max(m, row[j]);
        float l = 0.0f;  // pass 2: the sum of exp(x - m)
        for (std::size_t j = 0; j < n; ++j) l += exp_u10(row[j] - m);
        for (std::size_t j = 0; j < n; ++j) row[j] = exp_u10(row[j] - m) / l;  // pass 3
    });
}

Normalizer online_normalizer(const float* x, std::size_t n, std::vector<Normalizer>* trace) {
    Normalizer st;
    for (std::size_t j = 0; j < n; ++j) {
        const float m_new = std::max(st.m, x[j]);
        if (m_new != neg_inf) st.l = st.l * exp_u10(st.m - m_new) + exp_u10(x[j] - m_new);
        st.m = m_new;
        if (trace) trace->push_back(st);
    }
    return st;
}

Tensor softmax_online(const Tensor& x) {
    return map_rows("softmax_online", x, [](float* row, std::size_t n) {
        const Normalizer st = online_normalizer(row, n);  // pass 1: m and l together
        for (std::size_t j = 0; j < n; ++j) row[j] = exp_u10(row[j] - st.m) / st.l;  // pass 2
    });
}

// ------------------------------------------------------------------------- one row

std::vector<RowState> fused_row_trace(const Tensor& q, const Tensor& k, const Tensor& v,
                                      std::size_t block_k, float divisor) {
    const Shape sq = shape_of(q), sk = shape_of(k), sv = shape_of(v);
    if (sq.size() != 1) throw_shape_error("fused_row_trace (q)", "[d]", sq);
    if (sk.size() != 2 || sk[1] != sq[0])
        throw_shape_error("fused_row_trace (k)", "[T, " + std::to_string(sq[0]) + "]", sk);
    if (sv.size() != 2 || sv[0] != sk[0])
        throw_shape_error("fused_row_trace (v)", "[" + std::to_string(sk[0]) + ", dv]", sv);
    if (block_k == 0)
        throw std::invalid_argument("fused_row_trace: expected block_k > 0, got 0");
    const Tensor qc = q, kc = k, vc = v;  // contiguous row-major copies
    const std::size_t d = sq[0], T = sk[0], dv = sv[1];
    RowState st{.keys_seen = 0, .m = neg_inf, .l = 0.0f, .O = std::vector<float>(dv, 0.0f)};
    std::vector<RowState> trace;
    std::vector<float> s(block_k);
    for (std::size_t j0 = 0; j0 < T; j0 += block_k) {
        const std::size_t nk = std::min(block_k, T - j0);
        for (std::size_t c = 0; c < nk; ++c) {
            float dot = 0.0f;
            for (std::size_t e = 0; e < d; ++e) dot += qc.data()[e] * kc.data()[(j0 + c) * d + e];
            s[c] = dot / divisor;
        }
        absorb_block(s.data(), nk, vc.data() + j0 * dv, dv, st.m, st.l, st.O.data());
        st.keys_seen = j0 + nk;
        trace.push_back(st);
    }
    return trace;
}

// ------------------------------------------------------------------------- tiled

void Config::validate() const {
    require_positive("flash::Config", "block_q", block_q);
    require_positive("flash::Config", "block_k", block_k);
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Config& config,
                 const std::optional<LongTensor>& attention_mask) {
    config.validate();
    const Dims n = check_heads("flash::attention", q, k, v, attention_mask);
    Tensor out = xt::zeros<float>(Shape{n.B, n.H, n.Tq, n.dv});
    for (std::size_t b = 0; b < n.B; ++b) {
        const std::int64_t* key_mask = attention_mask ? attention_mask->data() + b * n.Tk : nullptr;
        for (std::size_t h = 0; h < n.H; ++h) {
            const std::size_t bh = b * n.H + h;
            attend_head(q.data() + bh * n.Tq * n.d, k.data() + bh * n.Tk * n.d,
                        v.data() + bh * n.Tk * n.dv, out.data() + bh * n.Tq * n.dv, n, config,
                        key_mask);
        }
    }
    return out;
}

Tensor attention_naive(const Tensor& q, const Tensor& k, const Tensor& v, const Config& config,
                       const std::optional<LongTensor>& attention_mask) {
    const Dims n = check_heads("flash::attention_naive", q, k, v, attention_mask);
    // [B, H, Tq, d] @ [B, H, d, Tk] -> [B, H, Tq, Tk]: the scores chapter 7 keeps.
    Tensor scores = attn::matmul(q, attn::transpose(k, 2, 3));
    scores = scores / std::sqrt(static_cast<float>(n.d));
    if (config.is_causal)
        scores = attn::masked_fill(scores, attn::to_bool(attn::triu(attn::ones({n.Tq, n.Tk}), 1)),
                                   neg_inf);
    if (attention_mask) {
        // attention_mask[:, None, None, :] == 0: [B, 1, 1, Tk] broadcasts over heads and queries.
        BoolTensor padded = attn::eq(*attention_mask, 0);
        padded.reshape({n.B, 1, 1, n.Tk});
        scores = attn::masked_fill(scores, padded, neg_inf);
    }
    return attn::matmul(attn::masked_softmax(scores), v);
}

Tensor forward(const MultiHeadAttention& module, const Tensor& x, const Config& config,
               const std::optional<LongTensor>& attention_mask) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != module.d_in())
        throw_shape_error("flash::forward", "[b, T, " + std::to_string(module.d_in()) + "]", s);
    causal_mask_for("flash::forward", module.mask, s[1]);  // throws when T > context_length
    if (module.dropout.training && module.dropout.p > 0.0)
        throw std::invalid_argument("flash::forward: the tiled kernel draws no dropout; got "
                                    "dropout = " + std::to_string(module.dropout.p) +
                                    " in training mode (call eval())");
    const long b = to_long(s[0]), T = to_long(s[1]);
    const long H = to_long(module.num_heads), hd = to_long(module.head_dim);
    auto heads = [&](const Tensor& y) {  // [b, T, d_out] -> [b, H, T, hd]
        return Tensor(attn::transpose(attn::view(y, {b, T, H, hd}), 1, 2));
    };
    Config causal = config;
    causal.is_causal = true;
    const Tensor context = attention(heads(module.W_query(x)), heads(module.W_key(x)),
                                     heads(module.W_value(x)), causal, attention_mask);
    // [b, H, T, hd] -> [b, T, H, hd] -> [b, T, d_out]
    return module.out_proj(attn::view(attn::transpose(context, 1, 2),
                                      {b, T, to_long(module.d_out())}));
}

// ------------------------------------------------------------------------- ulp

std::int64_t ulp_distance(float a, float b) {
    auto key = [](float f) {
        std::int32_t i;
        std::memcpy(&i, &f, sizeof i);
        return i < 0 ? -static_cast<std::int64_t>(i & 0x7fffffff) : static_cast<std::int64_t>(i);
    };
    const std::int64_t d = key(a) - key(b);
    return d < 0 ? -d : d;
}

std::int64_t max_ulp_distance(const Tensor& a, const Tensor& b) {
    check_same_shape("max_ulp_distance", shape_of(a), shape_of(b));
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, ulp_distance(a.data()[i], b.data()[i]));
    return worst;
}

double max_diff_in_ulps(const Tensor& a, const Tensor& b, float scale) {
    check_same_shape("max_diff_in_ulps", shape_of(a), shape_of(b));
    if (!(std::isfinite(scale) && scale > 0.0f))
        throw std::invalid_argument("max_diff_in_ulps: expected a finite scale > 0, got " +
                                    std::to_string(scale));
    const double ulp = std::nextafter(scale, std::numeric_limits<float>::infinity()) - scale;
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])) / ulp);
    return worst;
}

}  // namespace attn::flash
