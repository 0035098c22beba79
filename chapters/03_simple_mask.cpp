// Chapter 3: causal attention with a simple mask and renormalisation
// (notebook 002 In [3]-[8], notebook 004 In [30]-[41]).
#include <cmath>
#include <iostream>

#include "attn/attention.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = attn::chapter::parse_args(
        argc, argv, "chapter_03_simple_mask",
        "Chapter 3: a causal mask by zeroing and renormalising");
    attn::chapter::Printer book(options, "Chapter 3 · A simple causal mask, renormalised");

    const attn::Tensor inputs = attn::book::inputs();  // 002 In [1], 004 In [2]

    book.prose(
        "A language model predicts the next token, so token i may only look at tokens "
        "1..i. Causal attention hides the future. The first way to do it: compute the "
        "ordinary attention weights, zero everything above the diagonal, and renormalise "
        "each row so it sums to 1 again. We reuse the SelfAttention_v2 weights of chapter 2 "
        "(seed 789).");
    //! [weights]
    attn::manual_seed(789);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    const attn::Tensor queries = sa_v2.W_query(inputs);
    const attn::Tensor keys = sa_v2.W_key(inputs);
    const attn::Tensor attn_scores = attn::matmul(queries, attn::T(keys));
    const float d_k = static_cast<float>(keys.shape().back());
    const attn::Tensor attn_weights = attn::softmax(attn::Tensor(attn_scores / std::sqrt(d_k)), -1);
    //! [weights]
    book.book("002-In03", "the attention weights of SelfAttention_v2 (seed 789)",
              "Attention weights:\n" + attn::repr(attn_weights));
    book.book("004-In30", "the same weights, printed through NumPy",
              "Attention Weight Matrix for all words:\n " + attn::numpy_str(attn_weights));
    book.book("002-In04", "attn_scores.shape", attn::repr(attn::shape_of(attn_scores)));

    book.prose("The mask: torch.tril keeps the lower triangle (j <= i) of a matrix of ones.");
    //! [mask]
    const std::size_t context_length = attn_scores.shape()[0];
    const attn::Tensor mask_simple = attn::tril(attn::ones({context_length, context_length}));
    //! [mask]
    book.book("002-In05", "mask_simple = torch.tril(torch.ones(6, 6)), and its shape",
              attn::repr_tuple({attn::repr(mask_simple), attn::repr(attn::shape_of(mask_simple))}));
    book.book("004-In36", "the same mask, printed through NumPy",
              "Simple Mask: \n " + attn::numpy_str(mask_simple));

    //! [masked]
    const attn::Tensor masked_simple = attn_weights * mask_simple;
    //! [masked]
    book.book("002-In06", "masked_simple = attn_weights * mask_simple", attn::repr(masked_simple));
    book.book("004-In38", "the same, printed through NumPy",
              "Masked Attention-Weights: \n " + attn::numpy_str(masked_simple));

    book.prose(
        "The rows no longer sum to 1: the first keeps only its own weight. Dividing each "
        "row by its sum fixes that. The future tokens still took part in the softmax's "
        "denominator, but the division cancels it exactly, so nothing leaks.");
    //! [renorm]
    const attn::Tensor row_sums = attn::sum(masked_simple, -1, /*keepdim=*/true);
    const attn::Tensor masked_simple_norm = masked_simple / row_sums;
    //! [renorm]
    book.book("002-In07", "row_sums = masked_simple.sum(dim=-1, keepdim=True)", attn::repr(row_sums));
    book.book("002-In08", "masked_simple_norm = masked_simple / row_sums",
              attn::repr(masked_simple_norm));
    book.book("004-In39", "the same, printed through NumPy",
              "Normalized Masked Attention-Weights: \n " + attn::numpy_str(masked_simple_norm));

    book.prose("The context vectors of the masked attention: weights times values.");
    //! [context]
    const attn::Tensor values = sa_v2.W_value(inputs);
    const attn::Tensor context_vec = attn::matmul(masked_simple_norm, values);
    //! [context]
    book.book("004-In41", "context matrix from the simple mask, printed through NumPy",
              "Context Matrix from SMA: \n " + attn::numpy_str(context_vec));
    return 0;
}
