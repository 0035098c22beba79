// Chapter 2: self-attention with trainable weights (notebook 004 In [16], In [27];
// notebook 002 In [1]; Raschka 3 In [17]-[24]). Prose: docs/chapters/02_trainable_weights.md.
#include <cmath>

#include "attn/modules/self_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "02_trainable_weights", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]

        ch.step("weights");
        //! [weights]
        const std::size_t d_in = 3, d_out = 2;
        attn::manual_seed(ch.seed(123));
        const attn::Tensor W_query = attn::nn::rand_parameter(d_in, d_out);
        const attn::Tensor W_key = attn::nn::rand_parameter(d_in, d_out);
        const attn::Tensor W_value = attn::nn::rand_parameter(d_in, d_out);
        //! [weights]
        ch.show("W_query = torch.rand(3, 2) after torch.manual_seed(123)", attn::repr(W_query));
        ch.show("W_key", attn::repr(W_key));
        ch.show("W_value", attn::repr(W_value));

        ch.step("journey");
        //! [journey]
        const attn::Tensor x_2 = attn::select(inputs, 1);         // "journey"
        const attn::Tensor query_2 = attn::matmul(x_2, W_query);  // [3] @ [3, 2] -> [2]
        const attn::Tensor key_2 = attn::matmul(x_2, W_key);
        const attn::Tensor value_2 = attn::matmul(x_2, W_value);
        const attn::Tensor keys = attn::matmul(inputs, W_key);      // [6, 2]
        const attn::Tensor values = attn::matmul(inputs, W_value);  // [6, 2]
        const attn::Tensor attn_score_22 = attn::matmul(query_2, key_2);
        const attn::Tensor attn_scores_2 = attn::matmul(query_2, attn::T(keys));
        //! [journey]
        ch.book("rch03-In17", "query_2 = x_2 @ W_query", attn::repr(query_2));
        ch.show("key_2 = x_2 @ W_key, value_2 = x_2 @ W_value",
                attn::repr(key_2) + "\n" + attn::repr(value_2));
        ch.book("rch03-In18", "keys.shape, values.shape",
                "keys.shape: " + attn::repr(attn::shape_of(keys)) +
                    "\nvalues.shape: " + attn::repr(attn::shape_of(values)));
        ch.book("rch03-In19", "attn_score_22 = query_2 . key_2", attn::repr(attn_score_22));
        ch.book("rch03-In20", "attn_scores_2 = query_2 @ keys.T", attn::repr(attn_scores_2));

        ch.step("scaled");
        //! [scaled]
        const float d_k = static_cast<float>(keys.shape().back());
        const attn::Tensor attn_weights_2 = attn::softmax(attn::Tensor(attn_scores_2 / std::sqrt(d_k)));
        const attn::Tensor context_vec_2 = attn::matmul(attn_weights_2, values);
        //! [scaled]
        ch.book("rch03-In21", "attn_weights_2 = softmax(attn_scores_2 / d_k**0.5)", attn::repr(attn_weights_2));
        ch.book("rch03-In22", "context_vec_2 = attn_weights_2 @ values", attn::repr(context_vec_2));
        ch.book("004-In16", "context vector of \"journey\"",
                "Context Vector for journey: " + attn::repr(context_vec_2));

        ch.step("v1");
        //! [v1]
        attn::manual_seed(ch.seed(123));
        const attn::SelfAttention_v1 sa_v1(d_in, d_out);
        //! [v1]
        ch.book("rch03-In23", "SelfAttention_v1(3, 2)(inputs), seed 123", attn::repr(sa_v1(inputs)));

        ch.step("v2");
        //! [v2]
        attn::manual_seed(ch.seed(789));
        const attn::SelfAttention_v2 sa_v2(d_in, d_out);
        const attn::Tensor context = sa_v2(inputs);
        //! [v2]
        ch.book("002-In01,rch03-In24", "SelfAttention_v2(3, 2)(inputs), seed 789", attn::repr(context));
        ch.book("004-In27", "the same, printed through NumPy",
                "Context Matrix for all words:\n " + attn::numpy_str(context));
    });
}
