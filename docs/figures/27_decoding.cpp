// Chapter 27's figures: his In [34] temperature plot (the toy vocabulary's probabilities at
// temperatures 1, 0.1 and 5, recorded with the temperature-5 counts), and the trained model's
// attention weights over the story's first 16 tokens, every head of the block holding the
// strongest previous-token head and of the block holding the sharpest head (the blocks named by
// the chapter's table of the heads).
#include "figures.hpp"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::vector<std::string> ch27_vocab = {"closer", "every", "effort", "forward", "inches", "moves", "pizza", "toward", "you"};
const std::string ch27_heads_key = "what each head attends to";

// The block of the first head the heads table names under `measure` ("previous token").
std::size_t ch27_block_of(const std::string& table, const std::string& measure) {
    const std::size_t at = table.find(measure);
    std::size_t block = 0;
    if (at == std::string::npos || std::sscanf(table.c_str() + table.find("block ", at), "block %zu", &block) != 1)
        throw std::runtime_error("chapter 27's heads table names no head under '" + measure + "'");
    return block;
}

std::string ch27_block_figure(const figures::Data& data, const std::string& measure) {
    const std::size_t block = ch27_block_of(data.block(ch27_heads_key).text, measure);
    const attn::Tensor w = data.tensor(ch27_heads_key, "block_" + std::to_string(block));  // [H, 16, 16]
    const std::size_t H = w.shape()[0], n = w.shape()[1];
    std::vector<attn::Tensor> panels;
    std::vector<std::string> titles;
    for (std::size_t h = 0; h < H; ++h) {
        attn::Tensor p = attn::Tensor::from_shape({n, n});
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) p(i, j) = w(h, i, j);
        panels.push_back(p), titles.push_back("head " + std::to_string(h));
    }
    figures::svg::HeatmapStyle style;
    style.title = "Block " + std::to_string(block) + " of the trained model, its " + std::to_string(H) + " heads";
    style.precision = -1;
    style.panels_per_row = 4;
    return figures::svg::heatmaps(panels, titles, style);
}

FIGURES{
    {.chapter = "27", .step = "temperature", .file = "ch27_temperature.svg",
     .caption = "Chapter 27, step 2: his In [34], the toy vocabulary's probabilities after dividing the "
                "logits by temperatures 1, 0.1 and 5: the low temperature gives nearly all of it to "
                "\"forward\", the high one spreads it over every word.",
     .draw = [](const figures::Data& data) {
         const std::string key = "rch05-In36";
         const attn::Tensor t1 = data.tensor(key, "temperature_1"), t01 = data.tensor(key, "temperature_0.1"),
                            t5 = data.tensor(key, "temperature_5");
         std::vector<figures::svg::BarGroup> groups;
         for (std::size_t i = 0; i < ch27_vocab.size(); ++i)
             groups.push_back({ch27_vocab[i], {double(t1(i)), double(t01(i)), double(t5(i))}});
         figures::svg::BarStyle style;
         style.title = "softmax(next_token_logits / T)";
         style.subtitle = "his toy vocabulary after \"every effort moves you\"";
         style.x_label = "probability";
         style.series = {"T = 1", "T = 0.1", "T = 5"};
         return figures::svg::bar_chart(groups, style);
     }},
    {.chapter = "27", .step = "heads", .file = "ch27_previous_token_block.svg",
     .caption = "Chapter 27, step 8: the attention weights of every head of the block holding the trained "
                "model's strongest previous-token head, over the story's first 16 tokens (\"I HAD always "
                "thought Jack Gisburn rather a cheap genius--though a good\"): rows are queries, columns "
                "keys; a previous-token head is the diagonal just below the main one, and weight on the "
                "first column is weight on the first token.",
     .draw = [](const figures::Data& data) { return ch27_block_figure(data, "previous token"); }},
    {.chapter = "27", .step = "heads", .file = "ch27_sharpest_block.svg",
     .caption = "Chapter 27, step 8: the same for the block holding the sharpest head, the one whose queries "
                "give their largest weight the most on average.",
     .draw = [](const figures::Data& data) { return ch27_block_figure(data, "largest weight"); }},
};

}  // namespace
