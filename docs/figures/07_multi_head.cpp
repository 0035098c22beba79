// Chapter 7's figure: the weights of each head of notebook 003's GPT-2 layer.
#include "figures.hpp"

#include "attn/modules/gpt2.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"

namespace {

FIGURES{{
    .chapter = "7", .step = "gpt2_attention", .file = "ch07_heads.svg",
    .caption = "Chapter 7: the causal attention weights of each head of notebook 003's GPT-2 layer "
               "(n_embd S = 12, n_head H = 3, head size 4, evaluation mode), for the first of the "
               "chapter's B = 16 sequences: torch.manual_seed(123), the layer, then x = "
               "torch.randn(16, 5, 12), as the chapter draws them. Head 0 is the att[0, 0] the "
               "chapter prints. Even untrained, each head weighs the tokens its own way.",
    .draw = [](const figures::Data&) {
        attn::manual_seed(123);
        attn::GPT2Config config;
        config.block_size = 5;
        config.n_embd = 12;
        config.n_head = 3;
        attn::GPT2Attention layer(config);
        layer.eval();
        const attn::Tensor x = attn::randn({16, 5, 12});
        const auto steps = layer.forward_steps(x);
        const attn::Tensor heads = attn::select(steps.att, 0);  // [H, T, T]
        std::vector<attn::Tensor> panels;
        std::vector<std::string> titles;
        for (std::size_t h = 0; h < layer.num_heads; ++h) {
            panels.push_back(attn::select(heads, static_cast<long>(h)));
            titles.push_back("head " + std::to_string(h));
        }
        figures::svg::HeatmapStyle style;
        style.title = "Attention weights per head (GPT-2 layout)";
        style.row_labels = {"t0", "t1", "t2", "t3", "t4"};
        style.col_labels = style.row_labels;
        return figures::svg::heatmaps(panels, titles, style);
    }}};

}  // namespace
