// Chapter 29's figure: which rank holds each head of each token before and after Ulysses'
// all-to-all, from the tensors the chapter recorded.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "29", .step = "all-to-all", .file = "ch29_all_to_all.svg",
    .caption = "Chapter 29, step 1: the rank (0-3) holding each head (rows) of each token (columns). Split by "
               "the sequence, each rank holds two tokens of every head; after sequence_to_heads, one all-to-all, "
               "each rank holds one head of every token, and can attend over the whole sequence for it alone.",
    .draw = [](const figures::Data& data) {
        const std::string block = "each rank's numbers 10 h + t: its tokens of every head, its head of every token, and back";
        const attn::Tensor before = data.tensor(block, "owner_before"), after = data.tensor(block, "owner_after");
        figures::svg::HeatmapStyle style;
        style.title = "Which rank holds each head of each token";
        for (std::size_t h = 0; h < before.shape()[0]; ++h) style.row_labels.push_back("head " + std::to_string(h));
        for (std::size_t t = 0; t < before.shape()[1]; ++t) style.col_labels.push_back("t" + std::to_string(t));
        style.precision = 0;
        return figures::svg::heatmaps({before, after}, {"split by tokens", "after sequence_to_heads"}, style);
    }}};

}  // namespace
