// Chapter 4: the -inf causal mask (notebook 002 In [9]-[11], notebook 004 In [43]-[46]) and
// the sanity check against scaled_dot_product_attention (notebook 001 In [13]-[17]).
#include <cmath>
#include <iostream>
#include <limits>

#include "attn/attention.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_04_inf_mask", "Chapter 4: the -inf causal mask");
    textbook::Printer book(options, "Chapter 4 · The -inf mask");

    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]
    attn::manual_seed(789);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    const attn::Tensor queries = sa_v2.W_query(inputs);
    const attn::Tensor keys = sa_v2.W_key(inputs);
    const attn::Tensor values = sa_v2.W_value(inputs);
    const attn::Tensor attn_scores = attn::matmul(queries, attn::T(keys));

    book.prose(
        "Chapter 3 computed a softmax and then undid part of it. Since exp(-inf) = 0, "
        "setting the future scores to -inf before the softmax removes them from both the "
        "numerator and the denominator in one step. The mask marks the future with ones "
        "above the diagonal: torch.triu(..., diagonal=1), and .bool() turns it into the "
        "boolean mask masked_fill wants.");
    //! [mask]
    const std::size_t context_length = attn_scores.shape()[0];
    const attn::Tensor mask = attn::triu(attn::ones({context_length, context_length}), 1);
    const attn::BoolTensor causal_mask = attn::to_bool(mask);
    //! [mask]
    book.book("002-In09", "mask = torch.triu(torch.ones(6, 6), diagonal=1), and mask.bool()",
              attn::repr(mask) + "\n\n" + attn::repr(causal_mask));

    //! [masked]
    const float inf = std::numeric_limits<float>::infinity();
    const attn::Tensor masked = attn::masked_fill(attn_scores, causal_mask, -inf);
    //! [masked]
    book.book("002-In10", "masked = attn_scores.masked_fill(mask.bool(), -torch.inf), and its shape",
              attn::repr_tuple({attn::repr(masked), attn::repr(attn::shape_of(masked))}));
    book.book("004-In43", "the same masked scores, printed through NumPy",
              "Masked Attention Scores: \n " + attn::numpy_str(masked));

    //! [softmax]
    const float d_k = static_cast<float>(keys.shape().back());
    const attn::Tensor attn_weights = attn::softmax(attn::Tensor(masked / std::sqrt(d_k)), -1);
    //! [softmax]
    book.book("002-In11", "attn_weights = softmax(masked / d_k**0.5): chapter 3's renormalised weights",
              attn::repr(attn_weights));
    book.book("004-In44", "the same, printed through NumPy",
              "Normalized Masked Attention-Weights: \n " + attn::numpy_str(attn_weights));

    //! [context]
    const attn::Tensor context_vec = attn::matmul(attn_weights, values);
    //! [context]
    book.book("004-In46", "context matrix from the -inf mask",
              "Context Matrix from -inf mask: \n " + attn::repr(context_vec));

    book.prose(
        "Are the two masks really the same? Chapter 3's renormalised weights, computed "
        "here again, against the -inf ones: the largest difference is at the level of "
        "float32 rounding.");
    const attn::Tensor row_weights = attn::softmax(attn::Tensor(attn_scores / std::sqrt(d_k)), -1);
    const attn::Tensor masked_simple = row_weights * attn::tril(attn::ones({context_length, context_length}));
    const attn::Tensor renormalised = masked_simple / attn::sum(masked_simple, -1, true);
    const float max_diff = attn::max_abs_diff(renormalised, attn_weights);
    book.fresh("max |renormalised - softmax(-inf masked)|, and allclose(atol=1e-7)",
               attn::repr(attn::scalar_tensor(max_diff)) + "\n" +
                   attn::repr_bool(attn::allclose(renormalised, attn_weights, 0.0, 1e-7)));

    book.prose(
        "Notebook 001's sanity check: PyTorch's fused scaled_dot_product_attention takes "
        "queries, keys and values and either a boolean attn_mask (True = may attend, so "
        "the lower triangle, tril(ones) == 1) or is_causal=True. Both give the context "
        "matrix computed step by step above.");
    //! [sdpa]
    const attn::BoolTensor attn_mask = attn::eq(attn::tril(attn::ones({context_length, context_length})), 1.0f);
    const attn::Tensor sdpa_mask = attn::scaled_dot_product_attention(queries, keys, values, attn_mask);
    const attn::Tensor sdpa_causal =
        attn::scaled_dot_product_attention(queries, keys, values, std::nullopt, /*is_causal=*/true);
    //! [sdpa]
    book.fresh("attn_mask = torch.tril(torch.ones(6, 6)) == 1", attn::repr(attn_mask));
    book.fresh("scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)", attn::repr(sdpa_mask));
    book.fresh("torch.allclose(_, context_vec, atol=1e-5)",
               attn::repr_bool(attn::allclose(sdpa_mask, context_vec, 1e-5, 1e-5)));
    book.fresh("scaled_dot_product_attention(q, k, v, is_causal=True)", attn::repr(sdpa_causal));
    book.fresh("torch.allclose(_, context_vec, atol=1e-5)",
               attn::repr_bool(attn::allclose(sdpa_causal, context_vec, 1e-5, 1e-5)));
    return 0;
}
