// Chapter 21's figures: the induction task's loss on each half over training (the phase
// change), and the previous-token and induction heads before and after it, from the same
// training the chapter runs.
#include "figures.hpp"

#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "attn/modules/attention_only.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/optim.hpp"
#include "../../chapters/21_attention_learns.hpp"

namespace {

constexpr std::size_t ch21_V = 32, ch21_half = 12, ch21_B = 32;

struct Ch21Run {
    attn::AttentionOnlyTransformer initial, trained;
    std::vector<double> steps, first_half, second_half;
};

// The chapter's step 4, once for both figures.
const Ch21Run& ch21_run() {
    static const Ch21Run run = [] {
        attn::manual_seed(123);
        attn::AttentionOnlyTransformer model({.vocab_size = ch21_V, .context_length = 23, .emb_dim = 32,
                                              .num_heads = 2});
        Ch21Run r{model, model, {}, {}, {}};
        attn::optim::AdamW optimizer(r.trained.named_parameters(), {.lr = 0.01});
        for (int step = 0; step < 1000; ++step) {
            const auto half = static_cast<std::size_t>(attn::randint(6, 13, {1})(0));
            const auto pair = attn::next_token_pairs(attn::repeated_tokens(ch21_B, half, ch21_V));
            attn::AttentionOnlyTransformer::Saved saved;
            const attn::Tensor logits = r.trained.forward(pair.first, saved);
            optimizer.zero_grad();
            r.trained.backward(saved, attn::sequence_cross_entropy_backward(logits, pair.second));
            optimizer.step();
            r.steps.push_back(step);
            r.first_half.push_back(attn::sequence_cross_entropy(logits, pair.second, 0, half - 1)());
            r.second_half.push_back(attn::sequence_cross_entropy(logits, pair.second, half, 2 * half - 1)());
        }
        return r;
    }();
    return run;
}

// Head h's weights [T, T] on sequence 0.
attn::Tensor ch21_head(const attn::Tensor& weights, std::size_t h) {
    return xt::view(weights, 0, h, xt::all(), xt::all());
}

FIGURES{
    {.chapter = "21", .step = "induction", .file = "ch21_phase_change.svg",
     .caption = "Chapter 21, step 4: the loss on each half of the repeated sequences while the "
                "attention-only transformer trains (AdamW, lr 0.01, 32 sequences of 6 to 12 tokens repeated a step). The "
                "first half cannot be predicted and stays near ln 32; the second half drops "
                "abruptly once the induction head forms.",
     .draw = [](const figures::Data&) {
         const Ch21Run& r = ch21_run();
         figures::svg::PlotStyle style;
         style.title = "Next-token loss on each half of the sequence";
         style.subtitle = "6 to 12 random tokens of 32, repeated; the library's training (PyTorch's bits)";
         style.x_label = "training step";
         style.y_label = "cross-entropy";
         return figures::svg::line_plot({{"first half (unpredictable)", r.steps, r.first_half, "", true},
                                         {"second half (the repeat)", r.steps, r.second_half, "", false},
                                         {"ln 32", {0.0, 999.0}, {3.4657, 3.4657}, "#999999", true}},
                                        style);
     }},
    {.chapter = "21", .step = "heads", .file = "ch21_heads.svg",
     .caption = "Chapter 21, step 5: attention weights on one held-out sequence (12 tokens, then "
                "the same 12), before and after training: the head of block 0 with the most weight "
                "on the previous token (the diagonal below the main one), and the head of block 1 "
                "with the most weight on the token after the earlier occurrence of the current one "
                "(the diagonal 11 places back).",
     .draw = [](const figures::Data&) {
         const Ch21Run& r = ch21_run();
         attn::Generator held_out(2024);
         const auto pair = attn::next_token_pairs(attn::repeated_tokens(1, ch21_half, ch21_V, held_out));
         const std::vector<attn::Tensor> before = r.initial.attn_weights(pair.first);
         const std::vector<attn::Tensor> after = r.trained.attn_weights(pair.first);
         const std::size_t induction = ch21::strongest_induction_head(after[1], ch21_half);
         // block 0's previous-token head: the larger mean weight on key i - 1
         double best = -1.0;
         std::size_t previous = 0;
         for (std::size_t h = 0; h < 2; ++h) {
             double s = 0.0;
             for (std::size_t i = 1; i < 2 * ch21_half - 1; ++i) s += after[0](0, h, i, i - 1);
             if (s > best) best = s, previous = h;
         }
         figures::svg::HeatmapStyle style;
         style.title = "Previous-token head and induction head, before and after training";
         style.precision = -1;
         return figures::svg::heatmaps(
             {ch21_head(before[0], previous), ch21_head(after[0], previous), ch21_head(before[1], induction),
              ch21_head(after[1], induction)},
             {"block 0 head " + std::to_string(previous) + ", step 0", "block 0 head " + std::to_string(previous) + ", step 1000",
              "block 1 head " + std::to_string(induction) + ", step 0", "block 1 head " + std::to_string(induction) + ", step 1000"},
             style);
     }},
};

}  // namespace
