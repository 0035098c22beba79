// Chapter 26's helpers: his fancy-indexed target probabilities, the loader checks of his In [22]
// and In [23], the training run's progress line and logs side by side, and the library's headers
// the chapter calls. Compiled with the chapter, in the
// chapters' unity file (chapters/meson.build): everything here is in namespace ch26.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <tuple>
#include <utility>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/elementwise.hpp"
#include "attn/core/tensor.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/optim.hpp"
#include "attn/nn/state_dict.hpp"
#include "attn/print/print.hpp"
#include "attn/print/python.hpp"
#include "attn/text/utf8.hpp"
#include "attn/train/train.hpp"
#include "textbook/text_file.hpp"
#include "textbook/tokenizer_data.hpp"
#include "textbook/chapter.hpp"
#include "textbook/display.hpp"
#include "textbook/machine.hpp"
#include "textbook/progress.hpp"
#include "textbook/record.hpp"

namespace ch26 {

/// His `probas[text_idx, [0, 1, 2], targets[text_idx]]`: for each position `t` of text
/// `text_idx`, the probability of its target token, `[T]`.
inline attn::Tensor target_probas(const attn::Tensor& probas, std::size_t text_idx, const attn::LongTensor& targets) {
    const std::size_t T = targets.shape()[1];
    attn::Tensor out = attn::Tensor::from_shape({T});
    for (std::size_t t = 0; t < T; ++t) out(t) = probas(text_idx, t, static_cast<std::size_t>(targets(text_idx, t)));
    return out;
}

/// His `targets[i]` or `token_ids[i].flatten()`: row `i` of ids `[b, ...]`, flattened to `[n]`.
inline attn::LongTensor row(const attn::LongTensor& ids, std::size_t i) {
    const std::size_t n = ids.size() / ids.shape()[0];
    attn::LongTensor out = attn::LongTensor::from_shape({n});
    std::copy_n(ids.data() + i * n, n, out.data());
    return out;
}

/// His In [22]: `for x, y in loader: print(x.shape, y.shape)` (a new iteration: it draws).
inline std::string loader_shapes(const attn::data::DataLoader& loader) {
    std::string out;
    for (const auto& [x, y] : loader)
        out += "\n" + attn::repr(attn::shape_of(x)) + " " + attn::repr(attn::shape_of(y));
    return out;
}

/// His In [23]: `for input_batch, target_batch in loader: tokens += input_batch.numel()`.
inline std::size_t loader_tokens(const attn::data::DataLoader& loader) {
    std::size_t tokens = 0;
    for (const auto& [input_batch, target_batch] : loader) tokens += input_batch.size();
    return tokens;
}

/// What his In [28] plots, for the figure: the losses of each evaluation, the tokens seen, and
/// `torch.linspace(0, num_epochs, len(train_losses))`, the epochs axis.
inline std::vector<textbook::TensorRecord> history_tensors(const attn::TrainHistory& h, std::size_t num_epochs) {
    const std::size_t n = h.train_losses.size();
    std::vector<float> train(h.train_losses.begin(), h.train_losses.end()), val(h.val_losses.begin(), h.val_losses.end());
    std::vector<float> tokens(h.tokens_seen.begin(), h.tokens_seen.end()), epochs(n);
    const float step = n > 1 ? static_cast<float>(num_epochs) / static_cast<float>(n - 1) : 0.0f;
    for (std::size_t i = 0; i < n; ++i)  // torch.linspace's two halves (chapter 22's linspace)
        epochs[i] = i < n / 2 ? step * static_cast<float>(i) : static_cast<float>(num_epochs) - step * static_cast<float>(n - 1 - i);
    return {{"train_losses", train}, {"val_losses", val}, {"tokens_seen", tokens}, {"epochs_seen", epochs}};
}

/// Two training logs side by side (`his`: the one compared with, `ours`: this run's): for each
/// evaluation line (`Ep 1 (Step 000000): Train loss 9.781, Val loss 9.933`, or `(Iter 000000)` as
/// his appendix D prints it) both losses and their
/// difference, then how many evaluation lines and samples (the lines after each epoch) are the
/// same, word for word. `names`: how the table's header calls the two logs.
inline std::string beside(const std::string& his, const std::string& ours, const std::pair<std::string, std::string>& names) {
    const auto split = [](const std::string& log) {
        std::vector<std::string> evals, samples;
        std::istringstream in(log);
        for (std::string line; std::getline(in, line);) (line.rfind("Ep ", 0) == 0 ? evals : samples).push_back(line);
        return std::pair{evals, samples};
    };
    const auto losses = [](const std::string& line) {  // (step, train, val) of an evaluation line
        double train = 0, val = 0;
        int epoch = 0;
        long step = 0;
        std::sscanf(line.c_str(), "Ep %d (%*s %ld): Train loss %lf, Val loss %lf", &epoch, &step, &train, &val);
        return std::tuple{step, train, val};
    };
    const auto [his_evals, his_samples] = split(his);
    const auto [our_evals, our_samples] = split(ours);
    const auto fixed3 = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%.3f", v); return std::string(b); };
    const auto& [a, b] = names;
    std::vector<textbook::Row> rows{{"step", "train: " + a, b, "difference", "val: " + a, b, "difference"}};
    std::size_t same = 0;
    for (std::size_t i = 0; i < std::min(his_evals.size(), our_evals.size()); ++i) {
        const auto [step, h_train, h_val] = losses(his_evals[i]);
        const auto [step2, o_train, o_val] = losses(our_evals[i]);
        same += his_evals[i] == our_evals[i];
        rows.push_back({std::to_string(step), fixed3(h_train), fixed3(o_train), fixed3(o_train - h_train),
                        fixed3(h_val), fixed3(o_val), fixed3(o_val - h_val)});
    }
    std::size_t same_samples = 0;
    for (std::size_t i = 0; i < std::min(his_samples.size(), our_samples.size()); ++i)
        same_samples += his_samples[i] == our_samples[i];
    return textbook::table(rows) + "\n" + std::to_string(same) + " of " + std::to_string(his_evals.size()) +
           " evaluation lines identical; " + std::to_string(same_samples) + " of " + std::to_string(his_samples.size()) +
           " samples identical";
}

/// For each file written: its name, the tensors it holds and its bytes on the disk.
inline std::string file_lines(const std::vector<std::pair<std::string, std::size_t>>& files) {
    std::string out;
    for (const auto& [f, tensors] : files)
        out += (out.empty() ? "" : "\n") + f + ": " + std::to_string(tensors) + " tensors, " +
               std::to_string(std::filesystem::file_size(f)) + " bytes";
    return out;
}

/// A log as his prints end: without the newline after its last line.
inline std::string without_last_newline(const std::string& text) {
    return !text.empty() && text.back() == '\n' ? text.substr(0, text.size() - 1) : text;
}

/// The training run's progress line (stderr, on a terminal only): step, epoch, loss, tokens/s,
/// time left, for a run of `steps` optimizer steps; for `train_model_simple`'s or `train_model`'s
/// `on_step`. Each step's loss is also appended to `step_losses` when given (the rounding step
/// compares two runs step by step).
/// After the last step, on a terminal, one line of what this run took on the reader's machine,
/// beside the recorded benchmark's model of the same run when one of `steps` steps is recorded
/// (data/benchmarks/pretraining.json: his In [27]).
inline std::function<void(const attn::TrainProgress&)> progress(std::size_t steps, std::vector<float>* step_losses = nullptr) {
    auto line = std::make_shared<textbook::Progress>("training", steps, "tokens");
    return [line, step_losses, steps](const attn::TrainProgress& p) {
        if (step_losses) step_losses->push_back(p.loss);
        char note[48];
        std::snprintf(note, sizeof note, "epoch %zu · loss %.3f", p.epoch, static_cast<double>(p.loss));
        line->update(static_cast<std::size_t>(p.global_step + 1), static_cast<double>(p.tokens_seen), note);
        if (static_cast<std::size_t>(p.global_step + 1) != steps || !line->shown()) return;
        line->finish();
        const double seconds = line->seconds();
        const unsigned threads = textbook::machine_threads();
        char text[512];
        std::snprintf(text, sizeof text, "This run, on %s (%s): %zu steps, their evaluations and samples in %.0f s, "
                      "%.1f tokens/s of training.", textbook::cpu_model().c_str(), textbook::threads_text(threads).c_str(),
                      steps, seconds, static_cast<double>(p.tokens_seen) / seconds);
        std::string out = text;
        if (const auto rec = textbook::recorded_whole_run("pretraining", threads, "total_s", steps)) {
            std::snprintf(text, sizeof text, " The recorded benchmark's model of the same run: %.0f s on %s (%s, commit %s).",
                          rec->value, rec->cpu.c_str(), textbook::threads_text(rec->threads).c_str(), rec->commit.c_str());
            out += text;
        }
        textbook::terminal_note(out);
    };
}

/// `progress` for `train_model_simple` with `options` on `train_loader`.
inline std::function<void(const attn::TrainProgress&)> progress(const attn::TrainOptions& options,
                                                                const attn::data::DataLoader& train_loader,
                                                                std::vector<float>* step_losses = nullptr) {
    return progress(options.num_epochs * train_loader.size(), step_losses);
}

/// His In [5]-[7] printed: the probabilities' shape, the argmax ids, the first text's targets
/// and argmax decoded.
inline void show_probas(textbook::Chapter& ch, const attn::Tensor& probas, const attn::LongTensor& argmax_ids,
                        const attn::LongTensor& targets, const attn::GPT2Tokenizer& tokenizer) {
    ch.book("rch05-In05", "probas.shape", attn::repr(attn::shape_of(probas)));
    ch.book("rch05-In06", "torch.argmax(probas, dim=-1, keepdim=True)", "Token IDs:\n " + attn::repr(argmax_ids));
    ch.book("rch05-In07", "the targets and the argmax of the first text, decoded",
            "Targets batch 1: " + attn::token_ids_to_text(row(targets, 0), tokenizer) +
                "\nOutputs batch 1: " + attn::token_ids_to_text(row(argmax_ids, 0), tokenizer));
}

/// His In [17]-[23] printed: the story's ends and sizes, every batch's shapes, the tokens the
/// loaders hold. Iterates each loader twice, as his cells do (each iteration draws).
inline void show_data(textbook::Chapter& ch, const std::string& text_data, std::size_t total_tokens,
                      const attn::data::DataLoader& train_loader, const attn::data::DataLoader& val_loader) {
    const std::size_t total_characters = attn::utf8_len(text_data);
    ch.book("rch05-In17", "text_data[:99]", std::string(attn::utf8_slice(text_data, 0, 99)));
    ch.book("rch05-In18", "text_data[-99:]", std::string(attn::utf8_slice(text_data, total_characters - 99, total_characters)));
    ch.book("rch05-In19", "len(text_data), len(tokenizer.encode(text_data))",
            "Characters: " + std::to_string(total_characters) + "\nTokens: " + std::to_string(total_tokens));
    ch.book("rch05-In22-1", "every training batch's shapes (an iteration of the loader)",
            "Train loader:" + loader_shapes(train_loader));
    ch.book("rch05-In22-2", "every validation batch's shapes", "Validation loader:" + loader_shapes(val_loader));
    const std::size_t train_tokens = loader_tokens(train_loader), val_tokens = loader_tokens(val_loader);
    ch.book("rch05-In23", "the tokens the loaders hold",
            "Training tokens: " + std::to_string(train_tokens) + "\nValidation tokens: " + std::to_string(val_tokens) +
                "\nAll tokens: " + std::to_string(train_tokens + val_tokens));
}

/// His In [27] run again from `manual_seed(seed)`: a new model of `cfg` and its AdamW
/// (`adamw`), his `train_model_simple` with `options`, its log written to `printed` and each
/// step's loss to `step_losses` when given, a progress line on a terminal. With `arithmetic`,
/// the training (not the model's initialisation) runs under that arithmetic.
inline attn::TrainHistory train_again(std::uint64_t seed, const attn::GPTConfig& cfg, const attn::optim::AdamWOptions& adamw,
                                      const attn::TrainOptions& options, const attn::data::DataLoader& train_loader,
                                      const attn::data::DataLoader& val_loader, const attn::GPT2Tokenizer& tokenizer,
                                      std::ostream& printed, std::vector<float>* step_losses = nullptr,
                                      std::optional<attn::Arithmetic> arithmetic = std::nullopt) {
    attn::manual_seed(seed);
    attn::GPTModel model(cfg);
    attn::optim::AdamW optimizer(model.named_parameters(), adamw);
    std::optional<attn::ArithmeticGuard> guard;
    if (arithmetic) guard.emplace(*arithmetic);
    return attn::train_model_simple(model, train_loader, val_loader, optimizer, options, tokenizer, printed,
                                    progress(options, train_loader, step_losses));
}

/// How far two runs of the same training drift apart, below the printed digits: of the steps'
/// training losses (float32, `loss.item()`) how many are equal, the first step where they are
/// not, and the largest difference; of the evaluations' losses (doubles), the largest difference.
inline std::string drift(const std::vector<float>& a, const std::vector<float>& b, const attn::TrainHistory& ha,
                         const attn::TrainHistory& hb) {
    std::size_t equal = 0, first = 0, worst = 0;
    double largest = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        if (d == 0) ++equal;
        else if (first == 0) first = i + 1;
        if (d > largest) largest = d, worst = i;
    }
    double eval_largest = 0;
    for (std::size_t i = 0; i < std::min(ha.train_losses.size(), hb.train_losses.size()); ++i)
        eval_largest = std::max({eval_largest, std::abs(ha.train_losses[i] - hb.train_losses[i]),
                                 std::abs(ha.val_losses[i] - hb.val_losses[i])});
    char out[400];
    std::snprintf(out, sizeof out,
                  "below the printed digits: %zu of %zu steps' training losses (float32) equal, the first "
                  "difference at step %zu; the largest %.3g at step %zu (%.7g and %.7g); the evaluations' "
                  "losses at most %.3g apart",
                  equal, std::min(a.size(), b.size()), first, largest, worst + 1, static_cast<double>(a[worst]),
                  static_cast<double>(b[worst]), eval_largest);
    return out;
}

}  // namespace ch26
