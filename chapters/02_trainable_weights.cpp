// Chapter 2: self-attention with trainable weights (notebook 004 In [16], In [27];
// notebook 002 In [1]).
#include <cmath>
#include <iostream>

#include "attn/attention.hpp"
#include "textbook/chapter.hpp"
#include "attn/functional.hpp"
#include "attn/generator.hpp"
#include "attn/nn.hpp"
#include "attn/print.hpp"

int main(int argc, char** argv) {
    const auto options = textbook::parse_args(
        argc, argv, "chapter_02_trainable_weights",
        "Chapter 2: self-attention with trainable weight matrices");
    textbook::Printer book(options, "Chapter 2 · Trainable weights: queries, keys, values");

    const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]

    book.prose(
        "Three trainable matrices project each input into a query, a key and a value "
        "(d_in = 3 -> d_out = 2). Their values come from torch.manual_seed(123) followed by "
        "three torch.rand(3, 2): the same 18 draws of PyTorch's Mersenne Twister, so the "
        "same numbers as the notebook.");
    //! [weights]
    const std::size_t d_in = 3, d_out = 2;
    attn::manual_seed(123);
    const attn::Tensor W_query = attn::nn::rand_parameter(d_in, d_out);
    const attn::Tensor W_key = attn::nn::rand_parameter(d_in, d_out);
    const attn::Tensor W_value = attn::nn::rand_parameter(d_in, d_out);
    //! [weights]
    book.fresh("W_query = torch.rand(3, 2) after torch.manual_seed(123)", attn::repr(W_query));
    book.fresh("W_key", attn::repr(W_key));
    book.fresh("W_value", attn::repr(W_value));

    //! [journey]
    const attn::Tensor x_2 = attn::select(inputs, 1);        // "journey"
    const attn::Tensor query_2 = attn::matmul(x_2, W_query);  // [3] @ [3, 2] -> [2]
    const attn::Tensor key_2 = attn::matmul(x_2, W_key);
    const attn::Tensor value_2 = attn::matmul(x_2, W_value);
    const attn::Tensor keys = attn::matmul(inputs, W_key);     // [6, 2]
    const attn::Tensor values = attn::matmul(inputs, W_value);  // [6, 2]
    const attn::Tensor attn_score_22 = attn::matmul(query_2, key_2);
    const attn::Tensor attn_scores_2 = attn::matmul(query_2, attn::T(keys));
    const float d_k = static_cast<float>(keys.shape().back());
    const attn::Tensor attn_weights_2 = attn::softmax(attn::Tensor(attn_scores_2 / std::sqrt(d_k)));
    const attn::Tensor context_vec_2 = attn::matmul(attn_weights_2, values);
    //! [journey]
    book.fresh("query_2 = x_2 @ W_query, key_2, value_2",
               attn::repr(query_2) + "\n" + attn::repr(key_2) + "\n" + attn::repr(value_2));
    book.fresh("keys.shape, values.shape", attn::repr_tuple({attn::repr(attn::shape_of(keys)),
                                                              attn::repr(attn::shape_of(values))}));
    book.fresh("attn_score_22 = query_2 . key_2", attn::repr(attn_score_22));
    book.fresh("attn_scores_2 = query_2 @ keys.T", attn::repr(attn_scores_2));
    book.prose(
        "The scores are divided by sqrt(d_k) before the softmax: with large d_k, dot "
        "products grow large, the softmax becomes nearly one-hot and its gradients vanish.");
    book.fresh("attn_weights_2 = softmax(attn_scores_2 / d_k**0.5)", attn::repr(attn_weights_2));
    book.book("004-In16", "context vector of \"journey\" (seed 123, three torch.rand(3, 2))",
              "Context Vector for journey: " + attn::repr(context_vec_2));

    book.prose(
        "SelfAttention_v1 packs these steps into a module with the same three rand "
        "matrices; run on all six tokens, its second row is the vector just computed.");
    //! [v1]
    attn::manual_seed(123);
    const attn::SelfAttention_v1 sa_v1(d_in, d_out);
    //! [v1]
    book.fresh("SelfAttention_v1(3, 2)(inputs), seed 123", attn::repr(sa_v1(inputs)));

    book.prose(
        "SelfAttention_v2 uses nn.Linear layers without bias instead: the same product, "
        "with the weight stored transposed ([d_out, d_in]) and PyTorch's Linear "
        "initialisation, uniform in +-1/sqrt(d_in). Seed 789, as both notebooks use.");
    //! [v2]
    attn::manual_seed(789);
    const attn::SelfAttention_v2 sa_v2(d_in, d_out);
    const attn::Tensor context = sa_v2(inputs);
    //! [v2]
    book.book("002-In01", "SelfAttention_v2(3, 2)(inputs), seed 789", attn::repr(context));
    book.book("004-In27", "the same, printed through NumPy (.detach().numpy())",
              "Context Matrix for all words:\n " + attn::numpy_str(context));
    return 0;
}
