// attn::fast::multihead_forward (fast_attention.hpp): MultiHeadAttention's forward with the
// bits of forward_steps, in blocks of query rows, with reused workspaces and OpenMP threads.
#include "attn/fast_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/attention.hpp"
#include "attn/gemm.hpp"

namespace attn::fast {

namespace {

constexpr std::size_t RB = 64;  // query rows per block: a [RB, T] block of scores

// y[rows, n] = x[rows, d] @ W^T (+ b after the product, as Linear's `y += bias`).
void linear(const nn::Linear& l, const float* x, std::size_t rows, float* y) {
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
    const std::size_t lds = (T + 15) / 16 * 16;
    const std::size_t tasks = b * H;
    // The causal products cost about 2 * b * H * T^2 * hd flops; threads below 8 million
    // would cost more than they give (see fast::gemm).
    const bool large = 2.0 * double(b * H) * double(T) * double(T) * double(hd) >= 8e6;
#pragma omp parallel if (large && tasks > 1)
    {
        thread_local PackedB kp, vp;
        thread_local std::vector<float> sbuf;
        float* S = workspace(sbuf, RB * lds);
#pragma omp for schedule(dynamic, 1)
        for (std::size_t t = 0; t < tasks; ++t) {
            const std::size_t bi = t / H, h = t % H;
            const float* Qh = Q + bi * T * d_out + h * hd;
            const float* Kh = K + bi * T * d_out + h * hd;
            const float* Vh = V + bi * T * d_out + h * hd;
            float* Ch = C + bi * T * d_out + h * hd;
            pack_b(hd, T, Kh, d_out, /*trans_b=*/true, kp);   // keys^T: [hd, T]
            pack_b(T, hd, Vh, d_out, /*trans_b=*/false, vp);  // values: [T, hd]
            for (std::size_t i0 = 0; i0 < T; i0 += RB) {
                const std::size_t r = std::min(RB, T - i0), i1 = i0 + r;
                // Scores of queries i0..i1-1 against keys 0..i1-1 (the rest is masked).
                gemm_packed(r, i1, hd, Qh + i0 * d_out, d_out, false, kp, S, lds);
                causal_softmax_rows(S, lds, i0, r, i1, divisor);
                // Weights @ values, into the merged context [b, T, H * hd].
                gemm_packed(r, hd, i1, S, lds, false, vp, Ch + i0 * d_out, d_out);
            }
        }
    }
    linear(m.out_proj, C, rows, y.data());
    return y;
}

}  // namespace attn::fast
