// Chapter 1's figure: the unweighted attention weights of the six tokens.
#include "figures.hpp"

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{{
    .chapter = "1", .step = "all", .file = "ch01_unweighted_weights.svg",
    .caption = "Chapter 1: attn_weights = softmax(inputs @ inputs.T, dim=-1). Row i is how much "
               "token i attends to each token; every row sums to 1.",
    .draw = [](const figures::Data&) {
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor w = attn::softmax(attn::matmul(inputs, attn::T(inputs)), -1);
        return figures::svg::heatmap(w, figures::token_style("Unweighted attention weights"));
    }}};

}  // namespace
