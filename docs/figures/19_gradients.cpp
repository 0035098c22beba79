// Chapter 19's figure: the softmax's Jacobian for chapter 1's query, which the backward never forms.
#include "figures.hpp"

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace {

attn::Tensor softmax_jacobian_19() {
    const attn::Tensor inputs = textbook::inputs();
    const attn::Tensor p = attn::softmax(attn::matmul(inputs, attn::select(inputs, 1)), 0);  // "journey"
    attn::Tensor jacobian = attn::zeros({6, 6});  // dP_i / dS_j = P_i ([i = j] - P_j)
    for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = 0; j < 6; ++j) jacobian(i, j) = p(i) * ((i == j ? 1.0f : 0.0f) - p(j));
    return jacobian;
}

FIGURES{{
    .chapter = "19", .step = "jacobian", .file = "ch19_softmax_jacobian.svg",
    .caption = "Chapter 19, step 2: the Jacobian diag(P) - P P^T of the softmax of chapter 1's "
               "query \"journey\" against the six tokens (row i: how weight P_i moves with each "
               "score S_j). The diagonal is positive, everything else negative, and every row and "
               "column sums to zero. The backward pass needs only its product with dP, one dot "
               "product per row, so a model never forms this T x T matrix per query.",
    .draw = [](const figures::Data&) {
        figures::svg::HeatmapStyle style = figures::token_style("The softmax's Jacobian dP_i / dS_j");
        style.row_axis = "weight P_i";
        style.col_axis = "score S_j";
        style.precision = 3;
        style.vmin = -0.06;
        style.vmax = 0.19;
        return figures::svg::heatmap(softmax_jacobian_19(), style);
    }}};

}  // namespace
