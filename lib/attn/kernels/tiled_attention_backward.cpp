// attn::fast::tiled_attend_head_backward (attention_backward.hpp): FlashAttention-2's backward,
// algorithm 2 of Dao 2023, tile by tile.
//
// For the query heads of one key/value head:
//   0. D_i = rowsum(dO_i ⊙ O_i) for every query row of every head; dQ = 0;
//   1. for each tile of keys j0 .. j0 + nk - 1:  dK_j = 0, dV_j = 0 (the tile's accumulators)
//        for each head, each tile of queries i0 .. i0 + nq - 1 that may see the key tile:
//          S = Q_i K_j^T, scaled, biased, masked;  P = exp(S - L_i)   (never [Tq, Tk])
//          dV_j += (P ⊙ N)^T dO_i;  dP = (dO_i V_j^T) ⊙ N;  dS = P ⊙ (dP - D_i), scaled
//          dQ_i += dS K_j;  dK_j += dS^T Q_i
//      dK_j, dV_j written out.
// The products are attn::fast::gemm calls on the tiles (in-order sums, one thread); exp is
// the kernels' vector expf_u10. Everything is sized before the loops, from min(block, T).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/kernels/attention_backward.hpp"
#include "attn/kernels/head_checks.hpp"
#include "attn/kernels/gemm.hpp"

namespace attn::fast {

namespace {

constexpr float backward_neg_inf = -std::numeric_limits<float>::infinity();
constexpr float backward_nan = std::numeric_limits<float>::quiet_NaN();

bool finite_rows(const float* x, std::size_t rows, std::size_t cols, std::size_t ld) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            if (!std::isfinite(x[i * ld + j])) return false;
    return true;
}

// C[m, n] += A-product written to `t` first (gemm overwrites; the sum is then added in).
void add_rows(float* C, std::size_t ldc, const float* t, std::size_t m, std::size_t n) {
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) C[i * ldc + j] += t[i * n + j];
}

}  // namespace

void tiled_attend_head_backward(const HeadGradArgs& a, const HeadMask& mk,
                                const QueryHeadGrad* heads, std::size_t n,
                                const TileSizes& tiles, TiledBackwardWorkspace& ws) {
    if (tiles.block_q == 0 || tiles.block_k == 0)
        throw std::invalid_argument("fast::tiled_attend_head_backward: expected block_q and block_k > 0, got " +
                                    std::to_string(tiles.block_q) + " and " + std::to_string(tiles.block_k));
    detail::check_strides("fast::tiled_attend_head_backward", a);
    for (std::size_t h = 0; h < n; ++h)
        if (!heads[h].O || !heads[h].logsumexp)
            throw std::invalid_argument("fast::tiled_attend_head_backward: the forward's output O and "
                                        "log-sum-exp L are required");
    for (std::size_t j = 0; j < a.Tk; ++j) {
        std::fill_n(a.dK + j * a.lddk, a.hd, 0.0f);
        std::fill_n(a.dV + j * a.lddv, a.dv, 0.0f);
    }
    for (std::size_t h = 0; h < n; ++h)
        for (std::size_t i = 0; i < a.Tq; ++i) std::fill_n(heads[h].dQ + i * a.lddq, a.hd, 0.0f);
    if (a.Tq == 0 || a.Tk == 0) return;

    const std::size_t Bq = std::min(tiles.block_q, a.Tq), Bk = std::min(tiles.block_k, a.Tk);
    float* D = detail::grow(ws.D, n * a.Tq);
    float* S = detail::grow(ws.s, Bq * Bk);
    float* Pd = detail::grow(ws.pd, Bq * Bk);
    float* dP = detail::grow(ws.dp, Bq * Bk);
    float* dK = detail::grow(ws.dk, std::max<std::size_t>(Bk * a.hd, 1));
    float* dV = detail::grow(ws.dv, std::max<std::size_t>(Bk * a.dv, 1));
    float* t = detail::grow(ws.t, std::max({Bk * a.hd, Bk * a.dv, Bq * a.hd, std::size_t{1}}));

    // Tiles in a query tile's future (or beyond its window) are skipped only when every
    // operand is finite and every row saw a key: otherwise the step path's NaN (0 * inf, a
    // NaN row of weights) reaches keys that no query may see, and so must this one.
    bool skip = finite_rows(a.K, a.Tk, a.hd, a.ldk) && finite_rows(a.V, a.Tk, a.dv, a.ldv);
    for (std::size_t h = 0; h < n; ++h) {
        const QueryHeadGrad& q = heads[h];
        skip = skip && finite_rows(q.Q, a.Tq, a.hd, a.ldq) && finite_rows(q.dO, a.Tq, a.dv, a.ldo);
        for (std::size_t i = 0; i < a.Tq; ++i) {
            float d = 0.0f;  // D_i = dO_i . O_i, in order
            for (std::size_t e = 0; e < a.dv; ++e) d += q.dO[i * a.ldo + e] * q.O[i * a.ldo + e];
            D[h * a.Tq + i] = d;
            skip = skip && std::isfinite(d) && std::isfinite(q.logsumexp[i]);
        }
    }

    for (std::size_t j0 = 0; j0 < a.Tk; j0 += Bk) {
        const std::size_t nk = std::min(Bk, a.Tk - j0);
        const float* Kj = a.K + j0 * a.ldk;
        const float* Vj = a.V + j0 * a.ldv;
        std::fill_n(dK, nk * a.hd, 0.0f);
        std::fill_n(dV, nk * a.dv, 0.0f);
        for (std::size_t h = 0; h < n; ++h) {
            const QueryHeadGrad& q = heads[h];
            for (std::size_t i0 = 0; i0 < a.Tq; i0 += Bq) {
                const std::size_t nq = std::min(Bq, a.Tq - i0);
                const long last_q = long(i0 + nq - 1) + mk.offset, first_q = long(i0) + mk.offset;
                if (skip && mk.causal && long(j0) > last_q) continue;  // every key in the future
                if (skip && mk.window && first_q - long(j0 + nk - 1) >= long(mk.window)) continue;
                const float* Qi = q.Q + i0 * a.ldq;
                const float* dOi = q.dO + i0 * a.ldo;
                // S = Q_i K_j^T, then P = exp(S scaled + bias, -inf where hidden, - L)
                gemm(nq, nk, a.hd, Qi, a.ldq, false, Kj, a.ldk, true, S, nk, 1);
                for (std::size_t r = 0; r < nq; ++r) {
                    const long i = long(i0 + r);
                    const float L = q.logsumexp[i];
                    float* sr = S + r * nk;
                    for (std::size_t c = 0; c < nk; ++c) {
                        const long j = long(j0 + c);
                        float x = mk.divide ? sr[c] / mk.scale : sr[c] * mk.scale;
                        bool has = false;
                        const float add = score_bias(q.bias, mk.bias_si, mk.bias_sj, mk.alibi, q.alibi_slope,
                                                     mk.offset, i, j, has);
                        if (has) x = x + add;
                        const long lag = i + mk.offset - j;
                        const bool hidden = (mk.causal && lag < 0) || (mk.window && lag >= long(mk.window)) ||
                                            (q.allow && !q.allow[i * mk.allow_si + j * mk.allow_sj]);
                        // A row that saw no key (L = -inf): weights 0, or NaN as torch.softmax.
                        if (L == backward_neg_inf) sr[c] = mk.zero_fully_masked ? backward_neg_inf : backward_nan;
                        else sr[c] = (hidden ? backward_neg_inf : x) - L;
                    }
                    exp_inplace(sr, nk);
                }
                const float* P = S;
                const float* PN = P;
                if (q.noise) {
                    for (std::size_t r = 0; r < nq; ++r)
                        for (std::size_t c = 0; c < nk; ++c)
                            Pd[r * nk + c] = P[r * nk + c] * q.noise[long(i0 + r) * mk.noise_si + long(j0 + c) * mk.noise_sj];
                    PN = Pd;
                }
                // dV_j += (P ⊙ N)^T dO_i
                gemm(nk, a.dv, nq, PN, nk, true, dOi, a.ldo, false, t, a.dv, 1);
                add_rows(dV, a.dv, t, nk, a.dv);
                // dP = (dO_i V_j^T) ⊙ N;  dS = P ⊙ (dP - D_i), 0 where hidden (the masked_fill's
                // backward; an additive mask passes it on), through the scaling
                gemm(nq, nk, a.dv, dOi, a.ldo, false, Vj, a.ldv, true, dP, nk, 1);
                for (std::size_t r = 0; r < nq; ++r) {
                    const long i = long(i0 + r);
                    const float Di = D[h * a.Tq + i0 + r];
                    for (std::size_t c = 0; c < nk; ++c) {
                        const long j = long(j0 + c), lag = i + mk.offset - j;
                        float g = dP[r * nk + c];
                        if (q.noise) g = g * q.noise[i * mk.noise_si + j * mk.noise_sj];
                        const float ds = P[r * nk + c] * (g - Di);
                        const bool hidden = (mk.causal && lag < 0) || (mk.window && lag >= long(mk.window)) ||
                                            (q.allow && !q.allow[i * mk.allow_si + j * mk.allow_sj]);
                        dP[r * nk + c] = hidden && !mk.additive ? 0.0f : mk.divide ? ds / mk.scale : ds * mk.scale;
                    }
                }
                // dQ_i += dS K_j;  dK_j += dS^T Q_i
                gemm(nq, a.hd, nk, dP, nk, false, Kj, a.ldk, false, t, a.hd, 1);
                add_rows(q.dQ + i0 * a.lddq, a.lddq, t, nq, a.hd);
                gemm(nk, a.hd, nq, dP, nk, true, Qi, a.ldq, false, t, a.hd, 1);
                add_rows(dK, a.hd, t, nk, a.hd);
            }
        }
        for (std::size_t c = 0; c < nk; ++c) {
            std::copy_n(dK + c * a.hd, a.hd, a.dK + (j0 + c) * a.lddk);
            std::copy_n(dV + c * a.dv, a.dv, a.dV + (j0 + c) * a.lddv);
        }
    }
}

}  // namespace attn::fast
