// Chapter 3's figure: the weights times the lower triangle, then renormalised.
#include "figures.hpp"

#include <cmath>

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "3", .step = "renorm", .file = "ch03_simple_mask.svg",
    .caption = "Chapter 3: the weights of chapter 2 times tril(ones(6, 6)) (left: rows no longer "
               "sum to 1), then each row divided by its sum (right).",
    .draw = [](const figures::Data&) {
        const attn::Tensor w = attn::softmax(attn::Tensor(figures::v2_scores() / std::sqrt(2.0f)), -1);
        const attn::Tensor masked_simple = w * attn::tril(attn::ones({6, 6}));
        const attn::Tensor norm = masked_simple / attn::sum(masked_simple, -1, true);
        return figures::svg::heatmaps({masked_simple, norm}, {"masked_simple", "masked_simple_norm"},
                                      figures::token_style("A simple causal mask, then renormalised"));
    }}};

}  // namespace
