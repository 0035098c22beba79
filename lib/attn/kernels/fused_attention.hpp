/// @file fused_attention.hpp
/// @brief The fast forward of `MultiHeadAttention`: the same bits as `forward_steps`, without
/// its `[b, H, T, T]` intermediates.
///
/// `MultiHeadAttention::operator()` calls `fast::multihead_forward` whenever
/// `fast::supports` says the fast path computes exactly what `forward_steps` computes, and
/// `forward_steps(...).context_vec` otherwise. How it keeps the bits:
/// - the four projections and the two products per head go through `fast::gemm`, which sums
///   every element in the reference BLAS's order (gemm.hpp);
/// - per head (`causal_head`) and per block of queries, the scores of the visible keys only
///   (the causal upper triangle is never computed: its weights are exact zeros, and adding
///   `0 * v` to a sum that is never `-0` changes nothing), stored keys by queries so that
///   one SIMD lane is one query; `fast::causal_softmax_columns` in place (`masked_fill(-inf)`,
///   `/ sqrt(head_dim)`, PyTorch's softmax, with a vector SLEEF `exp` equal bit for bit to
///   the scalar one); then the weights times the values, straight into the merged
///   `[b, T, d_out]` context;
/// - biases added after each product, as `Linear` does (`y = x W^T; y += b`).
/// Workspaces are kept per thread between calls (grow-only), so repeated calls allocate
/// only the result. Threads: OpenMP (`OMP_NUM_THREADS`); the result does not depend on their
/// number.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/attention/multihead.hpp"
#include "attn/core/tensor.hpp"

namespace attn::fast {

/// Scratch of `causal_head`, reused between calls (it only grows): the keys and the
/// transposed values packed for the kernels, one block of queries, its scores and its
/// context.
struct HeadWorkspace {
    std::vector<float> keys;      ///< keys packed as the left operand: `[T, hd]`
    std::vector<float> values_t;  ///< values transposed and packed: `[hd, T]`
    std::vector<float> queries;   ///< one block of queries packed: `[hd, NR]`
    std::vector<float> scores_t;  ///< one block of scores, keys by queries: `[T, NR]`
    std::vector<float> context_t; ///< one block of context, transposed: `[hd, NR]`
};

/// The stages of `causal_head`, as bits; a benchmark may run one at a time (on what the
/// workspace holds from the previous call), the attention runs them all.
enum HeadStage : unsigned {
    stage_scores = 1u,          ///< `queries @ keys^T` on the visible keys of each block
    stage_softmax = 2u,         ///< the causal mask, `/ divisor` and the softmax
    stage_weights_values = 4u,  ///< `weights @ values` into the context
    stage_all = 7u,
};

/// One head of `MultiHeadAttention`'s causal attention with `forward_steps`' bits:
/// `ctx[i, :] = softmax_j(masked(q_i . k_j) / divisor) @ v` for `j <= i`, in float32.
/// `Q`, `K`, `V`: `[T, hd]` with row stride `ld` (a head's columns of the `[T, d_out]`
/// projections); `ctx`: `[T, hd]` with row stride `ldc`. Runs on the calling thread.
/// `stages` other than `stage_all` are for benchmarks of the pieces.
/// @throws std::invalid_argument when `ld < hd` or `ldc < hd`.
void causal_head(const float* Q, const float* K, const float* V, std::size_t T, std::size_t hd,
                 std::size_t ld, float divisor, float* ctx, std::size_t ldc, HeadWorkspace& ws,
                 unsigned stages = stage_all);

/// Whether `multihead_forward(m, x)` equals `m.forward_steps(x).context_vec` for every
/// finite `x` with `T` tokens: dropout draws nothing (evaluation mode, or `p == 0`), and the
/// top-left `[T, T]` corner of `m.mask` is the causal mask (nonzero exactly above the
/// diagonal), as the constructors build it. `T > context_length` gives false (the step path
/// then throws its error).
bool supports(const MultiHeadAttention& m, std::size_t T);

/// `MultiHeadAttention` forward, fast: `x: [b, T, d_in]` float32 -> `[b, T, d_out]`, bit for
/// bit `m.forward_steps(x).context_vec` when `supports(m, T)` (tests/test_fast_path.cpp);
/// with infinities or NaNs in `x` or the weights the results may differ. Draws nothing.
/// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, when `T > context_length`
/// (the messages of `forward_steps`), or when `!supports(m, T)` otherwise (dropout active
/// or a mask that is not causal).
Tensor multihead_forward(const MultiHeadAttention& m, const Tensor& x);

}  // namespace attn::fast
