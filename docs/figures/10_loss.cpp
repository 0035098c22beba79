// Chapter 10's figure: the fragile mask by value against the boolean mask by position, on the
// chapter's crafted queries and keys (query 2 orthogonal to key 1), as the chapter printed them.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "10", .step = "fragile", .file = "ch10_fragile_mask.svg",
    .caption = "Chapter 10, step 6: the weights of the chapter's crafted queries and keys, whose score "
               "[2, 1] is a genuine 0, as the chapter prints them. Left: notebook 001's mask, "
               "masked_fill(tril(scores) == 0, -inf), also hides that score, so query 2 gives key 1 no "
               "weight. Right: the boolean mask by position, triu(ones(4, 4), 1), keeps it.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor by_value = data.printed("softmax of that: row 2 ignores position 1", {4, 4});
        const attn::Tensor by_position = data.printed("masked by triu(ones, 1), softmax", {4, 4}, 16);  // after the scores
        figures::svg::HeatmapStyle style;
        style.title = "Attention weights: mask by value against mask by position";
        style.row_labels = {"q0", "q1", "q2", "q3"};
        style.col_labels = {"k0", "k1", "k2", "k3"};
        return figures::svg::heatmaps({by_value, by_position}, {"tril(scores) == 0 masked", "triu(ones, 1) masked"},
                                      style);
    }}};

}  // namespace
