// Chapter 19: attention's gradients by hand, no autograd. Prose: docs/chapters/.
#include <cmath>
#include <string>

#include "attn/modules/multihead.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "19_gradients", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        const std::string backend = std::string("[") + ch.backend_name() + " backend] ";

        ch.step("softmax");
        //! [softmax]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor attn_scores_2 = attn::matmul(inputs, attn::select(inputs, 1));
        const attn::Tensor attn_weights_2 = attn::softmax(attn_scores_2, 0);
        const attn::Tensor d_weights = attn::tensor({1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
        // dS = P * (dP - sum(dP * P)): one dot product, no [6, 6] Jacobian
        const attn::Tensor d_scores = attn::softmax_backward(d_weights, attn_weights_2);
        //! [softmax]
        ch.book("o19-In02", "attn_scores_2.grad for dL/dweights = (1, 0, 0, 0, 0, 0)", attn::repr(d_scores));

        ch.step("jacobian");
        //! [jacobian]
        attn::Tensor jacobian = attn::zeros({6, 6});  // J[i, j] = dP_i / dS_j = P_i (delta_ij - P_j)
        for (std::size_t i = 0; i < 6; ++i)
            for (std::size_t j = 0; j < 6; ++j)
                jacobian(i, j) = attn_weights_2(i) * ((i == j ? 1.0f : 0.0f) - attn_weights_2(j));
        const attn::Tensor jvp = attn::matmul(attn::transpose(jacobian, 0, 1), d_weights);
        //! [jacobian]
        ch.show("the Jacobian diag(P) - P P^T, 6 x 6", attn::repr(jacobian));
        ch.show("J^T dP, and max |J^T dP - d_scores|",
                attn::repr(jvp) + "\n" + textbook::max_abs_diff_text(jvp, d_scores));

        ch.step("forward");
        //! [forward]
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        attn::manual_seed(ch.seed(123));
        attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
        attn::AttentionSaved saved;  // what autograd would keep: x, q, k, v, context, L
        const attn::Tensor context_vecs = mha.forward(batch, saved);
        const attn::Tensor squares = attn::pow(context_vecs, 2.0f);
        const attn::Tensor loss = attn::mean(squares);
        //! [forward]
        ch.book("o19-In03", "loss = context_vecs.pow(2).mean()", attn::repr(loss));

        ch.step("backward");
        //! [backward]
        const attn::Tensor one = attn::scalar_tensor(1.0f);  // dloss/dloss
        const attn::Tensor d_squares = attn::mean_backward(one, attn::shape_of(squares));
        const attn::Tensor d_context = attn::pow_backward(d_squares, context_vecs, 2.0f);
        const attn::Tensor batch_grad = mha.backward(saved, d_context);
        std::string grads;
        for (const attn::nn::NamedParameter& p : mha.named_parameters())
            grads += (grads.empty() ? "" : "\n") + p.name + " " + attn::repr(**p.grad);
        //! [backward]
        ch.book("o19-In04", "name, param.grad for mha.named_parameters()", grads);
        ch.book("o19-In05", "batch.grad", attn::repr(batch_grad));

        ch.step("dropout");
        //! [dropout]
        attn::manual_seed(ch.seed(123));
        attn::MultiHeadAttention mha_dropout({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5,
                                              .num_heads = 2, .backend = ch.backend()});
        attn::AttentionSaved saved_dropout;  // keeps the multipliers keep / (1 - p) it drew
        const attn::Tensor out = mha_dropout.forward(batch, saved_dropout);
        const attn::Tensor loss_dropout = attn::mean(attn::pow(out, 2.0f));
        const attn::Tensor d_out = attn::pow_backward(attn::mean_backward(one, attn::shape_of(out)), out, 2.0f);
        const attn::Tensor batch_grad_dropout = mha_dropout.backward(saved_dropout, d_out);
        std::string grads_dropout;
        for (const attn::nn::NamedParameter& p : mha_dropout.named_parameters())
            grads_dropout += (grads_dropout.empty() ? "" : "\n") + p.name + " " + attn::repr(**p.grad);
        //! [dropout]
        ch.book("o19-In06", backend + "loss with dropout 0.5, seed 123", attn::repr(loss_dropout));
        ch.book("o19-In07", backend + "param.grad with dropout 0.5", grads_dropout);
        ch.book("o19-In08", backend + "batch.grad with dropout 0.5", attn::repr(batch_grad_dropout));
        ch.show(backend + "the dropout multipliers reused backwards, head 0 of batch element 0",
                attn::repr(attn::select(attn::select(saved_dropout.attention.dropout_noise, 0), 0)));

        ch.step("accumulate");
        //! [accumulate]
        mha.backward(saved, d_context);  // a second backward adds: .grad is a sum
        const attn::Tensor twice = *mha.out_proj.bias_grad;
        mha.zero_grad();                 // PyTorch 1.13's default: fill with zeros
        //! [accumulate]
        ch.show("out_proj.bias.grad after two backward passes, then after zero_grad()",
                attn::repr(twice) + "\n" + attn::repr(*mha.out_proj.bias_grad));
    });
}
