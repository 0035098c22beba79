// Chapter 10's figure: the fragile mask by value against the boolean mask by position, on the
// chapter's crafted queries and keys (query 2 orthogonal to key 1).
#include "figures.hpp"

#include <limits>

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "10", .step = "fragile", .file = "ch10_fragile_mask.svg",
    .caption = "Chapter 10, step 6: the chapter's crafted queries and keys (d = 4), whose score [2, 1] "
               "is a genuine 0. Left: notebook 001's mask, masked_fill(tril(scores) == 0, -inf), also "
               "hides that score, so query 2 gives key 1 no weight. Right: the boolean mask by "
               "position, triu(ones(4, 4), 1), keeps it.",
    .draw = [](const figures::Data&) {
        const float inf = std::numeric_limits<float>::infinity();
        const attn::Tensor queries = attn::tensor({{1.0f, 0.0f, 0.0f, 0.0f}, {0.5f, 1.0f, 0.0f, 0.0f},
                                                   {1.0f, -1.0f, 0.5f, 0.0f}, {0.5f, 0.0f, 1.0f, 1.0f}});
        const attn::Tensor keys = attn::tensor({{1.0f, 0.0f, 0.0f, 0.5f}, {1.0f, 1.0f, 0.0f, 0.0f},
                                                {0.0f, 0.0f, 2.0f, 0.0f}, {0.5f, 0.5f, 0.5f, 0.5f}});
        const attn::Tensor scores = attn::matmul(queries, attn::T(keys)) / 2.0f;
        const attn::Tensor scores_tril = attn::tril(scores);
        const attn::Tensor by_value = attn::softmax(attn::masked_fill(scores_tril, attn::eq(scores_tril, 0.0f), -inf), -1);
        const attn::BoolTensor future = attn::eq(attn::triu(attn::ones({4, 4}), 1), 1.0f);
        const attn::Tensor by_position = attn::softmax(attn::masked_fill(scores, future, -inf), -1);
        figures::svg::HeatmapStyle style;
        style.title = "Attention weights: mask by value against mask by position";
        style.row_labels = {"q0", "q1", "q2", "q3"};
        style.col_labels = {"k0", "k1", "k2", "k3"};
        return figures::svg::heatmaps({by_value, by_position}, {"tril(scores) == 0 masked", "triu(ones, 1) masked"},
                                      style);
    }}};

}  // namespace
