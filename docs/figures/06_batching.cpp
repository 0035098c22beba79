// Chapter 6's figure: each sequence of a batch gets its own dropout mask.
#include "figures.hpp"

#include "attn/modules/causal.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{{
    .chapter = "6", .step = "dropout", .file = "ch06_batch_dropout.svg",
    .caption = "Chapter 6: a batch of two copies of the input through CausalAttention(3, 2, 6, "
               "dropout=0.5) after torch.manual_seed(123): the same weights, but each sequence of "
               "the batch gets its own dropout mask.",
    .draw = [](const figures::Data&) {
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(123);
        const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5});
        const auto steps = ca.forward_steps(batch);
        auto style = figures::token_style("CausalAttention weights after dropout, per sequence");
        style.vmax = 2.0;
        return figures::svg::heatmaps({attn::select(steps.dropped_weights, 0), attn::select(steps.dropped_weights, 1)},
                                      {"batch[0]", "batch[1]"}, style);
    }}};

}  // namespace
