// Chapter 7's figure: the weights of each head of notebook 003's GPT-2 layer, for the first
// sequence (head 0 is printed; the chapter records every head with that block).
#include "figures.hpp"

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "7", .step = "gpt2_attention", .file = "ch07_heads.svg",
    .caption = "Chapter 7: the causal attention weights of each head of notebook 003's GPT-2 layer "
               "(evaluation mode) for the first of the chapter's sequences, torch.manual_seed(123) "
               "before the layer and its input. Head 0 is the att[0, 0] the chapter prints. Even "
               "untrained, each head weighs the tokens its own way.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor heads = data.tensor("att[0, 0]: the first sequence's weights, head 0", "att[0]");  // [H, T, T]
        std::vector<attn::Tensor> panels;
        std::vector<std::string> titles;
        for (std::size_t h = 0; h < heads.shape()[0]; ++h) {
            panels.push_back(attn::select(heads, static_cast<long>(h)));
            titles.push_back("head " + std::to_string(h));
        }
        figures::svg::HeatmapStyle style;
        style.title = "Attention weights per head (GPT-2 layout)";
        for (std::size_t t = 0; t < heads.shape()[1]; ++t) style.row_labels.push_back("t" + std::to_string(t));
        style.col_labels = style.row_labels;
        return figures::svg::heatmaps(panels, titles, style);
    }}};

}  // namespace
