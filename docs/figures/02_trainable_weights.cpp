// Chapter 2's figure: "journey"'s attention scores and weights, as the chapter printed them.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "2", .step = "scaled", .file = "ch02_journey_weights.svg",
    .caption = "Chapter 2, step 3: the query of \"journey\" against the key of each token, as the "
               "chapter prints them: the scores query_2 @ keys.T, and the weights softmax(scores / "
               "sqrt(d_k)), which sum to 1. Dividing by sqrt(d_k) before the softmax keeps the "
               "weights from crowding onto the largest score.",
    .draw = [](const figures::Data& data) {
        const attn::Tensor scores = data.printed("rch03-In20", {6});
        const attn::Tensor weights = data.printed("rch03-In21", {6});
        std::vector<figures::svg::BarGroup> groups;
        for (std::size_t j = 0; j < 6; ++j) groups.push_back({figures::tokens()[j], {scores(j), weights(j)}});
        figures::svg::BarStyle style;
        style.title = "What \"journey\" attends to, through trainable weights";
        style.x_label = "score or weight";
        style.series = {"attn_scores_2", "attn_weights_2"};
        return figures::svg::bar_chart(groups, style);
    }}};

}  // namespace
