// Chapter 20: FlashAttention-2's backward, tile by tile. Prose: docs/chapters/.
#include <cmath>
#include <string>

#include "attn/modules/multihead.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "20_flash_backward.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "20_flash_backward", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("lse");
        //! [lse]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
        attn::AttentionSaved saved;
        const attn::SDPABackendGuard tiled(attn::SDPABackend::tiled);  // chapter 12's forward
        const attn::Tensor context_vecs = mha.forward(batch, saved);
        const attn::Tensor& L = saved.attention.logsumexp;  // m + log(l) of each query row
        //! [lse]
        ch.show("L = m + log(l): [b, num_heads, T]", attn::repr(L),
                ch20::weights_from_lse(saved.queries, saved.keys, saved.values, L));

        ch.step("delta");
        //! [delta]
        const attn::Tensor one = attn::scalar_tensor(1.0f);
        const attn::Tensor d_out = attn::pow_backward(attn::mean_backward(one, attn::shape_of(context_vecs)), context_vecs, 2.0f);
        const attn::Tensor d_context = mha.out_proj.backward(saved.context, d_out);  // dO, heads merged
        const auto heads = [](const attn::Tensor& t) {  // [b, T, d_out] -> [b, num_heads, T, head_dim]
            return attn::transpose(attn::view(t, {2, 6, 2, 1}), 1, 2);
        };
        const attn::Tensor dO = heads(d_context), O = heads(saved.context);
        const attn::Tensor D = attn::sum(attn::Tensor(dO * O), -1);  // one dot product per row
        const attn::Tensor P = attn::scaled_dot_product_attention_steps(
            heads(saved.queries), heads(saved.keys), heads(saved.values),
            {.is_causal = true, .scale = attn::ScoreScale::divide_by(1.0f)}).attn_weights;
        const attn::Tensor dP = attn::matmul(dO, attn::transpose(heads(saved.values), 2, 3));
        const attn::Tensor rowsum = attn::sum(attn::Tensor(dP * P), -1);  // T numbers per row
        //! [delta]
        ch.show("D = rowsum(dO * O), then rowsum(dP * P)", attn::repr(D) + "\n" + attn::repr(rowsum));
        ch.show("max |D - rowsum(dP * P)|", textbook::max_abs_diff_text(D, rowsum));

        ch.step("tiles");
        //! [tiles]
        attn::Tensor dq = attn::zeros({2, 6, 2}), dk = attn::zeros({2, 6, 2}), dv = attn::zeros({2, 6, 2});
        const attn::SDPAOptions options{.is_causal = true, .scale = attn::ScoreScale::divide_by(1.0f),
                                        .backend = attn::SDPABackend::tiled, .block_q = 2, .block_k = 2};
        attn::attend_backward(attn::HeadsView::split(d_context, 2, 1), attn::HeadsView::split(saved.queries, 2, 1),
                              attn::HeadsView::split(saved.keys, 2, 1), attn::HeadsView::split(saved.values, 2, 1),
                              attn::HeadsView::split(saved.context, 2, 1), saved.attention,
                              dq.data(), dk.data(), dv.data(), options);
        //! [tiles]
        ch.book("o20-In03", "dL/dQ from 2 x 2 tiles, heads merged", attn::repr(dq));
        ch.book("o20-In04", "dL/dK", attn::repr(dk));
        ch.book("o20-In05", "dL/dV", attn::repr(dv));

        ch.step("long");
        //! [long]
        attn::Generator gen(ch.seed(20));
        const attn::Tensor q = attn::randn({1, 4, 150, 16}, gen), k = attn::randn({1, 2, 150, 16}, gen),
                           v = attn::randn({1, 2, 150, 16}, gen), grad = attn::randn({1, 4, 150, 16}, gen);
        attn::SDPAOptions o{.is_causal = true, .backend = attn::SDPABackend::step};
        const attn::SDPAGradients step = attn::scaled_dot_product_attention_backward(
            grad, q, k, v, attn::scaled_dot_product_attention_forward(q, k, v, o), o);
        o.backend = attn::SDPABackend::tiled, o.block_q = 32, o.block_k = 48;
        const attn::SDPAGradients tile = attn::scaled_dot_product_attention_backward(
            grad, q, k, v, attn::scaled_dot_product_attention_forward(q, k, v, o), o);
        //! [long]
        ch.show("T = 150, 4 query heads on 2 key/value heads, tiles 32 x 48: max |tiled - step|",
                textbook::labelled_lines({{"dQ", textbook::max_abs_diff_text(tile.grad_query, step.grad_query)},
                                          {"dK", textbook::max_abs_diff_text(tile.grad_key, step.grad_key)},
                                          {"dV", textbook::max_abs_diff_text(tile.grad_value, step.grad_value)}}));
    });
}
