// Chapter 3's figure: the weights times the lower triangle, then renormalised, as the chapter
// printed them.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "3", .step = "renorm", .file = "ch03_simple_mask.svg",
    .caption = "Chapter 3: the weights of SelfAttention_v2 times tril(ones(6, 6)) (left: rows no "
               "longer sum to 1), then each row divided by its sum (right), as the chapter prints them.",
    .draw = [](const figures::Data& data) {
        return figures::svg::heatmaps({data.printed("002-In06", {6, 6}), data.printed("002-In08", {6, 6})},
                                      {"masked_simple", "masked_simple_norm"},
                                      figures::token_style("A simple causal mask, then renormalised"));
    }}};

}  // namespace
