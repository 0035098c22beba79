// Chapter 1: self-attention without trainable weights. The notebooks start here in prose only
// (004's "Self-Attention No Weights"). Prose: docs/chapters/01_unweighted_self_attention.md.
#include "attn/functional.hpp"
#include "attn/print.hpp"
#include "textbook/chapter.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "01_unweighted_self_attention"}, [](textbook::Chapter& ch) {
        ch.step("inputs");
        //! [inputs]
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
        //! [inputs]
        ch.show("inputs, the six embeddings [6, 3]", attn::repr(inputs));

        ch.step("scores_2");
        //! [scores_2]
        const attn::Tensor query = attn::select(inputs, 1);  // inputs[1]
        attn::Tensor attn_scores_2 = attn::zeros({6});
        for (long i = 0; i < 6; ++i)
            attn_scores_2(i) = attn::matmul(attn::select(inputs, i), query)();  // x_i . query
        //! [scores_2]
        ch.show("attn_scores_2: journey's dot product with each token", attn::repr(attn_scores_2));

        ch.step("weights_2");
        //! [weights_2]
        const attn::Tensor attn_weights_2_tmp = attn_scores_2 / attn::sum(attn_scores_2)();
        const attn::Tensor attn_weights_2_naive = attn::softmax_naive(attn_scores_2);
        const attn::Tensor attn_weights_2 = attn::softmax(attn_scores_2);
        //! [weights_2]
        ch.show("attn_weights_2_tmp = attn_scores_2 / attn_scores_2.sum(), and its sum",
                "Attention weights: " + attn::repr(attn_weights_2_tmp) +
                    "\nSum: " + attn::repr(attn::sum(attn_weights_2_tmp)));
        ch.show("softmax_naive(attn_scores_2), and its sum",
                "Attention weights: " + attn::repr(attn_weights_2_naive) +
                    "\nSum: " + attn::repr(attn::sum(attn_weights_2_naive)));
        ch.show("torch.softmax(attn_scores_2, dim=0), and its sum",
                "Attention weights: " + attn::repr(attn_weights_2) +
                    "\nSum: " + attn::repr(attn::sum(attn_weights_2)));

        ch.step("overflow");
        //! [overflow]
        const attn::Tensor big = attn::tensor({1000.0f, 1001.0f, 1002.0f});
        //! [overflow]
        ch.show("naive vs PyTorch softmax of [1000, 1001, 1002]",
                "naive:   " + attn::repr(attn::softmax_naive(big)) +
                    "\nsoftmax: " + attn::repr(attn::softmax(big)));

        ch.step("context_2");
        //! [context_2]
        const attn::Tensor context_vec_2 = attn::matmul(attn_weights_2, inputs);
        //! [context_2]
        ch.show("context_vec_2 = attn_weights_2 @ inputs", attn::repr(context_vec_2));

        ch.step("all");
        //! [all]
        const attn::Tensor attn_scores = attn::matmul(inputs, attn::T(inputs));
        const attn::Tensor attn_weights = attn::softmax(attn_scores, -1);
        const attn::Tensor all_context_vecs = attn::matmul(attn_weights, inputs);
        //! [all]
        ch.show("attn_scores = inputs @ inputs.T", attn::repr(attn_scores));
        ch.show("attn_weights = torch.softmax(attn_scores, dim=-1)", attn::repr(attn_weights));
        ch.show("attn_weights.sum(dim=-1): every row sums to 1",
                "All row sums: " + attn::repr(attn::sum(attn_weights, -1)));
        ch.show("all_context_vecs = attn_weights @ inputs", attn::repr(all_context_vecs));
    });
}
