/// @file fused_attention.hpp
/// @brief The fast exact attention of one head: the step-by-step path's bits without its
/// `[Tq, Tk]` intermediates. The `fast` backend of `attn::scaled_dot_product_attention`
/// (attention/sdpa.hpp) runs it for every head, on OpenMP threads.
///
/// How it keeps the bits of the step-by-step path (attention/sdpa_step.cpp):
/// - the scores `q_i . k_j` and the products `weights @ values` go through the packed
///   kernels of `fast::gemm`, which sum every element in the reference BLAS's order
///   (gemm.hpp);
/// - per block of `NR` queries (one SIMD lane per query), only the keys some query of the block
///   may see are computed: a hidden key's weight is an exact zero, and adding `0 * v` to a sum
///   that is never `-0` changes nothing, so skipping it is exact. The scores are stored keys by
///   queries, so that the block is, as it stands, the packed right operand of the product with
///   the values;
/// - the softmax of a block (`SoftmaxBlock`) makes each query's float operations in the step
///   path's order: the scaling (`* scale` or `/ scale`), the additive mask, `-inf` where the
///   key is hidden, the row maximum, SLEEF's `expf_u10` (vector kernels equal bit for bit to
///   the scalar one), the sum in `vec::reduce_all`'s 8-lane order (key `j` in lane `j % 8`;
///   the lanes added in order for rows of fewer than 8 keys, as a tree from 8: `keys`),
///   the multiplication by `1 / sum`; then the dropout multipliers.
/// When a value is not finite, a hidden key's `0 * v` is NaN in the step path, so the head is
/// computed over every key, without skipping: the bits stay equal for every input.
///
/// In `Arithmetic::fma` (kernels/arithmetic.hpp) the two products add each term by a fused
/// multiply-add, in the same order; everything else is unchanged. Skipping a hidden key stays
/// exact (`fma(0, v, c) = c` for a sum that is never `-0`) and the softmax's sum puts key `j` in
/// lane `j % 8` whatever the tile, so the result is that of the step-by-step path with
/// `c = fma(a, b, c)` products, the same bits with every instruction set's kernels.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/kernels/arithmetic.hpp"

namespace attn::fast {

/// Which keys a query may see, how the scores are scaled, and where each query head's dense
/// masks lie: the mask of `attn::SDPAOptions` for one head, in element strides over the
/// `[Tq, Tk]` scores.
struct HeadMask {
    /// With `causal`, query `i` sees key `j` only when `j <= i + offset`.
    bool causal = false;
    /// With `window > 0`, query `i` sees key `j` only when `j > i + offset - window`.
    std::size_t window = 0;
    /// The position of the first query minus that of the first key (0 for PyTorch's
    /// `is_causal`; the cached tokens' count when new queries attend to a cache).
    long offset = 0;
    // Strides of the dense masks of `QueryHead`: element `(i, j)` at `i * s_i + j * s_j`
    // (a stride of 0 broadcasts).
    long allow_si = 0;  ///< `QueryHead::allow`'s stride over queries
    long allow_sj = 0;  ///< `QueryHead::allow`'s stride over keys
    long bias_si = 0;   ///< `QueryHead::bias`'s stride over queries
    long bias_sj = 0;   ///< `QueryHead::bias`'s stride over keys
    long noise_si = 0;  ///< `QueryHead::noise`'s stride over queries
    long noise_sj = 0;  ///< `QueryHead::noise`'s stride over keys
    bool divide = false;  ///< scores `/ scale` (Raschka's modules) instead of `* scale`
    float scale = 1.0f;   ///< the multiplier or the divisor
    bool zero_fully_masked = false;  ///< a query that sees no key gives zeros, not NaN
    /// The backward passes the softmax's gradient on to hidden keys (`MaskOp::additive`)
    /// instead of the masked_fill's 0.
    bool additive = false;
    /// ALiBi: each query head's `QueryHead::alibi_slope` biases its scores (`alibi_term`),
    /// computed where the scores are, without a `[Tq, Tk]` tensor.
    bool alibi = false;
};

/// ALiBi's term for a query `lag` positions after the key (`lag = query pos - key pos`, negative
/// for a key in the query's future): `-(slope * |lag|)`, float32, the distance exact up to 2^24
/// (Press et al. 2022; symmetric in `lag`, as MosaicML's MPT writes it for keys after the query).
inline float alibi_term(float slope, long lag) {
    // |lag| as unsigned: defined for every long (the core keeps positions below 2^62)
    const unsigned long distance = lag < 0 ? 0UL - static_cast<unsigned long>(lag) : static_cast<unsigned long>(lag);
    return -(slope * static_cast<float>(distance));
}

/// ALiBi's terms of one block of the fused kernel,
/// `out[r * nr + c] = alibi_term(slope, lag0 + c - r)` for `r < rows`, `c < nr` (`lag0`: the
/// first query's position minus the first key's), in a loop the compiler vectorises: the
/// distance as the absolute value of `float(lag0 - r) + c`, the same float as `alibi_term`'s
/// while every distance of the block is below 2^24. Returns false, writing nothing, when one is
/// not (the caller then takes `score_bias` element by element).
inline bool alibi_block(float* out, std::size_t rows, std::size_t nr, long lag0, float slope) {
    constexpr long exact = long{1} << 24;
    const long lo = lag0 - long(rows) + 1, hi = lag0 + long(nr) - 1;
    if (rows == 0 || lo <= -exact || hi >= exact) return rows == 0;
    float lane[64];
    for (std::size_t c = 0; c < nr && c < 64; ++c) lane[c] = static_cast<float>(c);
    if (nr > 64) return false;
    for (std::size_t r = 0; r < rows; ++r) {
        const float base = static_cast<float>(lag0 - long(r));
        float* o = out + r * nr;
        for (std::size_t c = 0; c < nr; ++c) {
            const float d = base + lane[c];
            o[c] = -(slope * (d < 0.0f ? -d : d));
        }
    }
    return true;
}

/// What score `(i, j)` of one query head has added after its scaling: the dense additive mask
/// `bias` (element at `i * bias_si + j * bias_sj`; null: none), ALiBi's term (when `alibi`),
/// or their sum `bias + alibi_term` (ALiBi on top of a given additive mask, as if the two were
/// one mask); 0 and `has` false when neither. `offset` is `HeadMask::offset`.
inline float score_bias(const float* bias, long bias_si, long bias_sj, bool alibi, float slope, long offset,
                        long i, long j, bool& has) {
    has = bias || alibi;
    if (!alibi) return bias ? bias[i * bias_si + j * bias_sj] : 0.0f;
    const float a = alibi_term(slope, i + offset - j);
    return bias ? bias[i * bias_si + j * bias_sj] + a : a;
}

/// One query head: its `[Tq, hd]` queries and `[Tq, dv]` output (row strides in `HeadArgs`),
/// and its dense masks, each optional (null: none): `allow` (bool as bytes, 1 = may attend),
/// `bias` (float32, added after the scaling), `noise` (float32 dropout multipliers
/// `keep * (1 / (1 - p))`, multiplied into the weights).
struct QueryHead {
    const float* Q = nullptr;              ///< queries `[Tq, hd]`
    float* O = nullptr;                    ///< output `[Tq, dv]`
    const unsigned char* allow = nullptr;  ///< dense mask, 1 = may attend
    const float* bias = nullptr;           ///< additive mask
    const float* noise = nullptr;          ///< dropout multipliers
    float alibi_slope = 0.0f;              ///< ALiBi's slope of this head (read when `HeadMask::alibi`)
    /// When not null, receives each query row's log-sum-exp `m + log(l)` (`m` the row's largest
    /// scaled score, `l = sum_j exp(s_j - m)`; `-inf` for a row that sees no key): `[Tq]`, what
    /// the backward of chapter 20 reads.
    float* logsumexp = nullptr;
};

/// The operands shared by the query heads of one key/value head: `[Tk, hd]` keys and
/// `[Tk, dv]` values, and the sizes and row strides of the queries and outputs (a head's
/// columns of a `[T, H * hd]` projection have row stride `H * hd`). float32.
struct HeadArgs {
    const float* K = nullptr;  ///< keys `[Tk, hd]`
    std::size_t ldk = 0;       ///< row stride of `K`
    const float* V = nullptr;  ///< values `[Tk, dv]`
    std::size_t ldv = 0;       ///< row stride of `V`
    std::size_t ldq = 0;       ///< row stride of every `QueryHead::Q`
    std::size_t ldo = 0;       ///< row stride of every `QueryHead::O`
    std::size_t Tq = 0;        ///< queries
    std::size_t Tk = 0;        ///< keys
    std::size_t hd = 0;        ///< width of queries and keys
    std::size_t dv = 0;        ///< width of values and outputs
};

/// Scratch of `attend_head`, reused between calls (it only grows): the keys and the transposed
/// values packed for the kernels, one block of queries, its scores, masks and context.
struct HeadWorkspace {
    std::vector<float> keys;      ///< keys packed as the left operand: `[Tk, hd]`
    std::vector<float> values_t;  ///< values transposed and packed: `[dv, Tk]`
    std::vector<float> queries;   ///< one block of queries packed: `[hd, NR]`
    std::vector<float> scores_t;  ///< one block of scores, keys by queries: `[Tk, NR]`
    std::vector<float> context_t; ///< one block of context, transposed: `[dv, NR]`
    std::vector<unsigned char> allow_t;  ///< one block of the dense mask: `[Tk, NR]`
    std::vector<float> bias_t;    ///< one block of the additive mask: `[Tk, NR]`
};

/// The stages of `attend_head`, as bits; a benchmark may run one at a time (on what the
/// workspace holds from the previous call), the attention runs them all.
enum HeadStage : unsigned {
    stage_scores = 1u,          ///< `queries @ keys^T` on the keys each block may see
    stage_softmax = 2u,         ///< scaling, masks, softmax and dropout
    stage_weights_values = 4u,  ///< `weights @ values` into the output
    stage_all = 7u,
};

/// Attention of the query heads `heads[0 .. n)` that share one key/value head, with the
/// step-by-step path's bits (see the file comment): for each,
/// `O[i, :] = dropout(softmax_j(masked((q_i . k_j) scaled + bias))) @ V`, float32. The keys and
/// values are packed once for all `n` (grouped-query attention shares them among a group).
/// The products in `arithmetic` (`automatic`: the calling thread's). Runs on the calling
/// thread.
/// @throws std::invalid_argument when a row stride is smaller than its row (`ldq < hd`,
/// `ldk < hd`, `ldv < dv`, `ldo < dv`).
void attend_head(const HeadArgs& args, const HeadMask& mask, const QueryHead* heads,
                 std::size_t n, HeadWorkspace& ws, unsigned stages = stage_all,
                 Arithmetic arithmetic = Arithmetic::exact);

/// One block of the fused softmax (for tests): the scores of up to `NR` queries against the
/// keys `j0 .. j0 + rows - 1`, stored keys by queries, `St[r * NR + c]` for query `i0 + c`
/// and key `j0 + r`; `allow` and `bias`, when given, in the same layout.
struct SoftmaxBlock {
    std::size_t rows = 0;   ///< keys in the block
    std::size_t j0 = 0;     ///< the first key's column: key `j` is added in lane `j % 8` of the sum
    /// The softmax's row length, hidden keys included (the `Tk` of the whole attention): with
    /// fewer than 8 keys PyTorch adds a row's exponentials in order, with 8 or more it adds
    /// its 8 lanes as a tree (`vec::reduce_all`, core/reduce.hpp `reduce_all_sum`).
    std::size_t keys = 0;
    bool causal = false;    ///< query `i0 + c` sees key `j` only when `j <= diag + c`
    std::size_t window = 0; ///< when > 0, query `i0 + c` sees key `j` only when `j > diag + c - window`
    long diag = 0;          ///< `i0 + offset` (see `HeadMask::offset`)
    const unsigned char* allow = nullptr;  ///< dense mask, 1 = may attend (none when null)
    const float* bias = nullptr;           ///< additive mask (none when null)
    bool divide = false;  ///< `x / scale` instead of `x * scale`
    float scale = 1.0f;   ///< the multiplier or the divisor
    bool zero_fully_masked = false;  ///< a query that sees no key gets weights 0, not NaN
    float* row_max = nullptr;  ///< when not null, receives each lane's maximum `m`: `[NR]`
    float* row_sum = nullptr;  ///< when not null, receives each lane's `sum exp(s - m)`: `[NR]`
};

/// The number of queries in one block: the kernel's panel width `NR` (32 with AVX-512, 16 with
/// AVX2, 8 portable).
std::size_t softmax_block_width();

/// The softmax of one block in place, as `attend_head` runs it: on return `St` holds the
/// attention weights of each query (exact zeros for hidden keys).
void softmax_block(float* St, const SoftmaxBlock& block);

/// `Sleef_expf_u10` of each `x[i]` with the vector kernel the softmax uses (for the
/// bit-for-bit test against the scalar oracle). In place, any length.
void exp_inplace(float* x, std::size_t n);

}  // namespace attn::fast
