// attn::fast::tiled_attend_head (tiled_attention.hpp): FlashAttention's forward, tile by tile.
//
// For each query head, each tile of queries i0 .. i0 + nq - 1:
//   1. m = -inf, l = 0, O = 0 for every row;
//   2. for each key tile j0 .. j0 + nk - 1 that some row may see (causal tiles in the future
//      are skipped): the key tile transposed; per row, the scores (q . k in order over the
//      head's columns), scaled, biased and masked; then absorb_tile updates m, l, O;
//   3. O / l per row (0 or NaN for a row that saw no key, NaN for a row that saw a NaN).
// Buffers are sized before the tile loops (never inside the target_clones function, from
// which an exception could not unwind).
#include "attn/kernels/tiled_attention.hpp"
#include "attn/kernels/head_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <sleef.h>

// sleef.h declares the FMA variant only when compiled with FMA enabled; the library exports it.
extern "C" float Sleef_expf1_u10purecfma(float);

namespace attn::fast {

namespace {

constexpr float tile_neg_inf = -std::numeric_limits<float>::infinity();
constexpr float tile_nan = std::numeric_limits<float>::quiet_NaN();

// exp as attn::softmax takes it (SLEEF's expf_u10, PyTorch's vectorised CPU exp).
float exp_u10(float x) {
    static const bool has_fma = __builtin_cpu_supports("fma");
    return has_fma ? Sleef_expf1_u10purecfma(x) : Sleef_expf1_u10purec(x);
}

// absorb_tile (tiled_attention.hpp), inlined into each clone of the kernel below.
inline __attribute__((always_inline)) void absorb(float* s, std::size_t nk, const float* V,
                                                  std::size_t ldv, std::size_t dv,
                                                  const float* noise, long noise_sj, float& m,
                                                  float& l, float* O, unsigned char& saw_nan,
                                                  bool skip_zeros = true) {
    float tile_max = tile_neg_inf;
    for (std::size_t c = 0; c < nk; ++c) {
        tile_max = std::max(tile_max, s[c]);
        saw_nan |= std::isnan(s[c]);
    }
    const float m_new = std::max(m, tile_max);
    if (m_new == tile_neg_inf) return;  // the row may attend to nothing yet
    const float alpha = exp_u10(m - m_new);  // exp(-inf) = 0 on the first tile
    float sum = 0.0f;
    for (std::size_t c = 0; c < nk; ++c) {
        s[c] = exp_u10(s[c] - m_new);
        sum += s[c];
    }
    l = l * alpha + sum;
    if (alpha != 1.0f)
        for (std::size_t e = 0; e < dv; ++e) O[e] *= alpha;
    for (std::size_t c = 0; c < nk; ++c) {
        const float p = noise ? s[c] * noise[long(c) * noise_sj] : s[c];
        if (p == 0.0f && skip_zeros) continue;
        const float* vr = V + c * ldv;
        for (std::size_t e = 0; e < dv; ++e) O[e] += p * vr[e];
    }
    m = m_new;
}

struct Tile {
    float* kt;
    float* s;
    float* m;
    float* l;
    float* O;
    unsigned char* nan;
    const unsigned char* bad_column;  // [dv]: a column of V holds a value that is not finite
};

// One query head, tile by tile. Compiled twice, for AVX2 (8 lanes) and for the baseline,
// chosen at run time; neither uses fused multiply-adds (AVX2 alone does not include FMA), so
// both give the same bits.
__attribute__((target_clones("avx2", "default")))
void attend_one(const HeadArgs& a, const HeadMask& mk, const QueryHead& q, const TileSizes& ts,
                const Tile& w, bool skip) {
    const std::size_t Bq = std::min(ts.block_q, a.Tq), Bk = std::min(ts.block_k, a.Tk);
    for (std::size_t i0 = 0; i0 < a.Tq; i0 += Bq) {
        const std::size_t nq = std::min(Bq, a.Tq - i0);
        std::fill_n(w.m, nq, tile_neg_inf);
        std::fill_n(w.l, nq, 0.0f);
        std::fill_n(w.O, nq * a.dv, 0.0f);
        std::fill_n(w.nan, nq, 0);
        for (std::size_t j0 = 0; j0 < a.Tk; j0 += Bk) {
            // The whole tile in the future of the tile's last query: skipped.
            if (skip && mk.causal && long(j0) > long(i0 + nq - 1) + mk.offset) break;
            const std::size_t nk = std::min(Bk, a.Tk - j0);
            for (std::size_t c = 0; c < nk; ++c)
                for (std::size_t e = 0; e < a.hd; ++e) w.kt[e * nk + c] = a.K[(j0 + c) * a.ldk + e];
            for (std::size_t r = 0; r < nq; ++r) {
                const std::size_t i = i0 + r;
                float* sr = w.s + r * nk;
                const float* qr = q.Q + i * a.ldq;
                std::fill_n(sr, nk, 0.0f);
                // (q . k_j) summed in order over e, as the reference BLAS sums a product.
                for (std::size_t e = 0; e < a.hd; ++e) {
                    const float x = qr[e];
                    const float* ke = w.kt + e * nk;
                    for (std::size_t c = 0; c < nk; ++c) sr[c] += x * ke[c];
                }
                for (std::size_t c = 0; c < nk; ++c) {
                    const long j = long(j0 + c);
                    float x = mk.divide ? sr[c] / mk.scale : sr[c] * mk.scale;
                    bool has = false;
                    const float add = score_bias(q.bias, mk.bias_si, mk.bias_sj, mk.alibi, q.alibi_slope,
                                                 mk.offset, long(i), j, has);
                    if (has) x = x + add;
                    const long lag = long(i) + mk.offset - j;  // query pos - key pos
                    const bool hidden = (mk.causal && lag < 0) ||
                                        (mk.window && lag >= long(mk.window)) ||
                                        (q.allow && !q.allow[long(i) * mk.allow_si + j * mk.allow_sj]);
                    sr[c] = hidden ? tile_neg_inf : x;
                }
                const float* noise = q.noise ? q.noise + long(i) * mk.noise_si + long(j0) * mk.noise_sj
                                             : nullptr;
                absorb(sr, nk, a.V + j0 * a.ldv, a.ldv, a.dv, noise, mk.noise_sj, w.m[r],
                       w.l[r], w.O + r * a.dv, w.nan[r], skip);
            }
        }
        for (std::size_t r = 0; r < nq; ++r) {
            // A row with nothing to attend to has l = 0: zeros (masked_softmax) or NaN
            // (torch.softmax), never 0/0; a row that met a NaN score is NaN, as the step
            // path; a NaN value multiplied in has made O NaN already.
            const bool empty = w.l[r] == 0.0f && w.m[r] == tile_neg_inf;
            const float inv = w.nan[r] ? tile_nan
                              : empty  ? (mk.zero_fully_masked ? 0.0f : tile_nan)
                                       : 1.0f / w.l[r];
            float* o = q.O + (i0 + r) * a.ldo;
            for (std::size_t e = 0; e < a.dv; ++e)
                // An empty row is the sum of 0 * v_j: NaN in a column with a NaN or inf value.
                o[e] = empty && !w.nan[r] ? (w.bad_column[e] ? tile_nan : inv) : w.O[r * a.dv + e] * inv;
            if (q.logsumexp)
                q.logsumexp[i0 + r] = w.nan[r] ? tile_nan : empty ? tile_neg_inf : w.m[r] + std::log(w.l[r]);
        }
    }
}

}  // namespace

void absorb_tile(float* s, std::size_t nk, const float* V, std::size_t ldv, std::size_t dv,
                 const float* noise, long noise_stride, float& m, float& l, float* O,
                 bool& saw_nan) {
    unsigned char nan = saw_nan;
    absorb(s, nk, V, ldv, dv, noise, noise_stride, m, l, O, nan);
    saw_nan = nan;
}

void tiled_attend_head(const HeadArgs& a, const HeadMask& mask, const QueryHead* heads,
                       std::size_t n, const TileSizes& tiles, TiledWorkspace& ws) {
    if (tiles.block_q == 0 || tiles.block_k == 0)
        throw std::invalid_argument("fast::tiled_attend_head: expected block_q and block_k > 0, got " +
                                    std::to_string(tiles.block_q) + " and " +
                                    std::to_string(tiles.block_k));
    detail::check_strides("fast::tiled_attend_head", a);
    if (a.Tq == 0) return;
    if (a.Tk == 0) {  // the softmax of an empty row, times [0, dv] values, is 0
        for (std::size_t h = 0; h < n; ++h) {
            for (std::size_t i = 0; i < a.Tq; ++i) std::fill_n(heads[h].O + i * a.ldo, a.dv, 0.0f);
            if (heads[h].logsumexp) std::fill_n(heads[h].logsumexp, a.Tq, tile_neg_inf);
        }
        return;
    }
    // Scratch sized by what the input needs, not by the (user-given) block sizes.
    const std::size_t Bq = std::min(tiles.block_q, a.Tq), Bk = std::min(tiles.block_k, a.Tk);
    if (ws.nan.size() < Bq + a.dv) ws.nan.resize(Bq + a.dv);
    // A value that is not finite makes a hidden key's 0 * v NaN in the step path (and in
    // PyTorch's math path): then no tile and no zero weight is skipped.
    unsigned char* bad = ws.nan.data() + Bq;
    std::fill_n(bad, a.dv, 0);
    bool finite = true;
    for (std::size_t j = 0; j < a.Tk; ++j)
        for (std::size_t e = 0; e < a.dv; ++e)
            if (!std::isfinite(a.V[j * a.ldv + e])) bad[e] = 1, finite = false;
    const Tile w{detail::grow(ws.keys_t, std::max<std::size_t>(a.hd, 1) * Bk), detail::grow(ws.scores, Bq * Bk),
                 detail::grow(ws.m, Bq), detail::grow(ws.l, Bq), detail::grow(ws.O, std::max<std::size_t>(Bq * a.dv, 1)),
                 ws.nan.data(), bad};
    for (std::size_t h = 0; h < n; ++h) attend_one(a, mask, heads[h], tiles, w, finite);
}

}  // namespace attn::fast
