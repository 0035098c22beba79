// Chapter 2's figure: SelfAttention_v2's attention weights (seed 789).
#include "figures.hpp"

#include <cmath>

#include "attn/core/functional.hpp"

namespace {

FIGURES{{
    .chapter = "2", .step = "v2", .file = "ch02_v2_weights.svg",
    .caption = "Chapter 2: the attention weights of SelfAttention_v2(3, 2) after "
               "torch.manual_seed(789), softmax(queries @ keys.T / sqrt(d_out)).",
    .draw = [](const figures::Data&) {
        const attn::Tensor w = attn::softmax(attn::Tensor(figures::v2_scores() / std::sqrt(2.0f)), -1);
        return figures::svg::heatmap(w, figures::token_style("SelfAttention_v2 weights (seed 789)"));
    }}};

}  // namespace
