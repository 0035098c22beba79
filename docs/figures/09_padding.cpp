// Chapter 9's figure: the causal weights of notebook 000's left-padded batch, masked_softmax.
#include "figures.hpp"

#include <limits>

#include "attn/attention/padding.hpp"
#include "textbook/tokenizer_data.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"

namespace {

FIGURES{{
    .chapter = "9", .step = "fix", .file = "ch09_padding_weights.svg",
    .caption = "Chapter 9: notebook 000's three texts, tokenised and left-padded with the pad id 2; "
               "random logits (seed 0) with the causal mask and the attention mask applied, then "
               "masked_softmax. Pad keys get no weight; pad queries attend to nothing (rows of 0).",
    .draw = [](const figures::Data& data) {
        const auto tok = textbook::TokenizerData::load(data.dir / "tokenizer" / "mistral-7b-v0.1_000.tsv");
        const auto batch = attn::pad_batch(tok.sequences(), tok.eos_token_id, attn::PaddingSide::left);
        const std::size_t B = batch.input_ids.shape()[0], S = batch.input_ids.shape()[1];
        attn::manual_seed(0);
        const attn::Tensor logits = attn::randn({B, S, S});
        const attn::BoolTensor future = attn::to_bool(attn::triu(attn::ones({S, S}), 1));
        const attn::Tensor causal = attn::masked_fill(logits, future, -std::numeric_limits<float>::infinity());
        const attn::Tensor weights = attn::masked_softmax(attn::apply_attention_mask(causal, batch.attention_mask));
        std::vector<attn::Tensor> panels;
        std::vector<std::string> titles;
        for (std::size_t b = 0; b < B; ++b) {
            panels.push_back(attn::select(weights, static_cast<long>(b)));
            titles.push_back("text " + std::to_string(b) + " (" + std::to_string(tok.texts[b].input_ids.size()) + " tokens)");
        }
        figures::svg::HeatmapStyle style;
        style.title = "Causal attention weights of a left-padded batch";
        for (std::size_t s = 0; s < S; ++s) style.row_labels.push_back(std::to_string(s));
        style.col_labels = style.row_labels;
        style.precision = 2;
        return figures::svg::heatmaps(panels, titles, style);
    }}};

}  // namespace
