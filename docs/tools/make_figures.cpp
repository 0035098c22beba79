// make_figures: draws the generated book's pictures as SVG, at build time, from the library.
//
// Usage: make_figures <output directory>
//
// Each picture is computed by the same library calls as its chapter (the same seeds, the same
// inputs), so a picture can never show something the code does not do. Writes one SVG per
// figure and `index.tsv` (chapter, file, status, caption) for docs/tools/bookpages.py:
//   ok      the figure was drawn;
//   absent  its data is not recorded yet (the KV-cache benchmark): the SVG is a visible note;
//   failed  the library threw: the SVG is a note with the error (the docs test fails on it).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "attn/attention/self_attention.hpp"
#include "attn/attention/causal.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/gpt2.hpp"
#include "textbook/benchmark_results.hpp"
#include "textbook/book.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/multihead.hpp"
#include "attn/nn/nn.hpp"
#include "attn/attention/padding.hpp"
#include "attn/attention/swa.hpp"
#include "textbook/svg.hpp"
#include "attn/core/tensor.hpp"

namespace fs = std::filesystem;

namespace {

// The six tokens of notebooks 002 and 004, "Your journey starts with one step".
const std::vector<std::string> kTokens = {"Your", "journey", "starts", "with", "one", "step"};

// The attention scores of chapters 2-4: SelfAttention_v2(3, 2) after manual_seed(789).
attn::Tensor v2_scores() {
    const attn::Tensor inputs = textbook::inputs();
    attn::manual_seed(789);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    return attn::matmul(sa_v2.W_query(inputs), attn::T(sa_v2.W_key(inputs)));
}

attn::Tensor causal_weights() { return textbook::causal_attention_weights(789); }

textbook::svg::HeatmapStyle token_style(const std::string& title) {
    textbook::svg::HeatmapStyle style;
    style.title = title;
    style.row_labels = kTokens;
    style.col_labels = kTokens;
    return style;
}

struct Figure {
    int chapter;
    std::string file;
    std::string caption;
    std::function<std::string()> draw;  // returns the SVG; throws when it cannot
};

// A figure whose data may not exist yet: draw() throws this to leave a visible note.
struct Absent : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- KV-cache benchmark

std::string kv_cache_plot(const fs::path& data_dir) {
    std::vector<std::string> sources;
    const auto series = textbook::read_benchmark_series(data_dir / "benchmarks", sources);
    if (series.empty())
        throw Absent("No benchmark results recorded: data/benchmarks/ holds no Google Benchmark "
                     "JSON with benchmarks named <series>/<context length>. Once the KV-cache "
                     "benchmark's results are recorded there, this plot draws them.");
    // One colour per width; the cached variant solid, the uncached one dashed.
    static const std::vector<std::string> colours{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
    std::map<std::string, std::string> colour_of;
    std::vector<textbook::svg::Series> lines;
    for (const auto& [name, points] : series) {
        textbook::svg::Series s;
        s.name = name;
        for (const auto& p : points) s.x.push_back(p.context_length), s.y.push_back(p.microseconds);
        const auto paren = name.find(" (");
        const std::string width = paren == std::string::npos ? "" : name.substr(paren);
        if (!colour_of.count(width)) colour_of[width] = colours[colour_of.size() % colours.size()];
        s.colour = colour_of[width];
        s.dashed = name.rfind("without", 0) == 0;
        lines.push_back(s);
    }
    textbook::svg::PlotStyle style;
    style.title = "Time per generated token, with and without the KV cache";
    style.x_label = "context length (tokens before the new one)";
    style.y_label = "time per token (\u00b5s)";
    style.log_x = true;
    style.log_y = true;
    std::string from;
    for (const auto& s : sources) from += (from.empty() ? "" : ", ") + s;
    style.subtitle = "median of the repetitions recorded in data/benchmarks/" + from + "; log-log axes";
    return textbook::svg::line_plot(lines, style);
}

// ---------------------------------------------------------------- the figures

std::vector<Figure> figures(const fs::path& data_dir) {
    std::vector<Figure> f;

    f.push_back({1, "ch01_unweighted_weights.svg",
                 "Chapter 1: attn_weights = softmax(inputs @ inputs.T, dim=-1). Row i is how much "
                 "token i attends to each token; every row sums to 1.",
                 [] {
                     const attn::Tensor inputs = textbook::inputs();
                     const attn::Tensor w = attn::softmax(attn::matmul(inputs, attn::T(inputs)), -1);
                     return textbook::svg::heatmap(w, token_style("Unweighted attention weights"));
                 }});

    f.push_back({2, "ch02_v2_weights.svg",
                 "Chapter 2: the attention weights of SelfAttention_v2(3, 2) after "
                 "torch.manual_seed(789), softmax(queries @ keys.T / sqrt(d_out)).",
                 [] {
                     const attn::Tensor w = attn::softmax(attn::Tensor(v2_scores() / std::sqrt(2.0f)), -1);
                     return textbook::svg::heatmap(w, token_style("SelfAttention_v2 weights (seed 789)"));
                 }});

    f.push_back({3, "ch03_simple_mask.svg",
                 "Chapter 3: the weights of chapter 2 times tril(ones(6, 6)) (left: rows no longer "
                 "sum to 1), then each row divided by its sum (right).",
                 [] {
                     const attn::Tensor w = attn::softmax(attn::Tensor(v2_scores() / std::sqrt(2.0f)), -1);
                     const attn::Tensor masked_simple = w * attn::tril(attn::ones({6, 6}));
                     const attn::Tensor norm = masked_simple / attn::sum(masked_simple, -1, true);
                     return textbook::svg::heatmaps({masked_simple, norm},
                                                {"masked_simple", "masked_simple_norm"},
                                                token_style("A simple causal mask, then renormalised"));
                 }});

    f.push_back({4, "ch04_masked_scores.svg",
                 "Chapter 4: attn_scores.masked_fill(mask.bool(), -inf): the future (above the "
                 "diagonal) is -inf, so the softmax gives it weight exp(-inf) = 0.",
                 [] {
                     const attn::Tensor scores = v2_scores();
                     const attn::Tensor masked = attn::masked_fill(
                         scores, attn::to_bool(attn::triu(attn::ones({6, 6}), 1)),
                         -std::numeric_limits<float>::infinity());
                     auto style = token_style("Causally masked attention scores");
                     style.vmin = std::floor(xt::amin(scores)() * 10) / 10;
                     style.vmax = std::ceil(xt::amax(scores)() * 10) / 10;
                     return textbook::svg::heatmap(masked, style);
                 }});

    f.push_back({4, "ch04_causal_weights.svg",
                 "Chapter 4: causal attention weights, softmax(masked / sqrt(d_k)): each token "
                 "attends to itself and the tokens before it only.",
                 [] { return textbook::svg::heatmap(causal_weights(), token_style("Causal attention weights")); }});

    f.push_back({5, "ch05_dropout_backends.svg",
                 "Chapter 5: nn.Dropout(0.5) applied to the causal weights after "
                 "torch.manual_seed(123), drawn by each of PyTorch's CPU Bernoulli backends "
                 "(portable: notebook 004; MKL: notebook 002). Kept weights are scaled by 2.",
                 [] {
                     const attn::Tensor w = causal_weights();
                     std::vector<attn::Tensor> panels;
                     for (auto backend : {attn::nn::BernoulliBackend::portable, attn::nn::BernoulliBackend::mkl}) {
                         attn::manual_seed(123);
                         const attn::nn::Dropout dropout(0.5, backend);
                         panels.push_back(dropout(w));
                     }
                     auto style = token_style("Causal weights after dropout (p = 0.5, seed 123)");
                     style.vmax = 2.0;
                     return textbook::svg::heatmaps(panels, {"portable backend", "MKL backend"}, style);
                 }});

    f.push_back({6, "ch06_batch_dropout.svg",
                 "Chapter 6: a batch of two copies of the input through CausalAttention(3, 2, 6, "
                 "dropout=0.5) after torch.manual_seed(123): the same weights, but each sequence "
                 "of the batch gets its own dropout mask.",
                 [] {
                     const attn::Tensor inputs = textbook::inputs();
                     const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
                     attn::manual_seed(123);
                     const attn::CausalAttention ca({.d_in = 3, .d_out = 2, .context_length = 6, .dropout = 0.5});
                     const auto steps = ca.forward_steps(batch);
                     auto style = token_style("CausalAttention weights after dropout, per sequence");
                     style.vmax = 2.0;
                     return textbook::svg::heatmaps({attn::select(steps.dropped_weights, 0),
                                                 attn::select(steps.dropped_weights, 1)},
                                                {"batch[0]", "batch[1]"}, style);
                 }});

    f.push_back({7, "ch07_heads.svg",
                 "Chapter 7: the causal attention weights of each head of notebook 003's GPT-2 layer "
                 "(n_embd S = 12, n_head H = 3, head size 4, evaluation mode), for the first of the "
                 "chapter's B = 16 sequences: torch.manual_seed(123), the layer, then x = "
                 "torch.randn(16, 5, 12), as the chapter draws them. Head 0 is the att[0, 0] the "
                 "chapter prints. Even untrained, each head weighs the tokens its own way.",
                 [] {
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
                     textbook::svg::HeatmapStyle style;
                     style.title = "Attention weights per head (GPT-2 layout)";
                     style.row_labels = {"t0", "t1", "t2", "t3", "t4"};
                     style.col_labels = style.row_labels;
                     return textbook::svg::heatmaps(panels, titles, style);
                 }});

    f.push_back({8, "ch08_kv_cache_time.svg",
                 "Chapter 8: time per generated token with and without the KV cache, against the "
                 "context length, from the Google Benchmark results recorded under data/benchmarks/.",
                 [data_dir] { return kv_cache_plot(data_dir); }});

    f.push_back({8, "ch08_causal_mask_sq_sk.svg",
                 "Chapter 8: with a KV cache, Sq = 3 new queries meet Sk = 8 keys: the causal mask "
                 "is the last 3 rows of tril(ones(8, 8)), causal_mask(3, 8) (1 = may attend).",
                 [] {
                     textbook::svg::HeatmapStyle style;
                     style.title = "causal_mask(Sq = 3, Sk = 8)";
                     style.row_labels = {"new 0 (pos 5)", "new 1 (pos 6)", "new 2 (pos 7)"};
                     style.col_labels = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
                     style.precision = 0;
                     return textbook::svg::heatmap(attn::causal_mask(3, 8), style);
                 }});

    f.push_back({9, "ch09_padding_weights.svg",
                 "Chapter 9: notebook 000's three texts, tokenised and left-padded with the pad id 2; "
                 "random logits (seed 0) with the causal mask and the attention mask applied, then "
                 "masked_softmax. Pad keys get no weight; pad queries attend to nothing (rows of 0).",
                 [data_dir] {
                     const auto tok = attn::TokenizerData::load(data_dir / "tokenizer" / "mistral-7b-v0.1_000.tsv");
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
                     textbook::svg::HeatmapStyle style;
                     style.title = "Causal attention weights of a left-padded batch";
                     for (std::size_t s = 0; s < S; ++s) style.row_labels.push_back(std::to_string(s));
                     style.col_labels = style.row_labels;
                     style.precision = 2;
                     return textbook::svg::heatmaps(panels, titles, style);
                 }});

    f.push_back({14, "ch14_window_mask.svg",
                 "Chapter 14: which keys each query sees (1 = visible): the causal mask (left) and "
                 "the sliding window of W = 3 (right), 0 <= q_pos - k_pos < W.",
                 [] {
                     const auto visible = [](std::size_t window) {
                         return attn::Tensor(1.0f - attn::to_float(attn::sliding_window_mask(0, 6, 0, 6, window)));
                     };
                     auto style = token_style("Causal mask and sliding-window mask");
                     style.precision = 0;
                     return textbook::svg::heatmaps({visible(6), visible(3)}, {"causal", "window W = 3"}, style);
                 }});
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: make_figures <output directory>\n";
        return 2;
    }
    const fs::path out = argv[1];
    fs::create_directories(out);
    const fs::path data_dir = textbook::data_dir();
    std::ofstream index(out / "index.tsv");
    index << "# chapter\tfile\tstatus\tcaption (written by docs/tools/make_figures)\n";
    int failed = 0;
    for (const auto& fig : figures(data_dir)) {
        std::string status = "ok", svg;
        try {
            svg = fig.draw();
        } catch (const Absent& e) {
            status = "absent";
            svg = textbook::svg::note("Not drawn yet", e.what());
        } catch (const std::exception& e) {
            status = "failed";
            ++failed;
            svg = textbook::svg::note("This figure could not be drawn", std::string("The library threw: ") + e.what());
            std::cerr << "make_figures: " << fig.file << ": " << e.what() << '\n';
        }
        textbook::svg::write_file(out / fig.file, svg);
        index << fig.chapter << '\t' << fig.file << '\t' << status << '\t' << fig.caption << '\n';
        std::cout << "make_figures: " << fig.file << ": " << status << '\n';
    }
    if (!index) {
        std::cerr << "make_figures: cannot write " << (out / "index.tsv") << '\n';
        return 1;
    }
    // A figure that fails is shown as a note on its page and fails the docs test, not the build.
    (void)failed;
    return 0;
}
