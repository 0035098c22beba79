// Chapter 4's figures: the scores with -inf above the diagonal, and their softmax.
#include "figures.hpp"

#include <cmath>
#include <limits>

#include <xtensor/xmath.hpp>

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{
    {.chapter = "4", .step = "masked", .file = "ch04_masked_scores.svg",
     .caption = "Chapter 4: attn_scores.masked_fill(mask.bool(), -inf): the future (above the "
                "diagonal) is -inf, so the softmax gives it weight exp(-inf) = 0.",
     .draw = [](const figures::Data&) {
         const attn::Tensor scores = figures::v2_scores();
         const attn::Tensor masked = attn::masked_fill(scores, attn::to_bool(attn::triu(attn::ones({6, 6}), 1)),
                                                       -std::numeric_limits<float>::infinity());
         auto style = figures::token_style("Causally masked attention scores");
         style.vmin = std::floor(xt::amin(scores)() * 10) / 10;
         style.vmax = std::ceil(xt::amax(scores)() * 10) / 10;
         return figures::svg::heatmap(masked, style);
     }},
    {.chapter = "4", .step = "softmax", .file = "ch04_causal_weights.svg",
     .caption = "Chapter 4: causal attention weights, softmax(masked / sqrt(d_k)): each token "
                "attends to itself and the tokens before it only.",
     .draw = [](const figures::Data&) {
         return figures::svg::heatmap(textbook::causal_attention_weights(789),
                                      figures::token_style("Causal attention weights"));
     }}};

}  // namespace
