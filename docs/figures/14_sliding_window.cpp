// Chapter 14's figure: the causal mask beside the sliding-window mask, True = hidden, as the
// chapter printed its masks.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "14", .step = "mask", .file = "ch14_window_mask.svg",
    .caption = "Chapter 14: sliding_window_mask as the chapter prints it, 1 = True = hidden: the "
               "causal mask (W = 6, left) and the window of W = 3 (right). A key stays visible "
               "(0) when 0 <= q_pos - k_pos < W.",
    .draw = [](const figures::Data& data) {
        auto style = figures::token_style("Which keys each query may not see (1 = hidden)");
        style.precision = 0;
        return figures::svg::heatmaps({data.printed_bools("masked (True) with W = 6: the causal mask", {6, 6}),
                                       data.printed_bools("masked (True) with W = 3", {6, 6})},
                                      {"causal (W = 6)", "window W = 3"}, style);
    }}};

}  // namespace
