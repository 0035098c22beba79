// Appendix A's figure: the four runs of 002 In [13]'s cell after torch.manual_seed(123) on the
// portable backend, the fourth being the mask notebook 004 In [51] printed.
#include "figures.hpp"

#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{{
    .chapter = "A", .step = "fourth", .file = "chA_history_runs.svg",
    .caption = "Appendix A, step 3: torch.manual_seed(123), then nn.Dropout(0.5) of chapter 4's causal "
               "weights four times on the portable backend (72 draws a run). Each run draws another "
               "mask; the fourth is the one notebook 004 In [51] printed.",
    .draw = [](const figures::Data&) {
        const attn::Tensor w = textbook::causal_attention_weights(789);
        const attn::nn::Dropout dropout(0.5, attn::nn::BernoulliBackend::portable);
        attn::manual_seed(123);
        std::vector<attn::Tensor> runs;
        for (int run = 0; run < 4; ++run) runs.push_back(dropout(w));
        auto style = figures::token_style("The cell run four times after one seed (portable backend)");
        style.vmax = 2.0;
        style.precision = 1;
        return figures::svg::heatmaps(runs, {"run 1", "run 2", "run 3", "run 4 = 004 In [51]"}, style);
    }}};

}  // namespace
