/// @file tiled_attention.hpp
/// @brief FlashAttention's forward on the CPU (Dao et al. 2022, "FlashAttention: Fast and
/// Memory-Efficient Exact Attention with IO-Awareness", arXiv 2205.14135, algorithm 1),
/// without its GPU memory hierarchy: the `tiled` backend of `attn::scaled_dot_product_attention`.
///
/// For each tile of `block_q` queries, the key/value tiles of `block_k` keys one at a time;
/// each query row keeps its running maximum `m`, its running sum `l = sum_j exp(s_j - m)` and
/// its running output `O = sum_j exp(s_j - m) v_j`, rescaled by `exp(m_old - m_new)` whenever
/// the maximum grows (the online normaliser of Milakov & Gimelshein 2018, arXiv 1805.02867).
/// Only one `[block_q, block_k]` tile of scores exists at a time, never `[Tq, Tk]`; with a
/// causal band, tiles entirely in a query tile's future are skipped. Float32 throughout; `exp`
/// is SLEEF's `expf_u10`, as `attn::softmax`. The results are within a few ulp of the
/// step-by-step path's (a different order of the same sums), not bit for bit.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/kernels/fused_attention.hpp"

namespace attn::fast {

/// The tiles: query rows per tile (`B_r`) and keys per tile (`B_c`), both > 0.
struct TileSizes {
    std::size_t block_q = 64;  ///< query rows per tile
    std::size_t block_k = 64;  ///< keys per tile
};

/// Scratch of `tiled_attend_head`, sized by what the input needs (`min(block, T)`), reused.
struct TiledWorkspace {
    std::vector<float> keys_t;  ///< one key tile, transposed: `[hd, block_k]`
    std::vector<float> scores;  ///< one tile of scores: `[block_q, block_k]`
    std::vector<float> m;       ///< per query row of a tile: the running maximum
    std::vector<float> l;       ///< per query row of a tile: the running sum
    std::vector<float> O;       ///< per query row of a tile: running output `[block_q, dv]`
    /// Per query row of a tile, a NaN score was seen; then, per column of the values, one holds
    /// a value that is not finite.
    std::vector<unsigned char> nan;
};

/// One tile of `nk` keys for one query row, FlashAttention's update: `s[0..nk)` holds the
/// row's scores of the tile, already scaled and masked (`-inf` = hidden). With `m_new =
/// max(m, max_c s_c)`: `l = l * exp(m - m_new) + sum_c exp(s_c - m_new)`, `O = O * exp(m -
/// m_new) + sum_c exp(s_c - m_new) * noise_c * v_c` (`noise` the dropout multipliers of the
/// tile's keys, stride `noise_stride`; none when null), `m = m_new`; `s` is left holding
/// `exp(s_c - m_new)`. A row that may attend to nothing yet (`m_new = -inf`) is unchanged;
/// a NaN score sets `saw_nan`. `V`: `[nk, dv]` with row stride `ldv`; `O`: `[dv]`. float32,
/// SLEEF's `expf_u10`.
void absorb_tile(float* s, std::size_t nk, const float* V, std::size_t ldv, std::size_t dv,
                 const float* noise, long noise_stride, float& m, float& l, float* O,
                 bool& saw_nan);

/// The tiled attention of the query heads `heads[0 .. n)` that share one key/value head, with
/// the masks, scaling, dropout multipliers and fully-masked rule of `mask` (as
/// `attend_head`): for each, `O[i, :] = dropout(softmax_j(...)) @ V` computed tile by tile.
/// Dropout multiplies each weight into `O` only (the running sum `l` takes the weight before
/// dropout), as FlashAttention does. A NaN score makes its row NaN, as the step path.
/// Runs on the calling thread.
/// @throws std::invalid_argument when a tile size is 0 or a row stride is smaller than its
/// row.
void tiled_attend_head(const HeadArgs& args, const HeadMask& mask, const QueryHead* heads,
                       std::size_t n, const TileSizes& tiles, TiledWorkspace& ws);

}  // namespace attn::fast
