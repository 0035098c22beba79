/// @file flash.hpp
/// @brief From three passes to one: safe softmax in three passes, the online normaliser,
/// the fused online softmax + `weights @ values`, and the tiled attention forward
/// (FlashAttention's, without its GPU memory hierarchy) whose `[T, T]` scores never exist.
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
#include <optional>
#include <vector>

#include "attn/attention/multihead.hpp"
#include "attn/core/tensor.hpp"

/// The online softmax and the tiled attention forward of chapter 12.
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
/// the whole row; `trace`, when given, receives the state after each element.
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

// ---------------------------------------------------------------- the tiled forward

/// The tiled forward's settings (names as FlashAttention's `B_r`, `B_c`, and PyTorch's
/// `is_causal`): `flash::Config{.block_q = 64, .block_k = 64, .is_causal = true}`.
struct Config {
    std::size_t block_q = 64;  ///< query rows per tile (`B_r`)
    std::size_t block_k = 64;  ///< key/value rows per tile (`B_c`)
    bool is_causal = false;    ///< query `i` sees keys `j <= i` (top-left aligned)

    /// @throws std::invalid_argument naming the field and its value when a block size is 0.
    void validate() const;
};

/// Attention over `[B, H, T, hd]` heads, tile by tile (FlashAttention's forward, algorithm 1):
/// for each block of `block_q` queries, the key/value blocks one at a time, each row keeping
/// `m`, `l` and `O` as `fused_row_trace` does; with `is_causal` the key blocks entirely in a
/// query block's future are skipped. Scores are `(q . k) / sqrt(hd)`, as chapter 7 divides.
/// Only one `[block_q, block_k]` tile of scores exists at a time, never `[T, T]`.
/// - `q: [B, H, Tq, hd]`, `k: [B, H, Tk, hd]`, `v: [B, H, Tk, dv]` float32 -> `[B, H, Tq, dv]`;
/// - `attention_mask`: `[B, Tk]` int64, 1 on real tokens, 0 on padding (keys with 0 are
///   masked, as `attention_mask[:, None, :] == 0` in chapter 9);
/// - a query row that may attend to no key (every score `-inf`) gives a row of zeros, never
///   NaN (chapter 9's `masked_softmax`).
/// @throws std::invalid_argument when `config` is invalid or the shapes do not fit.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Config& config,
                 const std::optional<LongTensor>& attention_mask = std::nullopt);

/// The naive path the tiled forward is compared with: chapter 7's steps on the whole
/// `[B, H, Tq, Tk]` scores (`matmul`, `/ sqrt(hd)`, `masked_fill` of the causal mask and of
/// the padding, chapter 9's `masked_softmax`, `matmul`). Same arguments and result shape as
/// `attention` (`block_q`/`block_k` are ignored).
/// @throws std::invalid_argument when the shapes do not fit.
Tensor attention_naive(const Tensor& q, const Tensor& k, const Tensor& v, const Config& config,
                       const std::optional<LongTensor>& attention_mask = std::nullopt);

/// `MultiHeadAttention::forward` (chapter 7) with the tiled kernel in place of the scores,
/// softmax and `weights @ values`: `x: [b, T, d_in] -> [b, T, d_out]`. The mask is the
/// module's causal mask (`config.is_causal` is taken as true); `attention_mask` as above.
/// @throws std::invalid_argument when `x` is not `[b, T, d_in]`, `T > context_length`, or
/// the module would draw dropout (training mode with `dropout > 0`).
Tensor forward(const MultiHeadAttention& module, const Tensor& x, const Config& config,
               const std::optional<LongTensor>& attention_mask = std::nullopt);

/// The distance between two finite floats in units in the last place: how many float32
/// values lie between them (0 when equal, `+0` and `-0` are equal).
std::int64_t ulp_distance(float a, float b);

/// The largest `ulp_distance` between corresponding elements of two tensors of one shape.
/// @throws std::invalid_argument when the shapes differ.
std::int64_t max_ulp_distance(const Tensor& a, const Tensor& b);

/// `max |a - b|` over two tensors of one shape, in units of the float32 spacing at `scale`
/// (`ulp(scale) = nextafter(scale, inf) - scale`). Attention outputs are weighted averages of
/// the values, so `scale = max |v|` measures their rounding where raw ulps near 0 would not.
/// @throws std::invalid_argument when the shapes differ or `scale` is not finite and > 0.
double max_diff_in_ulps(const Tensor& a, const Tensor& b, float scale);

}  // namespace attn::flash
