// attn::fast::attend_head_backward (attention_backward.hpp): the fast backend's backward, with
// the bits of the step-by-step backward (attention/sdpa_step.cpp), in blocks of NR queries on
// packed operands. Compiled with -ffp-contract=off (every multiply and add rounded on its own,
// fused multiply-adds only where written: the softmax backward's row sum, as PyTorch's kernel).
//
// Per query head (in group order), per block of NR queries i0 .. i1-1 (one SIMD lane each):
//   1. the keys [jlo, hi) some query of the block may see (as the forward), the weights P
//      recomputed exactly as attend_head computes them (scores, softmax_block), P ⊙ N;
//   2. dP^T [keys, NR] = V[jlo:hi] @ dO_block^T (in-order sums over dv), ⊙ N;
//   3. per query, s = rowsum(dP ⊙ P) in PyTorch's order, dS = (dP - s) ⊙ P, then the scaling;
//   4. dQ_block^T = K^T[:, jlo:hi] @ dS^T, summed over the keys in order;
//   5. dK[jlo:hi] += dS^T @ Q_block and dV[jlo:hi] += (P ⊙ N)^T @ dO_block, the register
//      kernels accumulating onto what earlier blocks left: each element summed over the queries
//      in order, as the step path's one product over all queries.
// A head's dK, dV are then added to the group's, head after head (the step path's sum over the
// repeated heads). Keys outside [jlo, hi) contribute exact zeros, so skipping them keeps the
// bits; with an operand that is not finite, nothing is skipped.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/kernels/attention_backward.hpp"
#include "attn/kernels/head_checks.hpp"
#include "attn/kernels/driver.hpp"

namespace attn::fast {

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// C[m, n] (row stride ldc) += Ap @ Bp, both packed with k terms per panel: every element
// continues its in-order sum from the value C holds.
void accumulate(const detail::Kernels& kn, std::size_t m, std::size_t n, std::size_t k,
                const float* Ap, const float* Bp, float* C, std::size_t ldc) {
    for (std::size_t j0 = 0; j0 < n; j0 += kn.nr)
        for (std::size_t i0 = 0; i0 < m; i0 += kn.mr)
            kn.micro(k, Ap + (i0 / kn.mr) * k * kn.mr, Bp + (j0 / kn.nr) * k * kn.nr, C + i0 * ldc + j0,
                     ldc, std::min(kn.mr, m - i0), std::min(kn.nr, n - j0), true, nullptr);
}

// Steps 2-3 on one block, lane by lane: g = dP ⊙ N, s = rowsum(g ⊙ P) in PyTorch's order
// (detail::softmax_backward_sum: in order below 8 keys; else key j fused into lane j % 8 and
// the lanes added as a tree), dS = (g - s) ⊙ P, scaled. dPt and Pt are [rows, nr], key jlo + r
// in row r; noise (when not null) is gathered in the same layout.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void softmax_backward_block(float* dPt, const float* Pt, const float* noise_t, std::size_t rows,
                            std::size_t nr, std::size_t jlo, std::size_t Tk, bool divide,
                            float scale) {
    constexpr std::size_t NRMAX = 64;
    float lanes[8][NRMAX];
    float s[NRMAX];
    if (noise_t)
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < nr; ++c) dPt[r * nr + c] = dPt[r * nr + c] * noise_t[r * nr + c];
    if (Tk < 8) {
        std::fill_n(s, nr, 0.0f);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < nr; ++c) s[c] = s[c] + dPt[r * nr + c] * Pt[r * nr + c];
    } else {
        for (std::size_t l = 0; l < 8; ++l) std::fill_n(lanes[l], nr, 0.0f);
        for (std::size_t r = 0; r < rows; ++r) {
            float* acc = lanes[(jlo + r) % 8];
            for (std::size_t c = 0; c < nr; ++c) acc[c] = std::fma(dPt[r * nr + c], Pt[r * nr + c], acc[c]);
        }
        for (std::size_t c = 0; c < nr; ++c)
            s[c] = ((lanes[0][c] + lanes[4][c]) + (lanes[2][c] + lanes[6][c])) +
                   ((lanes[1][c] + lanes[5][c]) + (lanes[3][c] + lanes[7][c]));
    }
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < nr; ++c) {
            const float d = (dPt[r * nr + c] - s[c]) * Pt[r * nr + c];
            dPt[r * nr + c] = divide ? d / scale : d * scale;
        }
}

// dS^T [rows, nr] of a block: 0 where the block's masks (as softmax_block reads them) hide the
// key from the query.
void zero_hidden(float* Dt, const SoftmaxBlock& b, const unsigned char* allow, std::size_t rows,
                 std::size_t nr, std::size_t lanes) {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < lanes; ++c) {
            const long lag = b.diag + long(c) - long(b.j0 + r);  // query pos - key pos
            const bool hidden = (b.causal && lag < 0) || (b.window && lag >= long(b.window)) ||
                                (allow && !allow[r * nr + c]);
            if (hidden) Dt[r * nr + c] = 0.0f;
        }
}

}  // namespace

void attend_head_backward(const HeadGradArgs& a, const HeadMask& m, const QueryHeadGrad* heads,
                          std::size_t n, BackwardWorkspace& ws, Arithmetic arithmetic) {
    detail::check_strides("fast::attend_head_backward", a);
    for (std::size_t j = 0; j < a.Tk; ++j) {
        std::fill_n(a.dK + j * a.lddk, a.hd, 0.0f);
        std::fill_n(a.dV + j * a.lddv, a.dv, 0.0f);
    }
    if (a.Tq == 0) return;
    if (a.Tk == 0) {  // no key: dQ is a sum of nothing
        for (std::size_t h = 0; h < n; ++h)
            for (std::size_t i = 0; i < a.Tq; ++i) std::fill_n(heads[h].dQ + i * a.lddq, a.hd, 0.0f);
        return;
    }
    const detail::Kernels& kn = detail::active(arithmetic);
    const std::size_t mr = kn.mr, nr = kn.nr, Tk = a.Tk, hd = a.hd, dv = a.dv;
    const std::size_t Tkm = (Tk + mr - 1) / mr * mr, hdm = (hd + mr - 1) / mr * mr;
    float* Kp = detail::grow(ws.forward.keys, Tkm * std::max<std::size_t>(hd, 1));   // K as left operand
    float* Kt = detail::grow(ws.keys_t, hdm * Tk);                                   // K^T as left operand
    float* Vp = detail::grow(ws.values, Tkm * std::max<std::size_t>(dv, 1));         // V as left operand
    float* Qb = detail::grow(ws.forward.queries, std::max<std::size_t>(hd, 1) * nr); // Q_block^T packed
    float* Gb = detail::grow(ws.grad_out, std::max<std::size_t>(dv, 1) * nr);        // dO_block^T packed
    float* St = detail::grow(ws.forward.scores_t, (Tkm + mr) * nr);                  // P
    float* Wt = detail::grow(ws.weights_t, (Tkm + mr) * nr);                         // P ⊙ N
    float* Dt = detail::grow(ws.dp_t, (Tkm + mr) * nr);                              // dP, then dS
    float* Nt = detail::grow(ws.noise_t, (Tkm + mr) * nr);                           // N, gathered
    float* Bt = detail::grow(ws.forward.bias_t, (Tkm + mr) * nr);                    // bias, gathered
    float* Ap = detail::grow(ws.packed, (Tkm + mr) * nr);                            // dS^T or (P ⊙ N)^T packed
    float* Bq = detail::grow(ws.queries, ((hd + nr - 1) / nr * nr + nr) * nr);       // Q_block packed
    float* Bo = detail::grow(ws.grad_out_rows, ((dv + nr - 1) / nr * nr + nr) * nr); // dO_block packed
    float* Ct = detail::grow(ws.dq_t, hdm * nr);                                     // dQ_block^T
    float* hdk = detail::grow(ws.head_dk, Tk * std::max<std::size_t>(hd, 1));
    float* hdv = detail::grow(ws.head_dv, Tk * std::max<std::size_t>(dv, 1));
    if (ws.forward.allow_t.size() < (Tkm + mr) * nr) ws.forward.allow_t.resize((Tkm + mr) * nr);
    detail::pack_a_panels(kn, Tk, hd, a.K, a.ldk, false, Kp);
    detail::pack_a_panels(kn, hd, Tk, a.K, a.ldk, true, Kt);
    detail::pack_a_panels(kn, Tk, dv, a.V, a.ldv, false, Vp);

    // Skipping keys is exact only when every term it drops is an exact zero. (Keys and values
    // checked on their packed copies, every value or a zero, contiguous and in cache.)
    bool skip = detail::all_finite(Kp, 1, Tkm * hd, Tkm * hd) && detail::all_finite(Vp, 1, Tkm * dv, Tkm * dv);
    for (std::size_t h = 0; h < n; ++h)
        skip = skip && detail::all_finite(heads[h].Q, a.Tq, hd, a.ldq) && detail::all_finite(heads[h].dO, a.Tq, dv, a.ldo);
    // A query that sees no key has NaN weights in the step path (torch.softmax): its NaN then
    // reaches every key's dV (its dS is 0: every key is hidden).
    bool poison = false;

    for (std::size_t h = 0; h < n; ++h) {
        const QueryHeadGrad& q = heads[h];
        std::fill_n(hdk, Tk * hd, 0.0f);
        std::fill_n(hdv, Tk * dv, 0.0f);
        for (std::size_t i0 = 0; i0 < a.Tq; i0 += nr) {
            const std::size_t lanes = std::min(nr, a.Tq - i0), i1 = i0 + lanes;
            long lo = 0, hi = long(Tk);
            if (skip) detail::key_range(m, Tk, i0, i1, lo, hi);
            if (hi <= lo) {  // no query of the block sees any key: dS is 0 (all hidden)
                // With an additive mask a NaN row of weights keeps its NaN dS: it reaches the
                // block's dQ and every key's dK.
                const float fill = m.additive && !m.zero_fully_masked ? nan_f : 0.0f;
                for (std::size_t c = 0; c < lanes; ++c) std::fill_n(q.dQ + (i0 + c) * a.lddq, hd, fill);
                poison = poison || !m.zero_fully_masked;
                continue;
            }
            const std::size_t jlo = std::size_t(lo) / mr * mr, rows = std::size_t(hi) - jlo;
            // 1. P, exactly as the forward: scores, then the softmax of the block
            detail::pack_b_panels(kn, hd, lanes, q.Q + i0 * a.ldq, a.ldq, true, Qb);
            detail::gemm_prepacked(kn, rows, nr, hd, Kp + jlo * hd, hd, Qb, hd, St, nr);
            SoftmaxBlock b =
                detail::masked_block(m, q, a.Tk, i0, lanes, jlo, rows, nr, ws.forward.allow_t.data(), Bt);
            float row_max[64];
            b.row_max = row_max;
            kn.softmax_block(St, b);
            bool empty_row = false;  // a query that sees no key: NaN weights with torch.softmax
            if (!m.zero_fully_masked)
                for (std::size_t c = 0; c < lanes; ++c) empty_row = empty_row || row_max[c] == neg_inf;
            poison = poison || empty_row;
            const float* PN = St;
            if (q.noise) {
                for (std::size_t r = 0; r < rows; ++r)
                    for (std::size_t c = 0; c < nr; ++c)
                        Nt[r * nr + c] = c < lanes ? q.noise[long(i0 + c) * m.noise_si + long(jlo + r) * m.noise_sj] : 0.0f;
                for (std::size_t i = 0; i < rows * nr; ++i) Wt[i] = St[i] * Nt[i];
                PN = Wt;
            }
            // 2. dP^T = V[jlo:hi] @ dO_block^T;  3. dS
            detail::pack_b_panels(kn, dv, lanes, q.dO + i0 * a.ldo, a.ldo, true, Gb);
            detail::gemm_prepacked(kn, rows, nr, dv, Vp + jlo * dv, dv, Gb, dv, Dt, nr);
            softmax_backward_block(Dt, St, q.noise ? Nt : nullptr, rows, nr, jlo, Tk, m.divide, m.scale);
            // The masked_fill's backward: 0 where a key is hidden, whatever P * (dP - D) gave
            // there: mostly (+-)0 already, but NaN for a row of NaN weights, non-finite
            // operands, or a dP that overflowed. An additive mask keeps them (0 * inf is NaN,
            // as PyTorch's math path gives).
            if (!m.additive) zero_hidden(Dt, b, q.allow ? ws.forward.allow_t.data() : nullptr, rows, nr, lanes);
            // 4. dQ_block^T [hd, nr] = K^T[:, jlo:hi] @ dS^T
            detail::gemm_prepacked(kn, hd, nr, rows, Kt + jlo * mr, Tk, Dt, rows, Ct, nr);
            for (std::size_t c = 0; c < lanes; ++c)
                for (std::size_t e = 0; e < hd; ++e) q.dQ[(i0 + c) * a.lddq + e] = Ct[e * nr + c];
            // 5. dK[jlo:hi] += dS^T Q_block;  dV[jlo:hi] += (P ⊙ N)^T dO_block (lanes terms)
            detail::pack_a_panels(kn, rows, lanes, Dt, nr, false, Ap);
            detail::pack_b_panels(kn, lanes, hd, q.Q + i0 * a.ldq, a.ldq, false, Bq);
            accumulate(kn, rows, hd, lanes, Ap, Bq, hdk + jlo * hd, hd);
            detail::pack_a_panels(kn, rows, lanes, PN, nr, false, Ap);
            detail::pack_b_panels(kn, lanes, dv, q.dO + i0 * a.ldo, a.ldo, false, Bo);
            accumulate(kn, rows, dv, lanes, Ap, Bo, hdv + jlo * dv, dv);
        }
        // The group's sum, head after head (the step path's sum over repeated heads).
        for (std::size_t j = 0; j < Tk; ++j) {
            float* dk = a.dK + j * a.lddk;
            float* dvr = a.dV + j * a.lddv;
            for (std::size_t e = 0; e < hd; ++e) dk[e] = dk[e] + hdk[j * hd + e];
            for (std::size_t e = 0; e < dv; ++e) dvr[e] = dvr[e] + hdv[j * dv + e];
        }
    }
    if (poison)  // dV[j] = sum_i P[i, j] dO[i] meets the NaN row for every key
        for (std::size_t j = 0; j < Tk; ++j) std::fill_n(a.dV + j * a.lddv, dv, nan_f);
    if (poison && m.additive)  // dK[j] = sum_i dS[i, j] Q[i] likewise, its NaN dS kept
        for (std::size_t j = 0; j < Tk; ++j) std::fill_n(a.dK + j * a.lddk, hd, nan_f);
}

}  // namespace attn::fast
