/// @file kv_memory.hpp
/// @brief What a KV cache costs: the one memory estimator of the book, for every variant the
/// chapters compare (full multi-head, grouped and multi-query, sliding-window layers).
///
/// Source: rasbt/LLMs-from-scratch, ch04/04_gqa/memory_estimator_gqa.py and
/// ch04/06_swa/memory_estimator_swa.py (`calc_kv_bytes_per_layer`, `distribute_layers`,
/// `estimate_totals`), with the field names of this library (`num_kv_heads`, `num_heads`,
/// `num_layers`). Every size is checked: a product that overflows `size_t` throws instead of
/// wrapping to a small number.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace attn {

/// `DTYPE_BYTES` of Raschka's estimators: fp32 4, bf16 2, fp16 2, fp8 1, int8 1.
/// @throws std::invalid_argument for another name.
std::size_t dtype_bytes(const std::string& dtype);

/// `calc_kv_bytes_per_layer`: keys and values (2) of `tokens` positions of one layer,
/// `batch * tokens * head_dim * num_kv_heads * 2 * bytes_per_elem` bytes.
/// @throws std::length_error when the product overflows.
std::size_t kv_bytes_per_layer(std::size_t batch, std::size_t tokens, std::size_t head_dim,
                               std::size_t num_kv_heads, std::size_t bytes_per_elem);

/// Bytes the KV cache holds per token of one sequence: `kv_bytes_per_layer(1, 1, ...)` over
/// `num_layers` layers. For notebook 000's single layer and head with `E = 16` in float32:
/// `2 * 16 * 4 = 128` bytes.
/// @throws std::length_error when the product overflows.
std::size_t kv_cache_bytes_per_token(std::size_t num_layers, std::size_t num_kv_heads,
                                     std::size_t head_dim,
                                     std::size_t bytes_per_elem = sizeof(float));

/// `distribute_layers(n_layers, a, b)`: with an `a:b` SWA:full ratio, the numbers of
/// sliding-window and full layers (`{swa, full}`); 32 layers at 5:1 give 27 and 5.
/// @throws std::invalid_argument when `a + b == 0`.
std::pair<std::size_t, std::size_t> distribute_layers(std::size_t num_layers, std::size_t a,
                                                      std::size_t b);

/// A model's KV-cache footprint: the arguments of `estimate_totals` in
/// memory_estimator_swa.py, with `num_kv_heads` given directly (Raschka's `--n_kv_groups`
/// there is the group size: `num_kv_heads = num_heads / n_kv_groups`).
struct KVMemoryConfig {
    std::size_t batch = 1;                ///< sequences
    std::size_t context_length = 0;       ///< tokens per sequence
    std::size_t emb_dim = 0;              ///< model width
    std::size_t num_heads = 0;            ///< query heads (`head_dim = ceil(emb_dim / num_heads)`)
    std::size_t num_kv_heads = 0;         ///< key/value heads per layer
    std::size_t num_layers = 0;           ///< transformer blocks
    std::size_t bytes_per_elem = 2;       ///< 2 for bf16
    std::size_t sliding_window_size = 0;  ///< W of the SWA layers (0: no SWA layers)
    std::size_t swa_a = 0;                ///< SWA layers per block (ratio a:b)
    std::size_t swa_b = 1;                ///< full layers per block

    /// @throws std::invalid_argument naming the field when a size is 0, `num_kv_heads` does
    /// not divide `num_heads`, or the ratio is 0:0.
    void validate() const;
};

/// Total KV-cache bytes over all layers: SWA layers hold `min(context_length, W)` tokens,
/// full layers `context_length`.
/// @throws std::invalid_argument as `KVMemoryConfig::validate`; std::length_error when the
/// total overflows.
std::size_t kv_cache_total_bytes(const KVMemoryConfig& config);

}  // namespace attn
