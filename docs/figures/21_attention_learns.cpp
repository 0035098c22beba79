// Chapter 21's figures: the induction task's loss on each half over training (the phase
// change), and the previous-token and induction heads before and after it, from the training
// the chapter ran: the losses of every step and the weights of the first held-out sequence
// are recorded with the blocks that print every 50th step and the heads' scores
// (chapters/21_attention_learns.hpp).
#include "figures.hpp"

#include <regex>
#include <string>
#include <vector>

#include "attn/core/functional.hpp"
#include "textbook/book.hpp"

namespace {

// The head of `block` with the largest score named `what` (`previous token`, `induction`) in
// the chapter's lines `block 1 head 0: previous token 0.00, induction 0.94`.
std::size_t ch21_best_head(const std::string& scores, std::size_t block, const std::string& what) {
    static const std::regex line(R"(block (\d+) head (\d+): previous token ([0-9.]+), induction ([0-9.]+))");
    std::size_t best = 0;
    double top = -1.0;
    for (auto it = std::sregex_iterator(scores.begin(), scores.end(), line); it != std::sregex_iterator(); ++it) {
        if (std::stoul((*it)[1]) != block) continue;
        const double score = std::stod((*it)[what == "induction" ? 4 : 3]);
        if (score > top) top = score, best = std::stoul((*it)[2]);
    }
    if (top < 0) throw std::runtime_error("chapter 21 printed no score of block " + std::to_string(block));
    return best;
}

// Head h of block l of a recorded `[blocks, H, T, T]`: `[T, T]`.
attn::Tensor ch21_head(const attn::Tensor& weights, std::size_t l, std::size_t h) {
    return attn::select(attn::select(weights, static_cast<long>(l)), static_cast<long>(h));
}

FIGURES{
    {.chapter = "21", .step = "induction", .file = "ch21_phase_change.svg",
     .caption = "Chapter 21, step 4: the loss on each half of the repeated sequences at every step of "
                "the chapter's training of the attention-only transformer (AdamW, 6 to 12 random tokens "
                "repeated a step). The first half cannot be predicted and stays near ln 32, a uniform "
                "guess; the second half drops abruptly once the induction head forms.",
     .draw = [](const figures::Data& data) {
         const std::string key = "o21-In09";
         const attn::Tensor first = data.tensor(key, "first_half"), second = data.tensor(key, "second_half");
         double uniform = -1.0;  // the chapter's `ln(32), a uniform guess` line
         for (const auto& [label, text] : figures::labelled(data.block("second-half loss on the held-out sequences").text))
             if (label.rfind("ln(", 0) == 0) uniform = textbook::numbers_in(text).at(0).value;
         if (uniform < 0) throw std::runtime_error("chapter 21 printed no uniform guess");
         std::vector<double> steps, first_half(first.begin(), first.end()), second_half(second.begin(), second.end());
         for (std::size_t step = 0; step < first.size(); ++step) steps.push_back(static_cast<double>(step));
         figures::svg::PlotStyle style;
         style.title = "Next-token loss on each half of the sequence";
         style.subtitle = "random tokens, repeated; the library's training (PyTorch's bits), as chapter 21 ran it";
         style.x_label = "training step";
         style.y_label = "cross-entropy";
         return figures::svg::line_plot({{"first half (unpredictable)", steps, first_half, "", true},
                                         {"second half (the repeat)", steps, second_half, "", false},
                                         {"ln 32", {0.0, steps.back()}, {uniform, uniform}, "#999999", true}},
                                        style);
     }},
    {.chapter = "21", .step = "heads", .file = "ch21_heads.svg",
     .caption = "Chapter 21, step 5: attention weights on the first held-out sequence (12 tokens, then "
                "the same 12), before and after training: the head of block 0 with the most weight on "
                "the previous token (the diagonal below the main one), and the head of block 1 with the "
                "most weight on the token after the earlier occurrence of the current one (the diagonal "
                "11 places back), as the chapter's scores of the heads choose them.",
     .draw = [](const figures::Data& data) {
         const std::string key = "mean attention of each head, queries in the second half (64 held-out sequences)";
         const std::string& scores = data.block(key).text;
         const std::size_t previous = ch21_best_head(scores, 0, "previous token"), induction = ch21_best_head(scores, 1, "induction");
         const attn::Tensor before = data.tensor(key, "untrained"), after = data.tensor(key, "trained");
         figures::svg::HeatmapStyle style;
         style.title = "Previous-token head and induction head, before and after training";
         style.precision = -1;
         style.panels_per_row = 2;  // untrained beside trained, one head a row
         const std::string p = "block 0 head " + std::to_string(previous), i = "block 1 head " + std::to_string(induction);
         return figures::svg::heatmaps(
             {ch21_head(before, 0, previous), ch21_head(after, 0, previous), ch21_head(before, 1, induction),
              ch21_head(after, 1, induction)},
             {p + ", untrained", p + ", trained", i + ", untrained", i + ", trained"}, style);
     }},
};

}  // namespace
