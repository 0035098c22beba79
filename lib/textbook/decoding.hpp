/// @file decoding.hpp
/// @brief Chapter 8's check that a KV cache changes nothing: the outputs of decoding with the
/// cache set beside those of recomputing the whole prefix, token by token.
#pragma once

#include <cstddef>
#include <vector>

#include "attn/modules/base_self_attention.hpp"

namespace textbook {

using attn::Tensor;

/// The outputs of the new tokens computed two ways, and how far apart they are.
struct DecodeComparison {
    Tensor cached;       ///< `[B, N, E]`: fed `chunk` tokens at a time with the KV cache
    Tensor recomputed;   ///< `[B, N, E]`: each chunk's rows from a full forward over the prefix
    std::vector<float> max_abs_diff;  ///< per new token `n`: `max |cached - recomputed|` over `B, E`
    std::size_t cache_length = 0;     ///< `S0 + N`: tokens in the cache at the end
};

/// Both of the above and their per-token maximum difference.
/// @throws std::invalid_argument as `decode_with_cache`.
DecodeComparison compare_decoding(const attn::BaseSelfAttention& attention, const Tensor& prompt,
                                  const Tensor& tokens, std::size_t chunk = 1);

}  // namespace textbook
