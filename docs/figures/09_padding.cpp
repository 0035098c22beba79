// Chapter 9's figure: the attention weights of notebook 000's left-padded batch after the
// fix (masked_softmax), every text of it (the chapter prints the first and records all with
// that block).
#include "figures.hpp"

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{{
    .chapter = "9", .step = "fix", .file = "ch09_padding_weights.svg",
    .caption = "Chapter 9: notebook 000's three texts, tokenised and left-padded with the pad id 2, "
               "through the chapter's BaseSelfAttention with the causal mask and the attention mask, "
               "masked_softmax. Pad keys get no weight; pad queries attend to nothing (rows of 0).",
    .draw = [](const figures::Data& data) {
        const attn::Tensor weights = data.tensor("attention_weights[0], masked_softmax", "attention_weights");
        const auto pads = textbook::numbers_in(data.block("fully masked query rows per text (6, 4, 0 pads)").text);
        const std::size_t B = weights.shape()[0], S = weights.shape()[1];
        std::vector<attn::Tensor> panels;
        std::vector<std::string> titles;
        for (std::size_t b = 0; b < B; ++b) {
            panels.push_back(attn::select(weights, static_cast<long>(b)));
            titles.push_back("text " + std::to_string(b) + " (" + pads.at(b).text + " pads)");
        }
        figures::svg::HeatmapStyle style;
        style.title = "Causal attention weights of a left-padded batch";
        for (std::size_t s = 0; s < S; ++s) style.row_labels.push_back(std::to_string(s));
        style.col_labels = style.row_labels;
        style.precision = 2;
        style.panels_per_row = 2;
        return figures::svg::heatmaps(panels, titles, style);
    }}};

}  // namespace
