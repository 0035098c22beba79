// Chapter 4's figures: the scores with -inf above the diagonal, and their softmax, as the
// chapter printed them.
#include "figures.hpp"

#include <cmath>

namespace {

FIGURES{
    {.chapter = "4", .step = "masked", .file = "ch04_masked_scores.svg",
     .caption = "Chapter 4: attn_scores.masked_fill(mask.bool(), -inf): the future (above the "
                "diagonal) is -inf, so the softmax gives it weight exp(-inf) = 0.",
     .draw = [](const figures::Data& data) {
         const attn::Tensor masked = data.printed("002-In10", {6, 6});  // then its torch.Size
         auto style = figures::token_style("Causally masked attention scores");
         const auto [lo, hi] = figures::finite_range(masked);
         style.vmin = std::floor(lo * 10) / 10;
         style.vmax = std::ceil(hi * 10) / 10;
         return figures::svg::heatmap(masked, style);
     }},
    {.chapter = "4", .step = "softmax", .file = "ch04_causal_weights.svg",
     .caption = "Chapter 4: causal attention weights, softmax(masked / sqrt(d_k)): each token "
                "attends to itself and the tokens before it only.",
     .draw = [](const figures::Data& data) {
         return figures::svg::heatmap(data.printed("002-In11", {6, 6}),
                                      figures::token_style("Causal attention weights"));
     }}};

}  // namespace
