// Chapter 18's figure: what the cache holds against the context length for the seven variants
// of the chapter's step 7, named as the chapter prints them; the sizes are recorded by the
// chapter with that block (chapters/18_gated_deltanet.hpp).
#include "figures.hpp"

#include <string>
#include <vector>

namespace {

FIGURES{{
    .chapter = "18", .step = "variants", .file = "ch18_cache_per_token.svg",
    .caption = "Chapter 18, step 7: the whole cache of one sequence (all layers, MB) against its "
               "length, for the model of the step's table (kv_memory.hpp). MHA, GQA, MQA, MLA and "
               "cross-layer sharing grow in proportion to the tokens, at the per-token costs of the "
               "table; sliding windows grow only in their full layers once past the window; Gated "
               "DeltaNet's state (dashed) does not grow at all.",
    .draw = [](const figures::Data& data) {
        const std::string key = "cached bytes per token at 32768 tokens (24 layers, d 2048, 16 heads, bf16)";
        const auto variants = figures::labelled(data.block(key).text);
        const attn::Tensor tokens = data.tensor(key, "tokens"), megabytes = data.tensor(key, "cache_MB");
        if (megabytes.shape()[0] != variants.size())
            throw std::runtime_error("chapter 18 printed " + std::to_string(variants.size()) + " variants but recorded " +
                                     std::to_string(megabytes.shape()[0]));
        const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#8c564b", "#111111"};
        std::vector<figures::svg::Series> series;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            figures::svg::Series s;
            s.name = variants[v].first;
            s.colour = colours[v % 7];
            s.dashed = s.name.find("state") != std::string::npos;  // Gated DeltaNet's, not a cache
            for (std::size_t i = 0; i < tokens.size(); ++i) s.x.push_back(tokens(i)), s.y.push_back(megabytes(v, i));
            series.push_back(s);
        }
        const std::size_t open = key.rfind('('), close = key.rfind(')');
        return figures::svg::line_plot(series, {.title = "What the cache holds, by context length",
                                                .subtitle = key.substr(open + 1, close - open - 1) + ", batch 1",
                                                .x_label = "context length (tokens)",
                                                .y_label = "cache of all layers (MB)",
                                                .log_x = true,
                                                .log_y = true});
    }}};

}  // namespace
