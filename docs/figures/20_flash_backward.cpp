// Chapter 20's figure: the attention weights recomputed from the log-sum-exp L alone.
#include "figures.hpp"

#include <cmath>

#include "attn/modules/multihead.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "textbook/book.hpp"

namespace {

// Head 0 of batch element 0 of chapter 19's module: the softmax's weights, and exp(S - L).
std::vector<attn::Tensor> weights_and_recomputed_20() {
    const attn::Tensor inputs = textbook::inputs();
    const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
    attn::manual_seed(123);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
    attn::AttentionSaved saved;
    mha.forward(batch, saved);
    const auto heads = [](const attn::Tensor& t) { return attn::transpose(attn::view(t, {2, 6, 2, 1}), 1, 2); };
    const attn::SDPASteps st = attn::scaled_dot_product_attention_steps(
        heads(saved.queries), heads(saved.keys), heads(saved.values),
        {.is_causal = true, .scale = attn::ScoreScale::divide_by(1.0f)});
    attn::Tensor recomputed = attn::zeros({6, 6});
    for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = 0; j < 6; ++j)  // exp(-inf) = 0 behind the mask
            recomputed(i, j) = std::exp(st.masked_scores(0, 0, i, j) - saved.attention.logsumexp(0, 0, i));
    return {attn::select(attn::select(st.attn_weights, 0), 0), recomputed};
}

FIGURES{{
    .chapter = "20", .step = "lse", .file = "ch20_weights_from_lse.svg",
    .caption = "Chapter 20, step 1: head 0 of chapter 19's MultiHeadAttention (seed 123) on the "
               "first sequence. Left, the softmax's weights as the forward computed them; right, "
               "exp(S - L) from the masked scores and the one number per row the forward kept, "
               "L = m + log(l). They are the same picture: the backward recomputes each tile of "
               "weights instead of storing T x T of them.",
    .draw = [](const figures::Data&) {
        figures::svg::HeatmapStyle style = figures::token_style("Attention weights, stored and recomputed");
        return figures::svg::heatmaps(weights_and_recomputed_20(), {"softmax(S)", "exp(S - L)"}, style);
    }}};

}  // namespace
