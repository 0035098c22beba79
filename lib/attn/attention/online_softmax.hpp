/// @file online_softmax.hpp
/// @brief From three passes to one (chapter 12): safe softmax in three passes, the online
/// normaliser, and the fused online softmax + `weights @ values` of one query row, shown
/// block by block. The tiled attention forward these lead to is the `tiled` backend of the
/// attention core (sdpa.hpp, kernels/tiled_attention.hpp); the row here runs its update.
///
/// Sources: M. Milakov and N. Gimelshein, "Online normalizer calculation for softmax"
/// (2018, arXiv 1805.02867), algorithm 3; T. Dao et al., "FlashAttention: Fast and
/// Memory-Efficient Exact Attention with IO-Awareness" (2022, arXiv 2205.14135),
/// algorithm 1 (forward). Everything is float32; `exp` is SLEEF's `expf_u10`, as in
/// `attn::softmax`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "attn/core/tensor.hpp"

/// The online softmax of chapter 12, step by step.
namespace attn::flash {

// ---------------------------------------------------------------- softmax, pass by pass

/// Safe softmax over the last dimension in three passes over each row: the maximum `m`;
/// the sum `l = sum_j exp(x_j - m)` (in order); then `exp(x_j - m) / l`.
/// Shape: `[..., n] -> [..., n]`, float32. A row of all `-inf` gives NaN, as `torch.softmax`.
/// @throws std::invalid_argument when `x` is 0-d.
Tensor softmax_three_pass(const Tensor& x);

/// The running state of the online normaliser after some elements of a row.
struct Normalizer {
    float m = -std::numeric_limits<float>::infinity();  ///< the largest element seen
    float l = 0.0f;  ///< `sum_j exp(x_j - m)` over the elements seen, at the current `m`
};

/// Milakov & Gimelshein's online normaliser (algorithm 3): one pass over `x[0..n)` that keeps
/// the running maximum `m` and rescales the running sum by `exp(m_old - m_new)` whenever the
/// maximum grows: `l = l * exp(m_old - m_new) + exp(x_j - m_new)`. Returns the state after
/// the whole row; `trace`, when given, receives the state after each element. A NaN element
/// makes `l` NaN from there on (so the softmax of the row is NaN, as `torch.softmax`'s).
Normalizer online_normalizer(const float* x, std::size_t n,
                             std::vector<Normalizer>* trace = nullptr);

/// Softmax over the last dimension in two passes: `online_normalizer`, then
/// `exp(x_j - m) / l`. Shape: `[..., n] -> [..., n]`, float32.
/// @throws std::invalid_argument when `x` is 0-d.
Tensor softmax_online(const Tensor& x);

// ---------------------------------------------------------------- one row, fused

/// The running state of one query row of the fused online softmax + `weights @ values`,
/// after the keys `0..keys_seen-1`.
struct RowState {
    std::size_t keys_seen = 0;  ///< keys consumed so far
    float m = 0.0f;             ///< running maximum of the scores (`-inf` before any key)
    float l = 0.0f;             ///< running `sum_j exp(s_j - m)`
    std::vector<float> O;       ///< running `sum_j exp(s_j - m) v_j` (not yet divided by `l`)
};

/// One query row through the fused online softmax + `weights @ values`, one block of
/// `block_k` keys at a time: scores `s_j = (q . k_j) / divisor` (dot products summed in
/// order), then `m_new = max(m, max_j s_j)`, `l = l * exp(m - m_new) + sum_j exp(s_j - m_new)`,
/// `O = O * exp(m - m_new) + sum_j exp(s_j - m_new) v_j`. The output row is `O / l`.
/// `q: [d]`, `k: [T, d]`, `v: [T, dv]` float32. Returns the state after each key block
/// (the last one holds every key).
/// @throws std::invalid_argument when the shapes do not fit or `block_k` is 0.
std::vector<RowState> fused_row_trace(const Tensor& q, const Tensor& k, const Tensor& v,
                                      std::size_t block_k, float divisor = 1.0f);

// ---------------------------------------------------------------- two partial results, merged

/// Merges the attention of one query row over a second set of keys into its attention over a
/// first set, from their normalised outputs and log-sum-exps alone: with `L = m + log(l)` of
/// each part, `L_new = max(L_a, L_b) + log1p(exp(-|L_a - L_b|))` and
/// `out = out_a * exp(L_a - L_new) + out_b * exp(L_b - L_new)`, which is the attention over
/// both sets (in exact arithmetic; each merge rounds a product and a sum more than the tiled
/// kernel's running rescale). A part with `L = -inf` saw no key and leaves the other unchanged.
/// This is the `(out, lse)` form of chapter 12's update, what split-key decoding and ring
/// attention (Liu et al. 2023, arXiv 2310.01889) merge across threads or processes.
/// `out: [width]` and `lse` are updated in place with `block_out: [width]`, `block_lse`.
void merge_partial(float* out, float& lse, const float* block_out, float block_lse,
                   std::size_t width);

}  // namespace attn::flash
