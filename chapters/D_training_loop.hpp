// Appendix D's helpers: the learning rates of a few steps as his Python prints them, the figures'
// tensors, and the library's headers the appendix calls. Compiled with the chapter, in the
// chapters' unity file (chapters/meson.build): everything here is in namespace chD. Chapter 26's
// helpers (the training logs side by side, the progress line) come with its header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "26_pretraining.hpp"  // ch26::beside, ch26::progress, ch26::without_last_newline and the library's headers
#include "attn/nn/clip_grad.hpp"
#include "attn/train/lr_schedule.hpp"
#include "attn/train/train_model.hpp"

namespace chD {

/// `track_lrs[s]` for each step `s` of `steps`, one line each, the number as Python's `repr`
/// prints the float (`step 27: 0.01`).
inline std::string lr_lines(const std::vector<double>& track_lrs, const std::vector<std::size_t>& steps) {
    std::string out;
    for (const std::size_t s : steps)
        out += (out.empty() ? "" : "\n") + std::string("step ") + std::to_string(s) + ": " + attn::repr_float(track_lrs.at(s));
    return out;
}

/// The learning rates of a run, for a figure: `{name, rates as float32}`.
inline textbook::TensorRecord lr_record(const std::string& name, const std::vector<double>& track_lrs) {
    return {name, std::vector<float>(track_lrs.begin(), track_lrs.end())};
}

/// A one-parameter list holding `grad` as the `.grad` of a parameter `value` of its shape, for
/// clipping a gradient on its own (his 2 x 2 example of section D.3).
struct OneGradient {
    attn::Tensor value;
    std::optional<attn::Tensor> grad;
    std::vector<attn::nn::NamedParameter> parameters() { return {{"G", &value, &grad}}; }
};

/// What his `train_model` records for the figures: each step's learning rate, each evaluation's
/// losses against `torch.linspace(1, n_epochs, len(train_losses))` (his In [16]), and the total
/// gradient norm of every step that clipped, against its step.
inline std::vector<textbook::TensorRecord> history_tensors(const attn::TrainModelHistory& h, std::size_t n_epochs,
                                                           const std::vector<std::pair<std::int64_t, float>>& norms) {
    const std::size_t n = h.train_losses.size();
    std::vector<float> train(h.train_losses.begin(), h.train_losses.end()), val(h.val_losses.begin(), h.val_losses.end());
    std::vector<float> tokens(h.tokens_seen.begin(), h.tokens_seen.end()), epochs(n);
    const float step = n > 1 ? static_cast<float>(n_epochs - 1) / static_cast<float>(n - 1) : 0.0f;
    for (std::size_t i = 0; i < n; ++i)  // torch.linspace(1, n_epochs, n)'s two halves (chapter 22's linspace)
        epochs[i] = i < n / 2 ? 1.0f + step * static_cast<float>(i)
                              : static_cast<float>(n_epochs) - step * static_cast<float>(n - 1 - i);
    std::vector<float> norm_steps, norm_values;
    for (const auto& [s, v] : norms) norm_steps.push_back(static_cast<float>(s)), norm_values.push_back(v);
    return {{"train_losses", train}, {"val_losses", val},           {"tokens_seen", tokens},
            {"epochs_seen", epochs}, lr_record("track_lrs", h.track_lrs), {"clipped_steps", norm_steps},
            {"total_norms", norm_values}};
}

}  // namespace chD
