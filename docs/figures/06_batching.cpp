// Chapter 6's figure: each sequence of a batch gets its own dropout mask (the weights after
// dropout, which the chapter records with the block that prints the second sequence's).
#include "figures.hpp"

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "6", .step = "dropout", .file = "ch06_batch_dropout.svg",
    .caption = "Chapter 6: a batch of two copies of the input through CausalAttention(3, 2, 6, "
               "dropout=0.5) after torch.manual_seed(123): the same weights, but each sequence of "
               "the batch gets its own dropout mask.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor dropped = data.tensor("the weights after dropout, batch element 1", "dropped_weights");
        auto style = figures::token_style("CausalAttention weights after dropout, per sequence");
        style.vmax = 2.0;
        return figures::svg::heatmaps({attn::select(dropped, 0), attn::select(dropped, 1)},
                                      {"batch[0]", "batch[1]"}, style);
    }}};

}  // namespace
