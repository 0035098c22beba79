// Chapter 5's figure: the dropout masks the two notebooks printed, each drawn by its Bernoulli
// backend, as the chapter printed them.
#include "figures.hpp"

namespace {

FIGURES{{
    .chapter = "5", .step = "weights", .file = "ch05_dropout_backends.svg",
    .caption = "Chapter 5: nn.Dropout(0.5) applied to the causal weights after torch.manual_seed(123), "
               "as the chapter prints it for each notebook: the first call on PyTorch's MKL Bernoulli "
               "backend (notebook 002 In [13]) and the fourth call on the portable one (notebook 004 "
               "In [51]). Kept weights are scaled by 2.",
    .draw = [](const figures::Data& data) {
        auto style = figures::token_style("Causal weights after dropout (p = 0.5)");
        style.vmax = 2.0;
        return figures::svg::heatmaps({data.printed("002-In13", {6, 6}),
                                       data.printed("004-In51", {6, 6}, 1)},  // after the -inf of its label
                                      {"MKL backend, first call (002)", "portable backend, fourth call (004)"}, style);
    }}};

}  // namespace
