/// @file attention_backward.hpp
/// @brief The backward pass of one key/value head's attention, two ways: the `fast` backend's
/// (`attend_head_backward`: the step-by-step backward's bits, block by block) and the `tiled`
/// backend's (`tiled_attend_head_backward`: FlashAttention-2's algorithm 2). Neither forms a
/// `[Tq, Tk]` tensor. `attn::attend_backward` (attention/sdpa.hpp) runs them on every head, on
/// OpenMP threads.
///
/// For one query head, with `P` the attention weights, `N` the dropout multipliers (1 without
/// dropout), `dO` the gradient of the output and `scale` applied as the forward applied it:
/// ```
/// dV = (P ⊙ N)^T dO          dP = (dO V^T) ⊙ N
/// dS = P ⊙ (dP - rowsum(dP ⊙ P))   (the softmax's Jacobian-vector product), then scaled
/// dQ = dS K                   dK = dS^T Q
/// ```
/// The query heads that share a key/value head add their `dK` and `dV` (grouped-query
/// attention). Gradients of the masks (`allow`, `bias`) are not computed: they are constants.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/kernels/fused_attention.hpp"
#include "attn/kernels/tiled_attention.hpp"

namespace attn::fast {

/// One query head of a backward pass: its queries and output gradient, where its `dQ` goes,
/// what the forward kept, and its dense masks (as `QueryHead`; null: none). Row strides are
/// in `HeadGradArgs`.
struct QueryHeadGrad {
    const float* Q = nullptr;          ///< queries `[Tq, hd]`
    const float* dO = nullptr;         ///< `dL/dO` `[Tq, dv]`
    const float* O = nullptr;          ///< the forward's output `[Tq, dv]` (tiled backward)
    const float* logsumexp = nullptr;  ///< the forward's `L` `[Tq]` (tiled backward)
    float* dQ = nullptr;               ///< receives `dL/dQ` `[Tq, hd]`
    const unsigned char* allow = nullptr;  ///< dense mask, 1 = may attend
    const float* bias = nullptr;           ///< additive mask
    const float* noise = nullptr;          ///< dropout multipliers of the forward
    float alibi_slope = 0.0f;              ///< ALiBi's slope of this head (read when `HeadMask::alibi`)
};

/// The operands shared by the query heads of one key/value head, the outputs `dK`, `dV`
/// (overwritten with the sum over the heads), and the sizes and row strides. float32.
struct HeadGradArgs {
    const float* K = nullptr;  ///< keys `[Tk, hd]`
    std::size_t ldk = 0;       ///< row stride of `K`
    const float* V = nullptr;  ///< values `[Tk, dv]`
    std::size_t ldv = 0;       ///< row stride of `V`
    float* dK = nullptr;       ///< receives `dL/dK` `[Tk, hd]`
    std::size_t lddk = 0;      ///< row stride of `dK`
    float* dV = nullptr;       ///< receives `dL/dV` `[Tk, dv]`
    std::size_t lddv = 0;      ///< row stride of `dV`
    std::size_t ldq = 0;       ///< row stride of every `Q`
    std::size_t ldo = 0;       ///< row stride of every `O` and `dO`
    std::size_t lddq = 0;      ///< row stride of every `dQ`
    std::size_t Tq = 0;        ///< queries
    std::size_t Tk = 0;        ///< keys
    std::size_t hd = 0;        ///< width of queries and keys
    std::size_t dv = 0;        ///< width of values and outputs
};

/// Scratch of `attend_head_backward`, reused between calls (it only grows).
struct BackwardWorkspace {
    HeadWorkspace forward;        ///< the forward's packed keys and blocks, reused
    std::vector<float> keys_t;    ///< keys transposed and packed: `[hd, Tk]`
    std::vector<float> values;    ///< values packed as the left operand: `[Tk, dv]`
    std::vector<float> grad_out;  ///< one block of `dO` packed: `[dv, NR]`
    std::vector<float> dp_t;      ///< one block of `dP` then `dS`, keys by queries: `[Tk, NR]`
    std::vector<float> weights_t; ///< one block of `P ⊙ N`, keys by queries: `[Tk, NR]`
    std::vector<float> noise_t;   ///< one block of the dropout multipliers: `[Tk, NR]`
    std::vector<float> grad_out_rows;  ///< one block of `dO` packed as a right operand
    std::vector<float> packed;    ///< a block packed as a left operand
    std::vector<float> queries;   ///< one block of queries packed: `[NR, hd]`
    std::vector<float> head_dk;   ///< one head's `dK` `[Tk, hd]`, before the group sum
    std::vector<float> head_dv;   ///< one head's `dV` `[Tk, dv]`
    std::vector<float> dq_t;      ///< one block of `dQ`, transposed: `[hd, NR]`
};

/// The backward pass of `attend_head` (the fast backend) for the query heads `heads[0 .. n)`
/// that share one key/value head, with the step-by-step backward's bits (attention/
/// sdpa_step.cpp): per block of `NR` queries, the weights recomputed exactly as the forward
/// computed them (scores, scaling, masks, softmax, dropout), `dP` and the softmax backward's
/// row sum in PyTorch's order (`detail::softmax_backward_sum`, lane by lane), then `dQ`, and
/// `dK`, `dV` accumulated block after block so that every element is summed over the queries
/// in order. Keys no query of a block may see are skipped (their terms are exact zeros) unless
/// an operand is not finite. `O` and `logsumexp` are not read. The products in `arithmetic`
/// (`automatic`: the calling thread's), the weights recomputed as `attend_head` computes them in
/// the same arithmetic: a backward runs in its forward's. Runs on the calling thread.
/// @throws std::invalid_argument when a row stride is smaller than its row.
void attend_head_backward(const HeadGradArgs& args, const HeadMask& mask,
                          const QueryHeadGrad* heads, std::size_t n, BackwardWorkspace& ws,
                          Arithmetic arithmetic = Arithmetic::exact);

/// Scratch of `tiled_attend_head_backward`, sized by what the input needs, reused.
struct TiledBackwardWorkspace {
    std::vector<float> D;   ///< `rowsum(dO ⊙ O)` of one head: `[Tq]`
    std::vector<float> s;   ///< one tile of scores, then weights `P`: `[block_q, block_k]`
    std::vector<float> pd;  ///< one tile of `P ⊙ N`
    std::vector<float> dp;  ///< one tile of `dP`, then `dS`
    std::vector<float> dk;  ///< `dK` of one key tile, summed over the group: `[block_k, hd]`
    std::vector<float> dv;  ///< `dV` of one key tile: `[block_k, dv]`
    std::vector<float> t;   ///< one product before it is added
};

/// FlashAttention-2's backward (Dao 2023, "FlashAttention-2: Faster Attention with Better
/// Parallelism and Work Partitioning", arXiv 2307.08691, algorithm 2) for the query heads
/// `heads[0 .. n)` that share one key/value head: `D = rowsum(dO ⊙ O)` per query row, then for
/// each tile of `block_k` keys and each tile of `block_q` queries that may see it (causal
/// tiles in the future skipped): the weights recomputed from the forward's log-sum-exp,
/// `P = exp(S - L)`; `dV += (P ⊙ N)^T dO`, `dP = (dO V^T) ⊙ N`, `dS = P ⊙ (dP - D)` scaled,
/// `dQ += dS K`, `dK += dS^T Q`. `D` equals `rowsum(dP ⊙ P)` because `sum_j dP_j P_j =
/// dO . sum_j P_j N_j v_j = dO . O`: one dot product per row instead of one per tile. Within a
/// few ulp of the step-by-step backward (other sums, `exp(S - L)` for `exp(S - m) / l`). A row
/// that sees no key has `L = -inf`: zeros with `mask.zero_fully_masked`, else NaN, as the
/// step path. Runs on the calling thread.
/// @throws std::invalid_argument when a tile size is 0 or a row stride is smaller than its
/// row.
void tiled_attend_head_backward(const HeadGradArgs& args, const HeadMask& mask,
                                const QueryHeadGrad* heads, std::size_t n,
                                const TileSizes& tiles, TiledBackwardWorkspace& ws);

}  // namespace attn::fast
