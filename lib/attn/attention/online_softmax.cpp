// The online softmax of chapter 12 (online_softmax.hpp), pass by pass.
#include "attn/attention/online_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/core/elementwise.hpp"
#include "attn/core/functional.hpp"
#include "attn/kernels/tiled_attention.hpp"

namespace attn::flash {

namespace {

constexpr float online_neg_inf = -std::numeric_limits<float>::infinity();

}  // namespace

Tensor softmax_three_pass(const Tensor& x) {
    return attn::detail::map_rows("softmax_three_pass", x, [](float* row, std::size_t n) {
        float m = online_neg_inf;  // pass 1: the maximum
        for (std::size_t j = 0; j < n; ++j) m = std::max(m, row[j]);
        float l = 0.0f;  // pass 2: the sum of exp(x - m)
        for (std::size_t j = 0; j < n; ++j) l += exp_torch(row[j] - m);
        for (std::size_t j = 0; j < n; ++j) row[j] = exp_torch(row[j] - m) / l;  // pass 3
    });
}

Normalizer online_normalizer(const float* x, std::size_t n, std::vector<Normalizer>* trace) {
    Normalizer st;
    for (std::size_t j = 0; j < n; ++j) {
        const float m_new = std::max(st.m, x[j]);
        if (std::isnan(x[j]))
            st.l = std::numeric_limits<float>::quiet_NaN();  // max() skips a NaN; the sum may not
        else if (m_new != online_neg_inf)
            st.l = st.l * exp_torch(st.m - m_new) + exp_torch(x[j] - m_new);
        st.m = m_new;
        if (trace) trace->push_back(st);
    }
    return st;
}

Tensor softmax_online(const Tensor& x) {
    return attn::detail::map_rows("softmax_online", x, [](float* row, std::size_t n) {
        const Normalizer st = online_normalizer(row, n);  // pass 1: m and l together
        for (std::size_t j = 0; j < n; ++j) row[j] = exp_torch(row[j] - st.m) / st.l;  // pass 2
    });
}

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
    const std::size_t d = sq[0], T = sk[0], dv = sv[1];
    RowState st{.keys_seen = 0, .m = online_neg_inf, .l = 0.0f, .O = std::vector<float>(dv, 0.0f)};
    std::vector<RowState> trace;
    std::vector<float> s(std::min(block_k, std::max<std::size_t>(T, 1)));
    bool saw_nan = false;
    for (std::size_t j0 = 0; j0 < T; j0 += block_k) {
        const std::size_t nk = std::min(block_k, T - j0);
        for (std::size_t c = 0; c < nk; ++c) {
            float dot = 0.0f;  // q . k_j, in order
            for (std::size_t e = 0; e < d; ++e) dot += q.data()[e] * k.data()[(j0 + c) * d + e];
            s[c] = dot / divisor;
        }
        // FlashAttention's update of the row, as the tiled backend runs it.
        fast::absorb_tile(s.data(), nk, v.data() + j0 * dv, dv, dv, nullptr, 0, st.m, st.l,
                          st.O.data(), saw_nan);
        if (saw_nan) st.l = std::numeric_limits<float>::quiet_NaN();
        st.keys_seen = j0 + nk;
        trace.push_back(st);
    }
    return trace;
}

void merge_partial(float* out, float& lse, const float* block_out, float block_lse,
                   std::size_t width) {
    if (block_lse == online_neg_inf) return;  // the block saw no key
    if (lse == online_neg_inf) {              // nothing seen yet: the block's result
        std::copy(block_out, block_out + width, out);
        lse = block_lse;
        return;
    }
    const float L = std::max(lse, block_lse) + std::log1p(exp_torch(-std::fabs(lse - block_lse)));
    const float wa = exp_torch(lse - L), wb = exp_torch(block_lse - L);
    for (std::size_t e = 0; e < width; ++e) out[e] = out[e] * wa + block_out[e] * wb;
    lse = L;
}

}  // namespace attn::flash
