// Chapter 19's figure: the softmax's Jacobian for chapter 1's query, which the backward never
// forms, as the chapter printed it.
#include "figures.hpp"

#include <tuple>

namespace {

FIGURES{{
    .chapter = "19", .step = "jacobian", .file = "ch19_softmax_jacobian.svg",
    .caption = "Chapter 19, step 2: the Jacobian diag(P) - P P^T of the softmax of chapter 1's "
               "query \"journey\" against the six tokens, as the chapter prints it (row i: how weight "
               "P_i moves with each score S_j). The diagonal is positive, everything else negative, "
               "and every row and column sums to zero. The backward pass needs only its product with "
               "dP, one dot product per row, so a model never forms this T x T matrix per query.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor jacobian = data.printed("the Jacobian diag(P) - P P^T, 6 x 6", {6, 6});
        figures::svg::HeatmapStyle style = figures::token_style("The softmax's Jacobian dP_i / dS_j");
        style.row_axis = "weight P_i";
        style.col_axis = "score S_j";
        style.precision = 3;
        std::tie(style.vmin, style.vmax) = figures::finite_range(jacobian);
        return figures::svg::heatmap(jacobian, style);
    }}};

}  // namespace
