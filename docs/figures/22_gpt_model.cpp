// Chapter 22's figure: GELU beside ReLU on his 100 points of linspace(-3, 3), as the chapter
// computed and recorded them with the block of his In [14] (his matplotlib figure).
#include "figures.hpp"

namespace {

std::vector<double> ch22_values(const attn::Tensor& t) { return {t.begin(), t.end()}; }

FIGURES{{
    .chapter = "22", .step = "gelu", .file = "ch22_gelu_relu.svg",
    .caption = "Chapter 22, step 3: GELU (the tanh approximation GPT-2 uses) and ReLU on the 100 points of "
               "torch.linspace(-3, 3, 100), as the chapter computed them. ReLU is 0 for every negative input; GELU "
               "is smooth, slightly negative there (lowest near x = -0.75) and close to x for large x.",
    .draw = [](const figures::Data& data) {
        const std::string key = "rch04-In14";
        const std::vector<double> x = ch22_values(data.tensor(key, "x"));
        figures::svg::PlotStyle style;
        style.title = "GELU and ReLU activation functions";
        style.subtitle = "Raschka ch. 4.3 In [14]: GELU()(x) and nn.ReLU()(x), x = torch.linspace(-3, 3, 100)";
        style.x_label = "x";
        style.y_label = "activation(x)";
        return figures::svg::line_plot({{"GELU", x, ch22_values(data.tensor(key, "gelu")), "", false},
                                        {"ReLU", x, ch22_values(data.tensor(key, "relu")), "", true}},
                                       style);
    }}};

}  // namespace
