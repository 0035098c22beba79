// Exercises: Raschka's exercises 3.1-3.3 (data/sources/raschka/raschka_ch03_exercises.txt),
// preceded by his look at a batched product (Raschka 3 In [37]-[38]).
// Prose: docs/chapters/X_exercises.md.
#include <cstdio>
#include <string>

#include "attn/modules/self_attention.hpp"
#include "attn/modules/causal.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/print/print.hpp"
#include "textbook/chapter.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "X_exercises", .seeded = true}, [](textbook::Chapter& ch) {
        const attn::Tensor inputs = textbook::inputs();               // Raschka 3 In [2]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);  // [2, 6, 3], chapter 6

        ch.book("rch03x-In01", "the version: no torch here; the library reproduces torch 1.13's CPU arithmetic",
                "attn (C++), in place of torch 1.13.1");
        ch.step("per_head");
        //! [per_head]
        // (b, num_heads, num_tokens, head_dim) = (1, 2, 3, 4)
        const attn::Tensor a = attn::view(attn::tensor({0.2745f, 0.6584f, 0.2775f, 0.8573f,  //
                                                        0.8993f, 0.0390f, 0.9268f, 0.7388f,  //
                                                        0.7179f, 0.7058f, 0.9156f, 0.4340f,  //
                                                        0.0772f, 0.3565f, 0.1479f, 0.5331f,  //
                                                        0.4066f, 0.2318f, 0.4545f, 0.9737f,  //
                                                        0.4606f, 0.5159f, 0.4220f, 0.5786f}),
                                          {1, 2, 3, 4});
        const attn::Tensor first_head = attn::select(attn::select(a, 0), 0);   // a[0, 0, :, :]
        const attn::Tensor second_head = attn::select(attn::select(a, 0), 1);  // a[0, 1, :, :]
        //! [per_head]
        ch.book("rch03-In37", "a @ a.transpose(2, 3)", attn::repr(attn::matmul(a, attn::transpose(a, 2, 3))));
        ch.book("rch03-In38-1", "first_head @ first_head.T",
                "First head:\n " + attn::repr(attn::matmul(first_head, attn::T(first_head))));
        ch.book("rch03-In38-2", "second_head @ second_head.T",
                "Second head:\n " + attn::repr(attn::matmul(second_head, attn::T(second_head))));

        ch.step("ex31");
        //! [ex31]
        const std::size_t d_in = 3, d_out = 2;
        attn::manual_seed(ch.seed(123));
        attn::SelfAttention_v1 sa_v1(d_in, d_out);
        attn::manual_seed(ch.seed(123));
        const attn::SelfAttention_v2 sa_v2(d_in, d_out);
        sa_v1.W_query = attn::T(sa_v2.W_query.weight);  // nn.Linear keeps [d_out, d_in]
        sa_v1.W_key = attn::T(sa_v2.W_key.weight);
        sa_v1.W_value = attn::T(sa_v2.W_value.weight);
        //! [ex31]
        ch.book("rch03x-In06", "sa_v1(inputs) with sa_v2's weights", attn::repr(sa_v1(inputs)));
        ch.book("rch03x-In07", "sa_v2(inputs)", attn::repr(sa_v2(inputs)));

        ch.step("ex32");
        //! [ex32]
        attn::manual_seed(ch.seed(123));
        const attn::MultiHeadAttentionWrapper mha_2d({.d_in = 3, .d_out = 1, .context_length = 6, .num_heads = 2});
        const attn::Tensor context_vecs = mha_2d(batch);
        //! [ex32]
        ch.book("rch03x-Ex32", "d_out = 1, num_heads = 2: context_vecs and its shape",
                attn::repr(context_vecs) + "\ncontext_vecs.shape: " + attn::repr(attn::shape_of(context_vecs)));
        const attn::Tensor v0 = mha_2d.heads[0].W_value(inputs), v1 = mha_2d.heads[1].W_value(inputs);
        ch.show("each head's six values (context vectors are weighted averages of them)",
                attn::repr(attn::T(v0)) + "\n" + attn::repr(attn::T(v1)));

        ch.step("ex33");
        //! [ex33]
        const std::size_t context_length = 1024;
        const attn::MultiHeadAttention mha({.d_in = 768, .d_out = 768, .context_length = context_length, .num_heads = 12});
        auto count = [](const attn::nn::Linear& l) { return l.weight.size() + (l.bias ? l.bias->size() : 0); };
        const std::size_t parameters = count(mha.W_query) + count(mha.W_key) + count(mha.W_value) + count(mha.out_proj);
        //! [ex33]
        char millions[32];
        std::snprintf(millions, sizeof millions, "%.2f", static_cast<double>(parameters) / 1e6);
        ch.book("rch03x-Ex33", "count_parameters(mha)",
                std::to_string(parameters) + "  # (" + millions + " M)");
    });
}
