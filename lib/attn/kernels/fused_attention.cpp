// attn::fast::multihead_forward (fast_attention.hpp): MultiHeadAttention's forward with the
// bits of forward_steps, in blocks of query rows, with reused workspaces and OpenMP threads.
#include "attn/kernels/fused_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/attention/attention.hpp"
#include "attn/kernels/gemm.hpp"
#include "attn/kernels/driver.hpp"

namespace attn::fast {

namespace {

// y[rows, n] = x[rows, d] @ W^T (+ b after the product, as Linear's `y += bias`).
void linear(const nn::Linear& l, const float* x, std::size_t rows, float* y) {
    l.check_parameters();  // weight and bias are public: checked before they are read
    const std::size_t in = l.in_features(), out = l.out_features();
    fast::gemm(rows, out, in, x, in, false, l.weight.data(), in, true, y, out);
    if (l.bias) {
        const float* b = l.bias->data();
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < out; ++j) y[i * out + j] += b[j];
    }
}

// Per-thread buffers kept between calls (they only grow).
float* workspace(std::vector<float>& buf, std::size_t floats) {
    if (buf.size() < floats) buf.resize(floats);
    return buf.data();
}

}  // namespace

void causal_head(const float* Q, const float* K, const float* V, std::size_t T, std::size_t hd,
                 std::size_t ld, float divisor, float* ctx, std::size_t ldc, HeadWorkspace& ws,
                 unsigned stages) {
    if (ld < hd || ldc < hd) {
        throw std::invalid_argument("fast::causal_head: expected ld and ldc >= hd = " +
                                    std::to_string(hd) + ", got " + std::to_string(ld) +
                                    " and " + std::to_string(ldc));
    }
    if (T == 0 || hd == 0) {
        for (std::size_t i = 0; i < T; ++i) std::fill_n(ctx + i * ldc, hd, 0.0f);
        return;
    }
    const detail::Kernels& kn = detail::active();
    const std::size_t mr = kn.mr, nr = kn.nr;
    const std::size_t Tm = (T + mr - 1) / mr * mr, hdm = (hd + mr - 1) / mr * mr;
    float* Kp = workspace(ws.keys, Tm * hd);
    float* Vt = workspace(ws.values_t, hdm * T);
    float* Qb = workspace(ws.queries, hd * nr);
    float* St = workspace(ws.scores_t, Tm * nr);
    float* Ct = workspace(ws.context_t, hdm * nr);
    if (stages & stage_scores) detail::pack_a_panels(kn, T, hd, K, ld, false, Kp);
    if (stages & stage_weights_values) detail::pack_a_panels(kn, hd, T, V, ld, true, Vt);
    // Blocks of nr queries i0..i1-1; they see keys 0..i1-1.
    for (std::size_t i0 = 0; i0 < T; i0 += nr) {
        const std::size_t q = std::min(nr, T - i0), i1 = i0 + q;
        if (stages & stage_scores) {
            // scores^T [i1, nr] = keys[0:i1] @ queries[i0:i1]^T: each element is the dot
            // product q_i . k_j summed over the head's columns in order, as sgemm does.
            detail::pack_b_panels(kn, hd, q, Q + i0 * ld, ld, /*trans_b=*/true, Qb);
            detail::gemm_prepacked(kn, i1, nr, hd, Kp, hd, Qb, hd, St, nr);
        }
        if (stages & stage_softmax) kn.softmax_cols(St, i1, i0, divisor);
        if (stages & stage_weights_values) {
            // context^T [hd, nr] = values^T[:, 0:i1] @ weights^T: sums over keys in order.
            detail::gemm_prepacked(kn, hd, nr, i1, Vt, T, St, i1, Ct, nr);
            for (std::size_t c = 0; c < q; ++c)
                for (std::size_t d = 0; d < hd; ++d) ctx[(i0 + c) * ldc + d] = Ct[d * nr + c];
        }
    }
}

bool supports(const MultiHeadAttention& m, std::size_t T) {
    if (m.dropout.training && m.dropout.p != 0.0) return false;
    if (m.mask.dimension() != 2 || T > m.mask.shape()[0] || m.mask.shape()[1] < T) return false;
    const std::size_t ld = m.mask.shape()[1];
    const float* mk = m.mask.data();
    for (std::size_t i = 0; i < T; ++i) {
        const float* row = mk + i * ld;
        bool ok = true;
        for (std::size_t j = 0; j <= i; ++j) ok &= row[j] == 0.0f;
        for (std::size_t j = i + 1; j < T; ++j) ok &= row[j] != 0.0f;
        if (!ok) return false;
    }
    return true;
}

Tensor multihead_forward(const MultiHeadAttention& m, const Tensor& x) {
    const Shape s = shape_of(x);
    if (s.size() != 3 || s[2] != m.d_in())
        throw_shape_error("MultiHeadAttention", "[b, T, " + std::to_string(m.d_in()) + "]", s);
    const std::size_t b = s[0], T = s[1], d_in = s[2];
    if (T > m.context_length()) causal_mask_for("MultiHeadAttention", m.mask, T);  // throws
    if (!supports(m, T)) {
        throw std::invalid_argument(
            "fast::multihead_forward: expected dropout off (eval mode or p = 0) and the causal "
            "mask, got training mode with p = " + std::to_string(m.dropout.p) +
            " or a changed mask; use forward_steps");
    }
    const std::size_t d_out = m.d_out(), H = m.num_heads, hd = m.head_dim;
    const std::size_t rows = b * T;
    Tensor y = Tensor::from_shape({b, T, d_out});
    if (rows == 0) return y;

    thread_local std::vector<float> wq, wk, wv, wc;
    float* Q = workspace(wq, rows * d_out);
    float* K = workspace(wk, rows * d_out);
    float* V = workspace(wv, rows * d_out);
    float* C = workspace(wc, rows * d_out);
    linear(m.W_query, x.data(), rows, Q);
    linear(m.W_key, x.data(), rows, K);
    linear(m.W_value, x.data(), rows, V);
    (void)d_in;

    // forward_steps divides by std::sqrt(float(head_dim)).
    const float divisor = std::sqrt(static_cast<float>(hd));
    const std::size_t tasks = b * H;
    // The causal products cost about 2 * b * H * T^2 * hd flops; threads below 8 million
    // would cost more than they give (see fast::gemm).
    const bool large = 2.0 * double(b * H) * double(T) * double(T) * double(hd) >= 8e6;
#pragma omp parallel if (large && tasks > 1)
    {
        thread_local HeadWorkspace ws;
#pragma omp for schedule(dynamic, 1)
        for (std::size_t t = 0; t < tasks; ++t) {
            const std::size_t off = (t / H) * T * d_out + (t % H) * hd;
            causal_head(Q + off, K + off, V + off, T, hd, d_out, divisor, C + off, d_out, ws);
        }
    }
    linear(m.out_proj, C, rows, y.data());
    return y;
}

}  // namespace attn::fast
