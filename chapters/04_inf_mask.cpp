// Chapter 4: the -inf causal mask (notebook 002 In [9]-[11], notebook 004 In [43]-[46]) and
// the sanity check against scaled_dot_product_attention (notebook 001 In [13]-[17]).
// Prose: docs/chapters/04_inf_mask.md.
#include <cmath>
#include <limits>

#include "attn/modules/self_attention.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "04_inf_mask", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]

        ch.step("scores");
        //! [scores]
        attn::manual_seed(ch.seed(789));
        const attn::SelfAttention_v2 sa_v2(3, 2);
        const attn::Tensor queries = sa_v2.W_query(inputs);
        const attn::Tensor keys = sa_v2.W_key(inputs);
        const attn::Tensor values = sa_v2.W_value(inputs);
        const attn::Tensor attn_scores = attn::matmul(queries, attn::T(keys));
        //! [scores]

        ch.step("mask");
        //! [mask]
        const std::size_t context_length = attn_scores.shape()[0];
        const attn::Tensor mask = attn::triu(attn::ones({context_length, context_length}), 1);
        const attn::BoolTensor causal_mask = attn::to_bool(mask);
        //! [mask]
        ch.book("002-In09", "mask = torch.triu(torch.ones(6, 6), diagonal=1), and mask.bool()",
                attn::repr(mask) + "\n\n" + attn::repr(causal_mask));

        ch.step("masked");
        //! [masked]
        const float inf = std::numeric_limits<float>::infinity();
        const attn::Tensor masked = attn::masked_fill(attn_scores, causal_mask, -inf);
        //! [masked]
        ch.book("002-In10", "masked = attn_scores.masked_fill(mask.bool(), -torch.inf), and its shape",
                attn::repr_tuple({attn::repr(masked), attn::repr(attn::shape_of(masked))}));
        ch.book("rch03-In29", "masked alone", attn::repr(masked));
        ch.book("004-In43", "the same masked scores, printed through NumPy",
                "Masked Attention Scores: \n " + attn::numpy_str(masked));

        ch.step("softmax");
        //! [softmax]
        const float d_k = static_cast<float>(keys.shape().back());
        const attn::Tensor attn_weights = attn::softmax(attn::Tensor(masked / std::sqrt(d_k)), -1);
        //! [softmax]
        ch.book("002-In11,rch03-In30", "attn_weights = softmax(masked / d_k**0.5)", attn::repr(attn_weights));
        ch.book("004-In44", "the same, printed through NumPy",
                "Normalized Masked Attention-Weights: \n " + attn::numpy_str(attn_weights));

        ch.step("context");
        //! [context]
        const attn::Tensor context_vec = attn::matmul(attn_weights, values);
        //! [context]
        ch.book("004-In46", "context matrix from the -inf mask",
                "Context Matrix from -inf mask: \n " + attn::repr(context_vec));

        ch.step("same");
        //! [same]
        const attn::Tensor row_weights = attn::softmax(attn::Tensor(attn_scores / std::sqrt(d_k)), -1);
        const attn::Tensor masked_simple = row_weights * attn::tril(attn::ones({context_length, context_length}));
        const attn::Tensor renormalised = masked_simple / attn::sum(masked_simple, -1, true);
        const float max_diff = attn::max_abs_diff(renormalised, attn_weights);
        //! [same]
        ch.show("max |renormalised - softmax(-inf masked)|, and allclose(atol=1e-7)",
                attn::repr(attn::scalar_tensor(max_diff)) + "\n" +
                    attn::repr_bool(attn::allclose(renormalised, attn_weights, 0.0, 1e-7)));

        ch.step("sdpa");
        //! [sdpa]
        const attn::BoolTensor attn_mask = attn::eq(attn::tril(attn::ones({context_length, context_length})), 1.0f);
        const attn::Tensor sdpa_mask = attn::scaled_dot_product_attention(queries, keys, values, {.attn_mask = &attn_mask});
        const attn::Tensor sdpa_causal = attn::scaled_dot_product_attention(queries, keys, values, {.is_causal = true});
        //! [sdpa]
        ch.show("attn_mask = torch.tril(torch.ones(6, 6)) == 1", attn::repr(attn_mask));
        ch.show("scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)", attn::repr(sdpa_mask));
        ch.show("torch.allclose(_, context_vec, atol=1e-5)",
                attn::repr_bool(attn::allclose(sdpa_mask, context_vec, 1e-5, 1e-5)));
        ch.show("scaled_dot_product_attention(q, k, v, is_causal=True)", attn::repr(sdpa_causal));
        ch.show("torch.allclose(_, context_vec, atol=1e-5)",
                attn::repr_bool(attn::allclose(sdpa_causal, context_vec, 1e-5, 1e-5)));
    });
}
