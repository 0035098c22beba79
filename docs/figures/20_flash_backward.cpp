// Chapter 20's figure: the attention weights recomputed from the log-sum-exp L alone, beside
// the softmax's (the chapter records both with the block that prints L,
// chapters/20_flash_backward.hpp).
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "20", .step = "lse", .file = "ch20_weights_from_lse.svg",
    .caption = "Chapter 20, step 1: head 0 of the chapter's MultiHeadAttention (seed 123) on the "
               "first sequence. Left, the softmax's weights as the forward computes them; right, "
               "exp(S - L) from the masked scores and the one number per row the forward kept, "
               "L = m + log(l). They are the same picture: the backward recomputes each tile of "
               "weights instead of storing T x T of them.",
    .draw = [](const figures::Data& data) {
        const std::string key = "L = m + log(l): [b, num_heads, T]";
        return figures::svg::heatmaps({data.tensor(key, "attn_weights"), data.tensor(key, "exp(S - L)")},
                                      {"softmax(S)", "exp(S - L)"},
                                      figures::token_style("Attention weights, stored and recomputed"));
    }}};

}  // namespace
