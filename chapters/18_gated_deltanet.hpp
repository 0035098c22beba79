// Chapter 18's helper: what its figure of step 7 draws, recorded with the step's block (the
// figure reads it from the chapter's record; it computes nothing). Compiled with the chapter,
// in the chapters' unity file (chapters/meson.build): everything here is in namespace ch18.
// Includes textbook/display.hpp, the layouts chapters share.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attn/attention/kv_memory.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "textbook/display.hpp"
#include "textbook/record.hpp"

namespace ch18 {

/// The whole cache of one sequence, all layers, of each variant (attn::kv_cache_total_bytes
/// of its config, the context length set) at 256, 512, ..., 131072 tokens: `tokens` `[10]`
/// and `cache_MB` `[variants, 10]` (float32, 1 MB = 10^6 bytes), in the variants' order.
/// @throws std::invalid_argument as attn::kv_cache_total_bytes for an invalid config.
inline std::vector<textbook::TensorRecord> cache_by_length(
    std::vector<std::pair<std::string, attn::KVMemoryConfig>> variants) {
    std::vector<float> tokens;
    for (std::size_t t = 256; t <= 131072; t *= 2) tokens.push_back(static_cast<float>(t));
    attn::Tensor megabytes = attn::zeros({variants.size(), tokens.size()});
    for (std::size_t v = 0; v < variants.size(); ++v)
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            variants[v].second.context_length = static_cast<std::size_t>(tokens[i]);
            megabytes(v, i) = static_cast<float>(static_cast<double>(attn::kv_cache_total_bytes(variants[v].second)) / 1e6);
        }
    return {{"tokens", tokens}, {"cache_MB", megabytes}};
}

}  // namespace ch18
