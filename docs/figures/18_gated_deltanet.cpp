// Chapter 18's figure: what the cache holds against the context length for the seven variants
// of the one estimator (kv_memory.hpp), the model of the chapter's step 7.
#include "figures.hpp"

#include <utility>
#include <vector>

#include "attn/attention/kv_memory.hpp"

namespace {

FIGURES{{
    .chapter = "18", .step = "variants", .file = "ch18_cache_per_token.svg",
    .caption = "Chapter 18, step 7: the whole cache of one sequence (all 24 layers, MB) against its "
               "length, for a model of width 2048 with 16 heads in bf16 (kv_memory.hpp). MHA, GQA, MQA, "
               "MLA and cross-layer sharing grow in proportion to the tokens, at the per-token costs of "
               "the step's table; sliding windows grow only in their full layers past 1024 tokens; Gated "
               "DeltaNet's state (dashed) does not grow at all.",
    .draw = [](const figures::Data&) {
        const attn::KVMemoryConfig base{.context_length = 1, .emb_dim = 2048, .num_heads = 16, .num_kv_heads = 16,
                                        .num_layers = 24, .bytes_per_elem = 2};
        std::vector<std::pair<std::string, attn::KVMemoryConfig>> variants(7, {"", base});
        variants[0].first = "MHA (16 KV heads)";
        variants[1].first = "GQA (4 KV heads)", variants[1].second.num_kv_heads = 4;
        variants[2].first = "MQA (1 KV head)", variants[2].second.num_kv_heads = 1;
        variants[3].first = "SWA 1024, 5:1", variants[3].second.sliding_window_size = 1024;
        variants[3].second.swa_a = 5;
        variants[4].first = "MLA (latent 512)", variants[4].second.latent_dim = 512;
        variants[5].first = "sharing (12 of 24 layers)", variants[5].second.num_kv_producing_layers = 12;
        variants[6].first = "Gated DeltaNet state", variants[6].second.deltanet_state = true;
        const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#8c564b", "#111111"};
        std::vector<figures::svg::Series> series;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            auto& [name, cfg] = variants[v];
            figures::svg::Series s;
            s.name = name, s.colour = colours[v], s.dashed = cfg.deltanet_state;
            for (std::size_t tokens = 256; tokens <= 131072; tokens *= 2) {
                cfg.context_length = tokens;
                s.x.push_back(double(tokens));
                s.y.push_back(double(attn::kv_cache_total_bytes(cfg)) / 1e6);
            }
            series.push_back(s);
        }
        return figures::svg::line_plot(series, {.title = "What the cache holds, by context length",
                                                .subtitle = "24 layers, d = 2048, 16 heads, bf16, batch 1",
                                                .x_label = "context length (tokens)",
                                                .y_label = "cache of 24 layers (MB)",
                                                .log_x = true,
                                                .log_y = true});
    }}};

}  // namespace
