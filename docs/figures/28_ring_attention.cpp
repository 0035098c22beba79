// Chapter 28's figure: the (query, key) pairs each rank computed at each step of the ring
// under a causal mask, for the three splits, from the tensors the chapter recorded.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "28", .step = "causal", .file = "ch28_causal_balance.svg",
    .caption = "Chapter 28, step 4: the (query, key) pairs each of the 4 ranks (rows) computed at each "
               "step of the ring (columns), 16 tokens under a causal mask. Contiguous blocks leave rank 0 "
               "idle after its first step while rank 3 works at every step; the zig-zag split gives every "
               "rank the same work at each step; the striped split nearly so.",
    .draw = [](const figures::Data& data) {
        std::vector<attn::Tensor> panels;
        std::vector<std::string> titles;
        for (const std::string split : {"contiguous", "zigzag", "striped"}) {
            panels.push_back(data.tensor(split + ": (query, key) pairs per rank and step, T = 16 on 4 ranks", "pairs"));
            titles.push_back(split);
        }
        figures::svg::HeatmapStyle style;
        style.title = "Pairs computed per rank and step";
        for (std::size_t r = 0; r < panels[0].shape()[0]; ++r) style.row_labels.push_back("rank " + std::to_string(r));
        for (std::size_t s = 0; s < panels[0].shape()[1]; ++s) style.col_labels.push_back("step " + std::to_string(s));
        style.precision = 0;
        return figures::svg::heatmaps(panels, titles, style);
    }}};

}  // namespace
