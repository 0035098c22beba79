// Chapter 21's helpers: the training logs as tools/oracle/attention_learns.py prints them,
// the scores that find an induction head, and the weights its figures draw (recorded with
// the blocks; the figures compute nothing). Compiled with the chapter, in the chapters'
// unity file (chapters/meson.build): everything here is in namespace ch21. Includes
// textbook/display.hpp, the layouts chapters share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "textbook/display.hpp"
#include "textbook/record.hpp"

namespace ch21 {

/// A training loop's log, one line per step from step 0, as
/// `print(f"step {step:2d}: loss {loss.item():.4f}")` writes it (tools/oracle/attention_learns.py):
/// `step  0: loss 0.1109`; the loss is the float32 value widened to double, as `.item()`,
/// rounded to 4 decimals (NaN prints `nan`, as Python); no newline at the end.
inline std::string loss_lines(const std::vector<float>& losses) {
    std::string out;
    for (std::size_t step = 0; step < losses.size(); ++step) {
        char buf[64];
        const double loss = losses[step];
        if (std::isnan(loss))
            std::snprintf(buf, sizeof buf, "step %2zu: loss nan", step);
        else
            std::snprintf(buf, sizeof buf, "step %2zu: loss %.4f", step, loss);
        if (!out.empty()) out += '\n';
        out += buf;
    }
    return out;
}

/// The induction head's training log, every `every` steps and the last, as
/// tools/oracle/attention_learns.py prints it:
/// `step 100: loss 2.8452, first half 3.8291, second half 2.0201`.
/// @throws std::invalid_argument when the three series differ in length or `every` is 0.
inline std::string curve_lines(const std::vector<float>& loss, const std::vector<float>& first_half,
                               const std::vector<float>& second_half, std::size_t every) {
    if (loss.size() != first_half.size() || loss.size() != second_half.size() || every == 0)
        throw std::invalid_argument("curve_lines: three series of one length and every >= 1 expected");
    std::string out;
    for (std::size_t step = 0; step < loss.size(); ++step) {
        if (step % every != 0 && step + 1 != loss.size()) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf, "step %3zu: loss %.4f, first half %.4f, second half %.4f", step,
                      static_cast<double>(loss[step]), static_cast<double>(first_half[step]),
                      static_cast<double>(second_half[step]));
        if (!out.empty()) out += '\n';
        out += buf;
    }
    return out;
}

/// The mean weight of each head of `w` (`[b, H, T, T]`, one block's attn_weights) on key
/// `i - back`, over the queries `i` in `[half, T)`: `[H]` values.
/// @throws std::invalid_argument when `w` is not `[b, H, T, T]` with `half < T < 2 * half`.
inline std::vector<double> mean_weight_back(const attn::Tensor& w, std::size_t half, std::size_t back) {
    const attn::Shape s = attn::shape_of(w);
    if (s.size() != 4 || s[2] != s[3] || s[2] <= half || s[2] >= 2 * half)
        attn::throw_shape_error("head scores (attn_weights)", "[b, H, T, T] with half < T < 2 * half", s);
    const std::size_t b = s[0], H = s[1], T = s[2];
    std::vector<double> score(H, 0.0);
    for (std::size_t n = 0; n < b; ++n)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = half; i < T; ++i) score[h] += w(n, h, i, i - back);
    for (double& x : score) x /= static_cast<double>(b * (T - half));
    return score;
}

/// What each head of each block attends to in the second half of repeated sequences
/// (`weights`: one `[b, H, T, T]` per block; the sequences repeat after `half` tokens): for
/// the queries `i` in `[half, T)`, the mean weight on the previous token (`i - 1`) and on the
/// token after the query's earlier occurrence (`i - half + 1`, an induction head's target).
/// One line per head: `block 1 head 0: previous token 0.02, induction 0.97`.
/// @throws std::invalid_argument when a tensor is not `[b, H, T, T]` with `half < T < 2 * half`.
inline std::string head_score_lines(const std::vector<attn::Tensor>& weights, std::size_t half) {
    std::string out;
    for (std::size_t l = 0; l < weights.size(); ++l) {
        const std::vector<double> previous = mean_weight_back(weights[l], half, 1);
        const std::vector<double> induction = mean_weight_back(weights[l], half, half - 1);
        for (std::size_t h = 0; h < previous.size(); ++h) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "block %zu head %zu: previous token %.2f, induction %.2f", l, h,
                          previous[h], induction[h]);
            if (!out.empty()) out += '\n';
            out += buf;
        }
    }
    return out;
}

/// The head of `weights` (`[b, H, T, T]`, one block) with the largest induction score (see
/// `head_score_lines`).
/// @throws as `head_score_lines`.
inline std::size_t strongest_induction_head(const attn::Tensor& weights, std::size_t half) {
    const std::vector<double> induction = mean_weight_back(weights, half, half - 1);
    return static_cast<std::size_t>(std::max_element(induction.begin(), induction.end()) - induction.begin());
}

/// For the figures of steps 4 and 5: the attention weights of the first sequence, one
/// `[b, H, T, T]` per block in `untrained` and `trained` (the model before and after training,
/// on the same input), as `untrained` and `trained` `[blocks, H, T, T]`.
/// @throws std::invalid_argument when a block's weights are not `[b, H, T, T]` of one shape.
inline std::vector<textbook::TensorRecord> first_sequence(const std::vector<attn::Tensor>& untrained,
                                                          const std::vector<attn::Tensor>& trained) {
    const auto first = [](const std::vector<attn::Tensor>& blocks) {
        std::vector<attn::Tensor> rows;
        for (const auto& w : blocks) {
            if (w.dimension() != 4 || w.shape() != blocks.front().shape())
                attn::throw_shape_error("first_sequence (attn_weights)", "[b, H, T, T] per block, one shape",
                                        attn::shape_of(w));
            rows.push_back(attn::select(w, 0));
        }
        return attn::stack(rows, 0);
    };
    return {{"untrained", first(untrained)}, {"trained", first(trained)}};
}

}  // namespace ch21
