// Chapter 1's figure: the unweighted attention weights of the six tokens, as the chapter
// printed them.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "1", .step = "all", .file = "ch01_unweighted_weights.svg",
    .caption = "Chapter 1: attn_weights = softmax(inputs @ inputs.T, dim=-1), as the chapter prints "
               "it. Row i is how much token i attends to each token; every row sums to 1.",
    .draw = [](const figures::Data& data) {
        return figures::svg::heatmap(data.printed("rch03-In11", {6, 6}),
                                     figures::token_style("Unweighted attention weights"));
    }}};

}  // namespace
