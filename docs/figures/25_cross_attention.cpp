// Chapter 25's figures: the cross-attention weights of the seeded example per head (the padded
// source tokens get no weight), the two training runs' losses, and the trained decoder's
// cross-attention on a held-out sequence, the diagonal of the copy and the anti-diagonal of the
// reversal, beside the untrained model's (recorded with those blocks).
#include "figures.hpp"

#include <string>
#include <vector>

#include "attn/core/functional.hpp"

namespace {

// Labels "0", "1", ... with `suffix` after the last `marked` ones (e.g. padded keys).
std::vector<std::string> ch25_labels(std::size_t n, std::size_t marked = 0, const std::string& suffix = "") {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(std::to_string(i) + (i + marked >= n ? suffix : ""));
    return out;
}

FIGURES{
    {.chapter = "25", .step = "cross", .file = "ch25_padded_source.svg",
     .caption = "Chapter 25, step 2: the attention weights of each head (average_attn_weights=False) of "
                "the seeded nn.MultiheadAttention, three decoder tokens attending to five memory tokens. "
                "The last two memory tokens of sequence 1 are padding: no query gives them any weight.",
     .draw = [](const figures::Data& data) {
         const attn::Tensor w = data.printed("o25-In06", {2, 2, 3, 5});
         std::vector<attn::Tensor> panels;
         std::vector<std::string> titles;
         for (long b = 0; b < 2; ++b)
             for (long h = 0; h < 2; ++h) {
                 panels.push_back(attn::select(attn::select(w, b), h));
                 titles.push_back("sequence " + std::to_string(b) + ", head " + std::to_string(h));
             }
         figures::svg::HeatmapStyle style;
         style.title = "Cross-attention weights per head, a padded source";
         style.row_axis = "decoder token (query)";
         style.col_axis = "memory token (p: padded)";
         style.col_labels = ch25_labels(5, 2, " p");
        style.panels_per_row = 2;  // sequence 0 above sequence 1
         return figures::svg::heatmaps(panels, titles, style);
     }},
    {.chapter = "25", .step = "train", .file = "ch25_training.svg",
     .caption = "Chapter 25, step 8: the cross-entropy at each of the 200 AdamW steps of the chapter's "
                "training of the encoder-decoder, on the copy task and on its reversal (32 fresh "
                "sequences a step), on a logarithmic scale. The same runs in PyTorch give the same "
                "losses to the last bit.",
     .draw = [](const figures::Data& data) {
         std::vector<figures::svg::Series> series;
         for (const auto& [key, name] : {std::pair<std::string, std::string>{"o25-In16", "copy"},
                                         std::pair<std::string, std::string>{"o25-In17", "reversal"}}) {
             const attn::Tensor losses = data.tensor(key, "losses");
             std::vector<double> x, y(losses.begin(), losses.end());
             for (std::size_t i = 0; i < y.size(); ++i) x.push_back(double(i));
             series.push_back({name, x, y, "", name == "reversal"});
         }
         figures::svg::PlotStyle style;
         style.title = "Training the encoder-decoder to copy and to reverse";
         style.subtitle = "the library's training (PyTorch's bits), as chapter 25 ran it";
         style.x_label = "training step";
         style.y_label = "cross-entropy";
         style.log_y = true;
         return figures::svg::line_plot(series, style);
     }},
    {.chapter = "25", .step = "map", .file = "ch25_cross_map.svg",
     .caption = "Chapter 25, step 10: the decoder's cross-attention on one held-out sequence, averaged "
                "over the heads, before and after training. Decoder position t predicts target token "
                "t + 1: the copy finds it at source position t + 1 (the diagonal above the main one), "
                "the reversal at 9 - t (the anti-diagonal).",
     .draw = [](const figures::Data& data) {
         const std::string copy = "o25-In19", reversal = "o25-In20";
         figures::svg::HeatmapStyle style;
         style.title = "Where the decoder looks in the source";
         style.row_axis = "decoder position";
         style.col_axis = "source position";
         style.precision = -1;
         style.panels_per_row = 2;  // copy above reversal: four in a row were cut at a 1400-px window
         return figures::svg::heatmaps(
             {data.tensor(copy, "untrained"), data.printed(copy, {9, 10}), data.tensor(reversal, "untrained"),
              data.printed(reversal, {9, 10})},
             {"copy, untrained", "copy, trained", "reversal, untrained", "reversal, trained"}, style);
     }},
};

}  // namespace
