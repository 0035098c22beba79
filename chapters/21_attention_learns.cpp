// Chapter 21: attention learns — the training loop, SGD and AdamW as PyTorch 1.13 runs them.
// Prose: docs/chapters/.
#include <cmath>
#include <string>
#include <vector>

#include "attn/modules/attention_only.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/optim.hpp"
#include "attn/print/print.hpp"
#include "textbook/book.hpp"
#include "textbook/chapter.hpp"
#include "textbook/progress.hpp"
#include "21_attention_learns.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "21_attention_learns", .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("loop");
        //! [loop]
        const attn::Tensor inputs = textbook::inputs();
        const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
        const auto fit = [&](attn::MultiHeadAttention& mha, attn::optim::Optimizer& optimizer,
                             const attn::Tensor& target) {
            std::vector<float> losses;
            for (int step = 0; step < 20; ++step) {
                optimizer.zero_grad();
                attn::AttentionSaved saved;
                const attn::Tensor context_vecs = mha.forward(batch, saved);
                const attn::Tensor loss = attn::mse_loss(context_vecs, target);
                // loss.backward(): dL/dL = 1, back through mse_loss, then through the module
                const attn::Tensor grad = attn::mse_loss_backward(attn::scalar_tensor(1.0f), context_vecs, target);
                mha.backward(saved, grad);
                optimizer.step();
                losses.push_back(loss());
            }
            return losses;
        };
        //! [loop]

        ch.step("sgd");
        //! [sgd]
        attn::manual_seed(ch.seed(123));
        attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
        const attn::Tensor target = attn::rand({2, 6, 2});
        attn::optim::SGD sgd(mha.named_parameters(), {.lr = 0.5});
        const std::vector<float> sgd_losses = fit(mha, sgd, target);
        //! [sgd]
        ch.book("o21-In03", "fit(torch.optim.SGD, lr=0.5)", ch21::loss_lines(sgd_losses));
        ch.book("o21-In04", "print(mha.W_query.weight)", attn::parameter_repr(mha.W_query.weight));

        ch.step("adamw");
        //! [adamw]
        attn::manual_seed(ch.seed(123));
        attn::MultiHeadAttention mha2({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.0, .num_heads = 2});
        const attn::Tensor target2 = attn::rand({2, 6, 2});
        attn::optim::AdamW adamw(mha2.named_parameters(), {.lr = 0.01, .weight_decay = 0.1});
        const std::vector<float> adamw_losses = fit(mha2, adamw, target2);
        //! [adamw]
        ch.book("o21-In05", "fit(torch.optim.AdamW, lr=0.01, weight_decay=0.1)", ch21::loss_lines(adamw_losses));
        ch.book("o21-In06", "print(mha.W_query.weight)", attn::parameter_repr(mha2.W_query.weight));
        ch.show("AdamW's state after 20 steps: step, exp_avg and exp_avg_sq of W_query.weight",
                std::to_string(adamw.state()[0].step) + "\n" + attn::repr(adamw.state()[0].exp_avg) + "\n" +
                    attn::repr(adamw.state()[0].exp_avg_sq));

        ch.step("induction");
        //! [induction]
        const std::size_t V = 32, B = 32;
        attn::manual_seed(ch.seed(123));
        attn::AttentionOnlyTransformer model({.vocab_size = V, .context_length = 23, .emb_dim = 32, .num_heads = 2});
        const attn::AttentionOnlyTransformer untrained = model;  // step 5 looks at it again
        attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.01});
        std::vector<float> losses, first_half, second_half;
        textbook::Progress progress("training", 1000);  // a line on stderr, on a terminal only
        for (int step = 0; step < 1000; ++step) {
            const auto half = static_cast<std::size_t>(attn::randint(6, 13, {1})(0));  // 6 to 12 tokens, twice
            const auto [input, targets] = attn::next_token_pairs(attn::repeated_tokens(B, half, V));
            attn::AttentionOnlyTransformer::Saved saved;
            const attn::Tensor logits = model.forward(input, saved);
            const attn::Tensor loss = attn::sequence_cross_entropy(logits, targets);
            optimizer.zero_grad();
            model.backward(saved, attn::sequence_cross_entropy_backward(logits, targets));
            optimizer.step();
            losses.push_back(loss());
            first_half.push_back(attn::sequence_cross_entropy(logits, targets, 0, half - 1)());
            second_half.push_back(attn::sequence_cross_entropy(logits, targets, half, 2 * half - 1)());
            progress.update(step + 1);
        }
        progress.finish();
        //! [induction]
        ch.book("o21-In09", "the training loop, every 50 steps", ch21::curve_lines(losses, first_half, second_half, 50),
                {{"first_half", first_half}, {"second_half", second_half}});

        ch.step("heads");
        //! [heads]
        const std::size_t half = 12;
        attn::Generator held_out(2024);
        const auto [input, targets] = attn::next_token_pairs(attn::repeated_tokens(64, half, V, held_out));
        const std::vector<attn::Tensor> weights = model.attn_weights(input);
        //! [heads]
        ch.show("mean attention of each head, queries in the second half (64 held-out sequences)",
                ch21::head_score_lines(weights, half), ch21::first_sequence(untrained.attn_weights(input), weights));

        ch.step("ablation");
        //! [ablation]
        const std::size_t head = ch21::strongest_induction_head(weights[1], half);
        attn::AttentionOnlyTransformer ablated = model;
        attn::Tensor& W = ablated.blocks[1].out_proj.weight;  // its columns read the head's output
        for (std::size_t row = 0; row < W.shape()[0]; ++row)
            for (std::size_t c = head * model.blocks[1].head_dim; c < (head + 1) * model.blocks[1].head_dim; ++c)
                W(row, c) = 0.0f;
        const float trained = attn::sequence_cross_entropy(model(input), targets, half, 2 * half - 1)();
        const float without = attn::sequence_cross_entropy(ablated(input), targets, half, 2 * half - 1)();
        //! [ablation]
        ch.show("second-half loss on the held-out sequences",
                textbook::labelled_lines({{"trained", attn::repr(attn::scalar_tensor(trained))},
                                          {"block 1 head " + std::to_string(head) + " zeroed",
                                           attn::repr(attn::scalar_tensor(without))},
                                          {"ln(32), a uniform guess", attn::repr(attn::scalar_tensor(std::log(32.0f)))}}));
    });
}
