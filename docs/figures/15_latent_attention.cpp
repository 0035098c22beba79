// Chapter 15's figure: the latent bottleneck, the bytes each token costs in the cache of
// multi-head, grouped-query and latent attention with the arguments of Raschka's
// memory_estimator_mla.py README, computed by the library's one memory estimator.
#include "figures.hpp"

#include <string>

#include "attn/attention/kv_memory.hpp"

namespace {

std::string latent_bytes_bars(const figures::Data&) {
    // His README: 8192 tokens, emb_dim 2048, 24 heads, 48 layers, groups of 4, latent 1024, bf16.
    attn::KVMemoryConfig mha{.batch = 1, .context_length = 8192, .emb_dim = 2048, .num_heads = 24,
                             .num_kv_heads = 24, .num_layers = 48, .bytes_per_elem = attn::dtype_bytes("bf16")};
    attn::KVMemoryConfig gqa = mha;
    gqa.num_kv_heads = 24 / 4;
    attn::KVMemoryConfig mla = mha;
    mla.latent_dim = 1024;
    const auto kib = [](const attn::KVMemoryConfig& c) { return attn::kv_cache_bytes_per_token(c) / 1024.0; };
    figures::svg::BarStyle style;
    style.title = "Cached bytes per token, all 48 layers";
    style.subtitle = "emb_dim 2048, 24 heads (head_dim 86), bf16: memory_estimator_mla.py's README arguments";
    style.x_label = "KiB per token of context (attn::kv_cache_bytes_per_token)";
    style.series = {"KiB per token"};
    return figures::svg::bar_chart({{"MHA: K and V of 24 heads", {kib(mha)}},
                                    {"GQA: K and V of 6 heads", {kib(gqa)}},
                                    {"MLA: one latent of 1024", {kib(mla)}}},
                                   style);
}

FIGURES{{
    .chapter = "15", .step = "bytes", .file = "ch15_latent_bytes.svg",
    .caption = "Chapter 15, step 4: what each token costs in the cache of all 48 layers of the model "
               "of Raschka's memory_estimator_mla.py README. Multi-head attention keeps keys and values "
               "of 24 heads, grouped-query attention of 6, latent attention only the 1024 numbers of "
               "W_DKV x, from which W_UK and W_UV rebuild every head's keys and values.",
    .draw = latent_bytes_bars}};

}  // namespace
