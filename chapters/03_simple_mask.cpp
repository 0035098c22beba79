// Chapter 3: causal attention with a simple mask and renormalisation
// (notebook 002 In [3]-[8], notebook 004 In [30]-[41], Raschka 3 In [25]-[28]). Prose: docs/chapters/03_simple_mask.md.
#include <cmath>

#include "attn/modules/self_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "03_simple_mask", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();  // 002 In [1], 004 In [2]

        ch.step("weights");
        //! [weights]
        attn::manual_seed(ch.seed(789));
        const attn::SelfAttention_v2 sa_v2(3, 2);
        const attn::Tensor queries = sa_v2.W_query(inputs);
        const attn::Tensor keys = sa_v2.W_key(inputs);
        const attn::Tensor attn_scores = attn::matmul(queries, attn::T(keys));
        const float d_k = static_cast<float>(keys.shape().back());
        const attn::Tensor attn_weights = attn::softmax(attn::Tensor(attn_scores / std::sqrt(d_k)), -1);
        //! [weights]
        ch.book("002-In03", "the attention weights of SelfAttention_v2 (seed 789)",
                "Attention weights:\n" + attn::repr(attn_weights));
        ch.book("rch03-In25", "the same weights, printed without a label", attn::repr(attn_weights));
        ch.book("004-In30", "the same weights, printed through NumPy",
                "Attention Weight Matrix for all words:\n " + attn::numpy_str(attn_weights));
        ch.book("002-In04", "attn_scores.shape", attn::repr(attn::shape_of(attn_scores)));

        ch.step("mask");
        //! [mask]
        const std::size_t context_length = attn_scores.shape()[0];
        const attn::Tensor mask_simple = attn::tril(attn::ones({context_length, context_length}));
        //! [mask]
        ch.book("002-In05", "mask_simple = torch.tril(torch.ones(6, 6)), and its shape",
                attn::repr_tuple({attn::repr(mask_simple), attn::repr(attn::shape_of(mask_simple))}));
        ch.book("rch03-In26", "mask_simple alone", attn::repr(mask_simple));
        ch.book("004-In36", "the same mask, printed through NumPy",
                "Simple Mask: \n " + attn::numpy_str(mask_simple));

        ch.step("masked");
        //! [masked]
        const attn::Tensor masked_simple = attn_weights * mask_simple;
        //! [masked]
        ch.book("002-In06,rch03-In27", "masked_simple = attn_weights * mask_simple", attn::repr(masked_simple));
        ch.book("004-In38", "the same, printed through NumPy",
                "Masked Attention-Weights: \n " + attn::numpy_str(masked_simple));

        ch.step("renorm");
        //! [renorm]
        const attn::Tensor row_sums = attn::sum(masked_simple, -1, /*keepdim=*/true);
        const attn::Tensor masked_simple_norm = masked_simple / row_sums;
        //! [renorm]
        ch.book("002-In07", "row_sums = masked_simple.sum(dim=-1, keepdim=True)", attn::repr(row_sums));
        ch.book("002-In08,rch03-In28", "masked_simple_norm = masked_simple / row_sums",
                attn::repr(masked_simple_norm));
        ch.book("004-In39", "the same, printed through NumPy",
                "Normalized Masked Attention-Weights: \n " + attn::numpy_str(masked_simple_norm));

        ch.step("context");
        //! [context]
        const attn::Tensor values = sa_v2.W_value(inputs);
        const attn::Tensor context_vec = attn::matmul(masked_simple_norm, values);
        //! [context]
        ch.book("004-In41", "context matrix from the simple mask, printed through NumPy",
                "Context Matrix from SMA: \n " + attn::numpy_str(context_vec));
    });
}
