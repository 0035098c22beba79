// Chapter 24's figures: attention weights of a permuted sentence, learned against sinusoidal
// positions, RoPE's scores by offset, Llama's frequencies, a cached key's rotation and ALiBi's
// biases, from the blocks the chapter printed and the tensors it recorded with them (the
// weights of chapter 1's attention, the learned table's dot products, the cached and unrotated
// keys, the bias of every head).
#include "figures.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/functional.hpp"

namespace {

// The chapter's permutation of the six tokens (24_positions.cpp): row i of the permuted
// sentence is token ch24_perm[i].
const std::vector<std::size_t> ch24_perm = {5, 0, 3, 1, 4, 2};

// How far pair `i` (coordinates i and i + hd/2) of `rotated` is turned from the same pair of
// `plain`, in radians, for token t of batch element 0, key head 0 of `[b, G, T, hd]` keys.
double ch24_turn(const attn::Tensor& rotated, const attn::Tensor& plain, std::size_t t, std::size_t i) {
    const std::size_t half = rotated.shape()[3] / 2;
    const double a = std::atan2(rotated(0, 0, t, i + half), rotated(0, 0, t, i));
    const double b = std::atan2(plain(0, 0, t, i + half), plain(0, 0, t, i));
    return a - b;
}

FIGURES{
    {.chapter = "24", .step = "permutation", .file = "ch24_permutation.svg",
     .caption = "Chapter 24, step 1: the attention weights of chapter 1's sentence (left) and of the same "
                "tokens in the order 5, 0, 3, 1, 4, 2, with rows and columns put back in the sentence's "
                "order (right): the same matrix. Attention without positions only follows the tokens.",
     .draw = [](const figures::Data& data) {
         const attn::Tensor w = data.tensor("o24-In03", "weights"), wp = data.tensor("o24-In03", "weights_perm");
         attn::Tensor back = attn::zeros({6, 6});  // back[perm[i], perm[j]] = wp[i, j]
         for (std::size_t i = 0; i < 6; ++i)
             for (std::size_t j = 0; j < 6; ++j) back(ch24_perm[i], ch24_perm[j]) = wp(i, j);
         figures::svg::HeatmapStyle style = figures::token_style("softmax(x xᵀ): the sentence and its shuffle");
         return figures::svg::heatmaps({w, back}, {"Your journey starts with one step",
                                                   "step Your with journey one starts, reordered"}, style);
     }},
    {.chapter = "24", .step = "sinusoidal", .file = "ch24_position_dot_products.svg",
     .caption = "Chapter 24, steps 2 and 3: dot products between the position vectors of positions 0 to 5. "
                "GPT-2's learned table, untrained (left), has no structure; the sinusoidal encoding (right) "
                "gives the same value all along each diagonal: it depends on the distance between two "
                "positions only.",
     .draw = [](const figures::Data& data) {
         const attn::Tensor learned = data.tensor("o24-In05", "gram");
         const attn::Tensor sinusoidal = data.printed("o24-In09", {6, 6});
         const auto [lo1, hi1] = figures::finite_range(learned);
         const auto [lo2, hi2] = figures::finite_range(sinusoidal);
         figures::svg::HeatmapStyle style;
         style.title = "Position vectors' dot products";
         style.row_axis = style.col_axis = "position";
         style.vmin = std::min(lo1, lo2), style.vmax = std::max(hi1, hi2);
         return figures::svg::heatmaps({learned, sinusoidal}, {"learned pos_emb (seed 123)", "sinusoidal, d_model 8"},
                                       style);
     }},
    {.chapter = "24", .step = "offset", .file = "ch24_rope_offsets.svg",
     .caption = "Chapter 24, step 5: the score of one query at position m (rows) and one key at position n "
                "(columns), both rotated by RoPE: each diagonal holds one value, the score of the offset "
                "n - m.",
     .draw = [](const figures::Data& data) {
         const attn::Tensor scores = data.printed("o24-In15", {5, 5});
         const auto [lo, hi] = figures::finite_range(scores);
         figures::svg::HeatmapStyle style;
         style.title = "RoPE: q_m · k_n depends on n - m";
         style.row_axis = "query position m", style.col_axis = "key position n";
         style.vmin = lo, style.vmax = hi;
         return figures::svg::heatmap(scores, style);
     }},
    {.chapter = "24", .step = "frequencies", .file = "ch24_rope_frequencies.svg",
     .caption = "Chapter 24, step 6: RoPE's inverse frequencies for head_dim 64, as the chapter printed "
                "them. Llama 3's base 500 000 slows every pair but the first; Llama 3.1 and 3.2 divide the "
                "slowest ones further by 8 and 32 and blend the middle band, leaving the fast pairs alone.",
     .draw = [](const figures::Data& data) {
         std::vector<figures::svg::Series> series;
         const std::vector<std::pair<std::string, std::string>> settings = {
             {"o24-In16", "Llama 2 (base 10 000)"}, {"o24-In17", "Llama 3 (base 500 000)"},
             {"o24-In18", "Llama 3.1 (factor 8)"}, {"o24-In19", "Llama 3.2 (factor 32)"}};
         for (const auto& [key, name] : settings) {
             const attn::Tensor f = data.printed(key, {32});
             figures::svg::Series s{.name = name, .x = {}, .y = {}, .colour = "", .dashed = key == "o24-In16"};
             for (std::size_t i = 0; i < 32; ++i) s.x.push_back(double(i)), s.y.push_back(f(i));
             series.push_back(s);
         }
         figures::svg::PlotStyle style;
         style.title = "RoPE's inverse frequencies θ_i, head_dim 64";
         style.subtitle = "as printed (4 digits)";
         style.x_label = "pair i";
         style.y_label = "radians per position";
         style.log_y = true;
         return figures::svg::line_plot(series, style);
     }},
    {.chapter = "24", .step = "cache", .file = "ch24_cached_key_rotation.svg",
     .caption = "Chapter 24, step 8: how far each pair of the cached keys (first sequence, key head 0) is "
                "turned from the unrotated key, at each position. Pair 0 turns one radian per position (the "
                "angle is shown modulo 2π), pair 1 almost not at all: its frequency was slowed by Llama "
                "3.2's smoothing.",
     .draw = [](const figures::Data& data) {
         const std::string key = "decoded token by token against gqa(batch); cache.key against the rotated keys";
         const attn::Tensor cached = data.tensor(key, "cache_key"), plain = data.tensor(key, "keys");
         std::vector<figures::svg::Series> series;
         for (std::size_t i = 0; i < cached.shape()[3] / 2; ++i) {
             figures::svg::Series s{.name = "pair " + std::to_string(i), .x = {}, .y = {}, .colour = "", .dashed = false};
             for (std::size_t t = 0; t < cached.shape()[2]; ++t) {
                 const double turn = std::remainder(ch24_turn(cached, plain, t, i), 2 * M_PI);
                 s.x.push_back(double(t)), s.y.push_back(turn);
             }
             series.push_back(s);
         }
         figures::svg::PlotStyle style;
         style.title = "A cached key, rotated at its own position";
         style.subtitle = "angle between the cached and the unrotated pair, in (-π, π]";
         style.x_label = "position";
         style.y_label = "radians";
         return figures::svg::line_plot(series, style);
     }},
    {.chapter = "24", .step = "alibi", .file = "ch24_alibi_bias.svg",
     .caption = "Chapter 24, step 9: ALiBi's bias -(m_h |i - j|) for 4 heads and 6 tokens, slopes 1/4, "
                "1/16, 1/64 and 1/256: the first head penalises distance hard and looks near, the last "
                "barely and looks far. A causal mask then hides the keys right of the diagonal.",
     .draw = [](const figures::Data& data) {
         const attn::Tensor bias = data.tensor("o24-In23", "bias");
         std::vector<attn::Tensor> heads;
         std::vector<std::string> titles;
         for (long h = 0; h < 4; ++h) heads.push_back(attn::select(bias, h)), titles.push_back("head " + std::to_string(h));
         const auto [lo, hi] = figures::finite_range(bias);
         figures::svg::HeatmapStyle style;
         style.title = "ALiBi's bias on the scores";
         style.vmin = lo, style.vmax = hi;
         style.panels_per_row = 2;  // four heads in one row did not fit a 1400-px window's column
         return figures::svg::heatmaps(heads, titles, style);
     }},
};

}  // namespace
