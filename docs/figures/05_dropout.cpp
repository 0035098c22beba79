// Chapter 5's figure: dropout of the causal weights, drawn by each Bernoulli backend.
#include "figures.hpp"

#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "textbook/book.hpp"

namespace {

FIGURES{{
    .chapter = "5", .step = "weights", .file = "ch05_dropout_backends.svg",
    .caption = "Chapter 5: nn.Dropout(0.5) applied to the causal weights after torch.manual_seed(123), "
               "drawn by each of PyTorch's CPU Bernoulli backends (portable: notebook 004; MKL: "
               "notebook 002). Kept weights are scaled by 2.",
    .draw = [](const figures::Data&) {
        const attn::Tensor w = textbook::causal_attention_weights(789);
        std::vector<attn::Tensor> panels;
        for (auto backend : {attn::nn::BernoulliBackend::portable, attn::nn::BernoulliBackend::mkl}) {
            attn::manual_seed(123);
            panels.push_back(attn::nn::Dropout(0.5, backend)(w));
        }
        auto style = figures::token_style("Causal weights after dropout (p = 0.5, seed 123)");
        style.vmax = 2.0;
        return figures::svg::heatmaps(panels, {"portable backend", "MKL backend"}, style);
    }}};

}  // namespace
