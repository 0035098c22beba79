// Chapter 1: self-attention without trainable weights. The five notebooks start here in prose
// only (004's "Self-Attention No Weights"); Raschka 3 In [3]-[14] prints every step.
// Prose: docs/chapters/01_unweighted_self_attention.md.
#include "attn/core/functional.hpp"
#include "attn/print/print.hpp"
#include "attn/print/python.hpp"
#include "textbook/chapter.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "01_unweighted_self_attention"}, [](textbook::Chapter& ch) {
        ch.book("rch03-In01", "the version: no torch here; the library reproduces torch 1.13's CPU arithmetic",
                "attn (C++), in place of torch 1.13.1");
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
        ch.book("rch03-In03", "attn_scores_2: journey's dot product with each token", attn::repr(attn_scores_2));
        //! [scores_2.2]
        float res = 0.0f;  // the dot product of inputs[0] and query, written out
        for (long idx = 0; idx < 3; ++idx) res += inputs(0, idx) * query(idx);
        //! [scores_2.2]
        ch.book("rch03-In04-1", "res: the dot product as a loop", attn::repr(attn::scalar_tensor(res)));
        ch.book("rch03-In04-2", "torch.dot(inputs[0], query)",
                attn::repr(attn::matmul(attn::select(inputs, 0), query)));

        ch.step("weights_2");
        //! [weights_2]
        const attn::Tensor attn_weights_2_tmp = attn_scores_2 / attn::sum(attn_scores_2)();
        const attn::Tensor attn_weights_2_naive = attn::softmax_naive(attn_scores_2);
        const attn::Tensor attn_weights_2 = attn::softmax(attn_scores_2);
        //! [weights_2]
        ch.book("rch03-In05", "attn_weights_2_tmp = attn_scores_2 / attn_scores_2.sum(), and its sum",
                "Attention weights: " + attn::repr(attn_weights_2_tmp) +
                    "\nSum: " + attn::repr(attn::sum(attn_weights_2_tmp)));
        ch.book("rch03-In06", "softmax_naive(attn_scores_2), and its sum",
                "Attention weights: " + attn::repr(attn_weights_2_naive) +
                    "\nSum: " + attn::repr(attn::sum(attn_weights_2_naive)));
        ch.book("rch03-In07", "torch.softmax(attn_scores_2, dim=0), and its sum",
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
        ch.book("rch03-In08", "context_vec_2 = attn_weights_2 @ inputs", attn::repr(context_vec_2));

        ch.step("all");
        //! [all.loop]
        attn::Tensor attn_scores_loop = attn::zeros({6, 6});
        for (long i = 0; i < 6; ++i)
            for (long j = 0; j < 6; ++j)
                attn_scores_loop(i, j) = attn::matmul(attn::select(inputs, i), attn::select(inputs, j))();
        //! [all.loop]
        ch.book("rch03-In09", "attn_scores from a double loop of dot products", attn::repr(attn_scores_loop));
        //! [all]
        const attn::Tensor attn_scores = attn::matmul(inputs, attn::T(inputs));
        const attn::Tensor attn_weights = attn::softmax(attn_scores, -1);
        const attn::Tensor all_context_vecs = attn::matmul(attn_weights, inputs);
        //! [all]
        ch.book("rch03-In10", "attn_scores = inputs @ inputs.T", attn::repr(attn_scores));
        ch.book("rch03-In11", "attn_weights = torch.softmax(attn_scores, dim=-1)", attn::repr(attn_weights));
        //! [all.row2]
        double row_2_sum = 0.0;  // Python's sum() of the six printed weights of row 2, in float64
        for (const double w : {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581}) row_2_sum += w;
        //! [all.row2]
        ch.book("rch03-In12-1", "sum of row 2's printed weights", "Row 2 sum: " + attn::repr_float(row_2_sum));
        ch.book("rch03-In12-2", "attn_weights.sum(dim=-1): every row sums to 1",
                "All row sums: " + attn::repr(attn::sum(attn_weights, -1)));
        ch.book("rch03-In13", "all_context_vecs = attn_weights @ inputs", attn::repr(all_context_vecs));
        ch.book("rch03-In14", "row 2 is context_vec_2", "Previous 2nd context vector: " + attn::repr(context_vec_2));
    });
}
