// attn::fast::attend_head (fused_attention.hpp): one key/value head's attention with the bits
// of the step-by-step path (in Arithmetic::fma: with fused products), in blocks of NR query
// rows, on packed operands.
//
// Per query head, per block of NR queries i0 .. i1-1:
//   1. the keys the block may see, [jlo, jhi): from the band mask (causal, window), else all;
//      jlo rounded down to the kernel's MR rows (the extra keys are hidden, exact zeros);
//   2. scores^T [jhi - jlo, NR] = keys[jlo:jhi] @ queries^T (packed kernels, in-order sums);
//   3. the softmax of the block (kernel_impl.hpp's softmax_block), then dropout multipliers;
//   4. context^T [dv, NR] = values^T[:, jlo:jhi] @ weights^T, copied out row by row.
// A call of at most kSkinnyRows queries (a decode step) packs nothing: its scores are the
// skinny kernel's q . k of each key row where it lies (then laid out as the block's), its
// context the weights times each value row where it lies; every sum in the same order, the
// same bits. The keys and values are read once, where packing them would copy them all. One
// query that sees all its keys unmasked keeps its scores in a row and takes the row's softmax
// (softmax_row: the block's lane 0, without the other NR - 1 lanes' exponentials).
#include "attn/kernels/fused_attention.hpp"
#include "attn/kernels/head_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/kernels/driver.hpp"

namespace attn::fast {

std::size_t softmax_block_width() { return detail::active().nr; }

void softmax_block(float* St, const SoftmaxBlock& block) { detail::active().softmax_block(St, block); }

void exp_inplace(float* x, std::size_t n) { detail::active().exp(x, n); }

void attend_head(const HeadArgs& a, const HeadMask& m, const QueryHead* heads, std::size_t n,
                 HeadWorkspace& ws, unsigned stages, Arithmetic arithmetic) {
    detail::check_strides("fast::attend_head", a);
    constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr float inf = std::numeric_limits<float>::infinity();
    if (a.Tq == 0) return;
    if (a.Tk == 0) {  // no key at all: the softmax of an empty row, times [0, dv] values, is 0
        for (std::size_t h = 0; h < n; ++h) {
            for (std::size_t i = 0; i < a.Tq; ++i) std::fill_n(heads[h].O + i * a.ldo, a.dv, 0.0f);
            if (heads[h].logsumexp) std::fill_n(heads[h].logsumexp, a.Tq, -inf);
        }
        return;
    }
    const detail::Kernels& kn = detail::active(arithmetic);
    const std::size_t mr = kn.mr, nr = kn.nr, Tk = a.Tk;
    const std::size_t Tkm = (Tk + mr - 1) / mr * mr, dvm = (a.dv + mr - 1) / mr * mr;
    const bool few = a.Tq <= detail::kSkinnyRows;  // a decode step: nothing packed
    float* Kp = few ? nullptr : detail::grow(ws.keys, Tkm * std::max<std::size_t>(a.hd, 1));
    float* Vt = few ? nullptr : detail::grow(ws.values_t, dvm * Tk);
    // The queries' panel; or, for a few queries, their scores row by row before the block's layout.
    float* Qb = detail::grow(ws.queries, few ? detail::kSkinnyRows * (Tkm + mr) : std::max<std::size_t>(a.hd, 1) * nr);
    float* St = detail::grow(ws.scores_t, (Tkm + mr) * nr);
    float* Ct = detail::grow(ws.context_t, dvm * nr);
    if (ws.allow_t.size() < (Tkm + mr) * nr) ws.allow_t.resize((Tkm + mr) * nr);
    float* Bt = detail::grow(ws.bias_t, (Tkm + mr) * nr);
    if (!few && (stages & stage_scores)) detail::pack_a_panels(kn, Tk, a.hd, a.K, a.ldk, false, Kp);
    if (!few && (stages & stage_weights_values)) detail::pack_a_panels(kn, a.dv, Tk, a.V, a.ldv, true, Vt);
    // A value that is not finite makes a hidden key's 0 * v NaN in the step path: then no key
    // may be skipped. (Checked on the packed copy when there is one: every value or a zero,
    // contiguous and in cache, where the values' own rows are scattered through the
    // projection's; at T = 1024 the scan of the rows took a tenth of the scores' time.)
    // Asked only when a block's band would skip a key: a decode step's one query sees every
    // cached key, and scanning the values would read them a second time.
    int finite = -1;  // not yet known
    const auto may_skip = [&] {
        if (finite < 0)
            finite = !few && (stages & stage_weights_values) ? detail::all_finite(Vt, 1, dvm * Tk, dvm * Tk)
                                                             : detail::all_finite(a.V, Tk, a.dv, a.ldv);
        return finite == 1;
    };

    for (std::size_t h = 0; h < n; ++h) {
        const QueryHead& q = heads[h];
        for (std::size_t i0 = 0; i0 < a.Tq; i0 += nr) {
            const std::size_t lanes = std::min(nr, a.Tq - i0), i1 = i0 + lanes;
            long lo = 0, hi = long(Tk);
            detail::key_range(m, Tk, i0, i1, lo, hi);
            const bool banded = lo > 0 || hi < long(Tk);
            if (banded && !may_skip()) lo = 0, hi = long(Tk);
            // One query that sees every key unmasked (a decode step's): its scores stay a row.
            const bool row = few && lanes == 1 && !banded && !q.allow && !q.bias && !m.alibi;
            if (hi <= lo) {  // no query of the block sees any key
                const float fill = m.zero_fully_masked ? 0.0f : nan;
                for (std::size_t c = 0; c < lanes; ++c) std::fill_n(q.O + (i0 + c) * a.ldo, a.dv, fill);
                if (q.logsumexp) std::fill_n(q.logsumexp + i0, lanes, -inf);
                continue;
            }
            const std::size_t jlo = std::size_t(lo) / mr * mr, rows = std::size_t(hi) - jlo;
            if ((stages & stage_scores) && few) {
                // scores [lanes, rows] = queries @ keys[jlo:hi]^T, w keys at a time, then as
                // the block holds them: scores^T [rows, nr].
                for (std::size_t j0 = 0; j0 < rows; j0 += kn.w)
                    kn.skinny_nt(lanes, std::min(kn.w, rows - j0), a.hd, q.Q + i0 * a.ldq, a.ldq,
                                 a.K + (jlo + j0) * a.ldk, a.ldk, Qb + j0, rows, nullptr);
                for (std::size_t r = 0; !row && r < rows; ++r)
                    for (std::size_t c = 0; c < lanes; ++c) St[r * nr + c] = Qb[c * rows + r];
            } else if (stages & stage_scores) {
                // scores^T [rows, nr] = keys[jlo:hi] @ queries[i0:i1]^T: each element the dot
                // product q_i . k_j summed over the head's columns in order, as sgemm does.
                detail::pack_b_panels(kn, a.hd, lanes, q.Q + i0 * a.ldq, a.ldq, /*trans_b=*/true, Qb);
                detail::gemm_prepacked(kn, rows, nr, a.hd, Kp + jlo * a.hd, a.hd, Qb, a.hd, St, nr);
            }
            if (stages & stage_softmax) {
                SoftmaxBlock b = detail::masked_block(m, q, a.Tk, i0, lanes, jlo, rows, nr, ws.allow_t.data(), Bt);
                float row_max[64], row_sum[64];  // NR <= 32
                if (q.logsumexp) b.row_max = row_max, b.row_sum = row_sum;
                if (row)
                    kn.softmax_row(Qb, b);
                else
                    kn.softmax_block(St, b);
                if (q.logsumexp)
                    for (std::size_t c = 0; c < lanes; ++c)
                        q.logsumexp[i0 + c] = row_max[c] == -inf || row_sum[c] == 0.0f
                                                  ? -inf
                                                  : row_max[c] + std::log(row_sum[c]);
                if (q.noise && row)
                    for (std::size_t r = 0; r < rows; ++r) Qb[r] *= q.noise[long(i0) * m.noise_si + long(jlo + r) * m.noise_sj];
                else if (q.noise)  // dropout: weights * (keep * 1 / (1 - p))
                    for (std::size_t r = 0; r < rows; ++r)
                        for (std::size_t c = 0; c < lanes; ++c)
                            St[r * nr + c] *= q.noise[long(i0 + c) * m.noise_si + long(jlo + r) * m.noise_sj];
            }
            if ((stages & stage_weights_values) && few) {
                // context [lanes, dv] = weights [rows, lanes]^T @ values[jlo:hi]: in key order.
                kn.skinny_nn(lanes, a.dv, rows, row ? Qb : St, row ? 1 : nr, a.V + jlo * a.ldv, a.ldv, q.O + i0 * a.ldo,
                             a.ldo);
            } else if (stages & stage_weights_values) {
                // context^T [dv, nr] = values^T[:, jlo:hi] @ weights^T: sums over keys in order.
                detail::gemm_prepacked(kn, a.dv, nr, rows, Vt + jlo * mr, Tk, St, rows, Ct, nr);
                kn.transpose(a.dv, lanes, Ct, nr, q.O + i0 * a.ldo, a.ldo);
            }
        }
    }
}

}  // namespace attn::fast
