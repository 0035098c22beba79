/// @file kv_memory.hpp
/// @brief What a KV cache costs: the one memory estimator of the book, for every variant the
/// chapters compare (full multi-head, grouped and multi-query, sliding-window layers, a
/// latent cache of multi-head latent attention, keys and values shared across layers).
///
/// Source: rasbt/LLMs-from-scratch, ch04/04_gqa/memory_estimator_gqa.py,
/// ch04/06_swa/memory_estimator_swa.py (`calc_kv_bytes_per_layer`, `distribute_layers`,
/// `estimate_totals`), ch04/05_mla/memory_estimator_mla.py (`calc_kv_bytes_total`,
/// `calc_mla_bytes_total`) and ch04/10_kv-sharing/memory_estimator_kv_sharing.py
/// (`calc_kv_bytes_total` with `n_cached_layers`), with the field names of this library
/// (`num_kv_heads`, `num_heads`, `num_layers`). Every size is checked: a product that
/// overflows `size_t` throws instead of wrapping to a small number.
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

/// `calc_kv_bytes_total` of memory_estimator_mla.py and memory_estimator_kv_sharing.py: keys
/// and values of `context_length` positions in each of `num_cached_layers` layers,
/// `batch * context_length * head_dim * num_kv_heads * 2 * bytes_per_elem * num_cached_layers`
/// bytes with `head_dim = ceil(emb_dim / num_heads)`. With cross-layer sharing only the layers
/// that produce keys and values hold them (`num_cached_layers = n_kv_producing_layers`); his
/// README's Gemma 4 E2B-like arguments (131072, 2048, 8, 8, 35, bf16) give 37.58 GB.
/// @throws std::invalid_argument when `num_heads` is 0; std::length_error when the product
/// overflows.
std::size_t kv_bytes_total(std::size_t batch, std::size_t context_length, std::size_t emb_dim,
                           std::size_t num_heads, std::size_t num_kv_heads,
                           std::size_t num_cached_layers, std::size_t bytes_per_elem);

/// What a latent cache of multi-head latent attention holds for one layer: `latent_dim`
/// numbers per token, the keys and values both rebuilt from them (`W_UK`, `W_UV`),
/// `batch * tokens * latent_dim * bytes_per_elem` bytes.
/// @throws std::length_error when the product overflows.
std::size_t latent_bytes_per_layer(std::size_t batch, std::size_t tokens, std::size_t latent_dim,
                                   std::size_t bytes_per_elem);

/// `calc_mla_bytes_total` of memory_estimator_mla.py: "bytes ≈ batch × seqlen × n_layers ×
/// latent_dim × bytes_per_elem"; his README's arguments (8192 tokens, 48 layers, latent_dim
/// 1024, bf16) give 0.81 GB, against 3.25 GB for multi-head attention.
/// @throws std::length_error when the product overflows.
std::size_t mla_bytes_total(std::size_t batch, std::size_t context_length, std::size_t num_layers,
                            std::size_t latent_dim, std::size_t bytes_per_elem);

/// What one Gated DeltaNet layer carries instead of a KV cache: a `[head_dim, head_dim]` state
/// per head, `batch * num_heads * head_dim * head_dim * bytes_per_elem` bytes, whatever the
/// number of tokens (deltanet.hpp's `DeltaNetState`): `kv_bytes_total_deltanet_no_conv` of
/// Raschka's ch04/08_deltanet/plot_memory_estimates_gated_deltanet.py for one layer (his
/// `d_head = emb_dim // n_heads`); with his defaults (2048, 16 heads, 48 layers, bf16) the 48
/// layers hold 25165824 bytes at every context length.
/// @throws std::length_error when the product overflows.
std::size_t deltanet_state_bytes_per_layer(std::size_t batch, std::size_t num_heads, std::size_t head_dim,
                                           std::size_t bytes_per_elem);

/// `distribute_layers(n_layers, a, b)`: with an `a:b` SWA:full ratio, the numbers of
/// sliding-window and full layers (`{swa, full}`); 32 layers at 5:1 give 27 and 5.
/// @throws std::invalid_argument when `a + b == 0`.
std::pair<std::size_t, std::size_t> distribute_layers(std::size_t num_layers, std::size_t a,
                                                      std::size_t b);

/// A model's KV-cache footprint: the arguments of `estimate_totals` in
/// memory_estimator_swa.py, with `num_kv_heads` given directly (Raschka's `--n_kv_groups`
/// there is the group size: `num_kv_heads = num_heads / n_kv_groups`), plus `latent_dim`
/// (memory_estimator_mla.py) and `num_kv_producing_layers`
/// (memory_estimator_kv_sharing.py). The variants are settings of the one config:
/// - MHA: `num_kv_heads = num_heads`; GQA: fewer; MQA: `num_kv_heads = 1`;
/// - SWA: `sliding_window_size = W` with the ratio `swa_a:swa_b`;
/// - MLA: `latent_dim > 0` (each cached layer holds the latent, not keys and values);
/// - cross-layer sharing: `num_kv_producing_layers > 0` (only those layers hold a cache);
/// - Gated DeltaNet: `deltanet_state` (each cached layer holds its recurrent state, of no
///   token count; not combined with SWA or MLA).
/// They combine: the cached layers (the producers, or every layer) are split `swa_a:swa_b`
/// by `distribute_layers`, and each holds `latent_dim` or `2 * head_dim * num_kv_heads`
/// numbers per token.
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
    std::size_t latent_dim = 0;           ///< MLA's latent width per token (0: keys and values)
    /// Layers that compute and cache keys and values, the others reusing the latest
    /// producer's (0: every layer produces; else at most `num_layers`).
    std::size_t num_kv_producing_layers = 0;
    /// Gated DeltaNet layers: each holds `deltanet_state_bytes_per_layer(batch, num_heads,
    /// head_dim, bytes_per_elem)`, not keys and values per token.
    bool deltanet_state = false;

    /// @throws std::invalid_argument naming the field when a size is 0, `num_kv_heads` does
    /// not divide `num_heads`, the ratio is 0:0, `num_kv_producing_layers > num_layers`, or
    /// `deltanet_state` is combined with `latent_dim` or `sliding_window_size`.
    void validate() const;
};

/// Total KV-cache bytes over all layers: the cached layers (`num_kv_producing_layers`, or all)
/// split into SWA layers holding `min(context_length, W)` tokens and full layers holding
/// `context_length`, each token costing `latent_dim * bytes_per_elem` (MLA) or
/// `2 * head_dim * num_kv_heads * bytes_per_elem` bytes; with `deltanet_state`, each cached
/// layer holds its state instead (`deltanet_state_bytes_per_layer`).
/// @throws std::invalid_argument as `KVMemoryConfig::validate`; std::length_error when the
/// total overflows.
std::size_t kv_cache_total_bytes(const KVMemoryConfig& config);

/// Bytes per token of one sequence at `context_length`: `kv_cache_total_bytes(config) /
/// (batch * context_length)`, as a real number (an SWA layer's share shrinks as the context
/// grows past its window). The one number by which the variants' tables compare.
/// @throws std::invalid_argument as `KVMemoryConfig::validate`; std::length_error as
/// `kv_cache_total_bytes`.
double kv_cache_bytes_per_token(const KVMemoryConfig& config);

}  // namespace attn
