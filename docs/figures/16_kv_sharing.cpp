// Chapter 16's figure: the KV cache of Gemma 3n E2B- and E4B-like models with and without
// cross-layer sharing, the arguments of Raschka's memory_estimator_kv_sharing.py README,
// computed by the library's one memory estimator.
#include "figures.hpp"

#include <string>
#include <vector>

#include "attn/attention/kv_memory.hpp"

namespace {

std::string sharing_gb_bars(const figures::Data&) {
    struct Model {
        std::string name;
        attn::KVMemoryConfig config;  // every layer produces
        std::size_t producers;
    };
    const std::size_t bf16 = attn::dtype_bytes("bf16");
    const Model models[] = {
        {"E2B, 1 KV head", {.context_length = 131072, .emb_dim = 2048, .num_heads = 8,
                                       .num_kv_heads = 1, .num_layers = 35, .bytes_per_elem = bf16}, 15},
        {"E4B, 2 KV heads", {.context_length = 131072, .emb_dim = 2560, .num_heads = 8,
                                        .num_kv_heads = 2, .num_layers = 42, .bytes_per_elem = bf16}, 24}};
    const auto gb = [](const attn::KVMemoryConfig& c) { return static_cast<double>(attn::kv_cache_total_bytes(c)) / 1e9; };
    std::vector<figures::svg::BarGroup> groups;
    for (const Model& m : models) {
        attn::KVMemoryConfig mha = m.config;
        mha.num_kv_heads = m.config.num_heads;
        attn::KVMemoryConfig mha_shared = mha, gqa_shared = m.config;
        mha_shared.num_kv_producing_layers = gqa_shared.num_kv_producing_layers = m.producers;
        groups.push_back({m.name + ", " + std::to_string(m.producers) + " of " + std::to_string(m.config.num_layers),
                          {gb(mha), gb(mha_shared), gb(m.config), gb(gqa_shared)}});
    }
    figures::svg::BarStyle style;
    style.title = "KV cache of one 131072-token sequence, bf16";
    style.subtitle = "memory_estimator_kv_sharing.py's README arguments; with sharing, only producers cache";
    style.x_label = "GB (attn::kv_cache_total_bytes)";
    style.series = {"MHA", "MHA + sharing", "GQA", "GQA + sharing"};  // his report's names
    return figures::svg::bar_chart(groups, style);
}

FIGURES{{
    .chapter = "16", .step = "estimator", .file = "ch16_sharing_bytes.svg",
    .caption = "Chapter 16, step 6: the KV cache of the E2B- and E4B-like models of Raschka's "
               "memory_estimator_kv_sharing.py README. Only the producing layers (the first 15 of 35, "
               "the first 24 of 42) compute and cache keys and values; every later layer reads the "
               "last producer's, so the cache shrinks by the share of layers that consume.",
    .draw = sharing_gb_bars}};

}  // namespace
