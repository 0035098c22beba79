// Chapter 1: self-attention without trainable weights.
//
// The notebooks start here in prose only (004's "Self-Attention No Weights"); this chapter
// prints each step so the later, weighted chapters have something to stand on.
#include <iostream>

#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_01_unweighted_self_attention",
        "Chapter 1: self-attention without trainable weights");
    textbook::Printer book(options, "Chapter 1 · Self-attention without trainable weights");

    book.prose(
        "Six tokens, \"Your journey starts with one step\", each embedded as a 3-d vector "
        "(the input of notebooks 002 and 004). Self-attention gives every token a context "
        "vector: a weighted sum of all the inputs, weighted by how much each input matters "
        "to it. Here the weights come straight from dot products; nothing is trained yet.");

    //! [inputs]
    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
    //! [inputs]
    book.fresh("inputs, the six embeddings [6, 3]", attn::repr(inputs));

    book.prose(
        "Step 1, attention scores: take \"journey\" (x^2) as the query and score it against "
        "every token with a dot product. A large dot product means the two vectors point the "
        "same way.");
    //! [scores_2]
    const attn::Tensor query = attn::select(inputs, 1);  // inputs[1]
    attn::Tensor attn_scores_2 = attn::zeros({6});
    for (long i = 0; i < 6; ++i)
        attn_scores_2(i) = attn::matmul(attn::select(inputs, i), query)();  // x_i . query
    //! [scores_2]
    book.fresh("attn_scores_2: journey's dot product with each token", attn::repr(attn_scores_2));

    book.prose(
        "Step 2, attention weights: normalise the scores so they sum to 1. Dividing by the "
        "sum works for positive scores; softmax works for any scores and is what attention "
        "uses. The naive softmax exp(x) / sum(exp(x)) overflows for large scores, so "
        "PyTorch subtracts the row maximum first, which changes nothing mathematically.");
    //! [weights_2]
    const attn::Tensor attn_weights_2_tmp = attn_scores_2 / attn::sum(attn_scores_2)();
    const attn::Tensor attn_weights_2_naive = attn::softmax_naive(attn_scores_2);
    const attn::Tensor attn_weights_2 = attn::softmax(attn_scores_2);
    //! [weights_2]
    book.fresh("attn_weights_2_tmp = attn_scores_2 / attn_scores_2.sum(), and its sum",
               "Attention weights: " + attn::repr(attn_weights_2_tmp) +
                   "\nSum: " + attn::repr(attn::sum(attn_weights_2_tmp)));
    book.fresh("softmax_naive(attn_scores_2), and its sum",
               "Attention weights: " + attn::repr(attn_weights_2_naive) +
                   "\nSum: " + attn::repr(attn::sum(attn_weights_2_naive)));
    book.fresh("torch.softmax(attn_scores_2, dim=0), and its sum",
               "Attention weights: " + attn::repr(attn_weights_2) +
                   "\nSum: " + attn::repr(attn::sum(attn_weights_2)));

    const float big = 1000.0f;
    book.fresh("why the maximum is subtracted: naive vs PyTorch softmax of [1000, 1001, 1002]",
               "naive:   " + attn::repr(attn::softmax_naive(attn::tensor({big, big + 1, big + 2}))) +
                   "\nsoftmax: " + attn::repr(attn::softmax(attn::tensor({big, big + 1, big + 2}))));

    book.prose(
        "Step 3, the context vector of \"journey\": the inputs weighted by its attention "
        "weights and summed, z^2 = sum_i alpha_2i x^i, which is attn_weights_2 @ inputs.");
    //! [context_2]
    const attn::Tensor context_vec_2 = attn::matmul(attn_weights_2, inputs);
    //! [context_2]
    book.fresh("context_vec_2 = attn_weights_2 @ inputs", attn::repr(context_vec_2));

    book.prose(
        "All tokens at once: every pair's dot product is one matrix product, "
        "inputs @ inputs.T, [6, 3] @ [3, 6] -> [6, 6]. Row i holds token i's scores; a "
        "softmax along each row (dim=-1) gives the weights, and one more product gives all "
        "six context vectors. Row 2 repeats what was computed above for \"journey\".");
    //! [all]
    const attn::Tensor attn_scores = attn::matmul(inputs, attn::T(inputs));
    const attn::Tensor attn_weights = attn::softmax(attn_scores, -1);
    const attn::Tensor all_context_vecs = attn::matmul(attn_weights, inputs);
    //! [all]
    book.fresh("attn_scores = inputs @ inputs.T", attn::repr(attn_scores));
    book.fresh("attn_weights = torch.softmax(attn_scores, dim=-1)", attn::repr(attn_weights));
    book.fresh("attn_weights.sum(dim=-1): every row sums to 1",
               "All row sums: " + attn::repr(attn::sum(attn_weights, -1)));
    book.fresh("all_context_vecs = attn_weights @ inputs", attn::repr(all_context_vecs));
    return 0;
}
