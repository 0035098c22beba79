/// @file train.hpp
/// @brief Raschka's chapter 5 training utilities (ch05.ipynb, In [3], [24] and [26]): text to
/// token ids and back, the loss of a batch and of a loader, one training step, the evaluation,
/// the sample printed after each epoch, and `train_model_simple`, on the library's `GPTModel`
/// with its backward pass (no autograd) and `torch.optim`'s optimizers.
///
/// Every float operation is PyTorch 1.13's (the model's forward and backward, `cross_entropy`,
/// AdamW), and every random draw is the default generator's in PyTorch's order (the loaders'
/// seeds and orders, the dropout masks), so a run from `manual_seed(123)` gives the losses
/// Debian's python3-torch prints for his cells (tests/test_gpt_training.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/optim.hpp"
#include "attn/text/gpt2_tokenizer.hpp"

namespace attn {

/// His `text_to_token_ids(text, tokenizer)`: `tokenizer.encode(text, allowed_special={'<|endoftext|>'})`
/// as an int64 `[1, n]` tensor (`torch.tensor(encoded).unsqueeze(0)`).
/// @throws std::invalid_argument as `GPT2Tokenizer::encode` (text that is not UTF-8).
LongTensor text_to_token_ids(std::string_view text, const GPT2Tokenizer& tokenizer);

/// His `token_ids_to_text(token_ids, tokenizer)`: `tokenizer.decode(token_ids.squeeze(0).tolist())`
/// for int64 ids `[1, n]` (or `[n]`), invalid UTF-8 replaced by U+FFFD as tiktoken's decode does.
/// @throws std::invalid_argument when the ids are not `[n]` or `[1, n]` or one is not a token
/// of the vocabulary.
std::string token_ids_to_text(const LongTensor& token_ids, const GPT2Tokenizer& tokenizer);

/// His `calc_loss_batch(input_batch, target_batch, model, device)` without a gradient (inside
/// `torch.no_grad()`): `cross_entropy(model(input_batch).flatten(0, 1), target_batch.flatten())`,
/// the mean over the `b * T` tokens, a 0-d float32 tensor. In training mode the model draws its
/// dropout masks from `gen`. `input_batch`, `target_batch`: int64 `[b, T]`. The logits
/// (`b * T * vocab_size` floats, 103 MB for his batch) stay in the calling thread's buffer
/// for its next call, as PyTorch's allocator at its best keeps them.
/// @throws std::invalid_argument as `GPTModel::operator()`, when the targets are not `[b, T]`
/// or one is outside `[0, vocab_size)`.
Tensor calc_loss_batch(const LongTensor& input_batch, const LongTensor& target_batch, const GPTModel& model,
                       Generator& gen = default_generator());

/// His `calc_loss_loader(data_loader, model, device, num_batches=None)`: NaN for a loader with
/// no batch; else the mean of `loss.item()` (float32 values added in double, as Python's
/// `total_loss += loss.item()`) over the first `min(num_batches, len(data_loader))` batches of
/// a new iteration (all of them when `num_batches` is unset). The iteration draws what his
/// `for ... in enumerate(data_loader)` with its `break` draws (data/dataloader.hpp).
/// @throws std::invalid_argument as `calc_loss_batch`.
double calc_loss_loader(const data::DataLoader& data_loader, const GPTModel& model,
                        std::optional<std::size_t> num_batches = std::nullopt);

/// The tensors one training step keeps between its forward and backward, reused across steps
/// (the model's saved activations and the logits' gradient: about 650 MB at GPT_CONFIG_124M,
/// batch 2, 256 tokens).
struct TrainStepState {
    GPTModel::Saved saved;  ///< the model's training forward (its logits among them)
    Tensor grad_logits;     ///< `dL/dlogits`, `[b * T, vocab_size]`
};

/// `loss = calc_loss_batch(input_batch, target_batch, model, device); loss.backward()`: the
/// model's training forward saved in `state`, `cross_entropy` and its gradient in one pass, then
/// `GPTModel::backward`, which adds every parameter's gradient into its `.grad` (zero them
/// first: `optimizer.zero_grad()`). Returns the loss (0-d float32). The middle of `train_step`,
/// where his appendix D's `train_model` clips the gradients before `optimizer.step()`.
/// Shapes: `input_batch` and `target_batch` int64 `[b, T]`, `T <= context_length`, ids in
/// `[0, vocab_size)`; each `.grad` float32, its parameter's shape. Dropout draws from `gen`.
/// @throws std::invalid_argument as `calc_loss_batch` (no `.grad` has changed then).
/// Source: his `calc_loss_batch` (ch05, previous_chapters.py) and `loss.backward()`, as his
/// appendix D's `train_model` (In [13]) calls them.
Tensor forward_backward(GPTModel& model, const LongTensor& input_batch, const LongTensor& target_batch,
                        TrainStepState& state, Generator& gen = default_generator());

/// One step of his training loop: `optimizer.zero_grad()`, `loss = calc_loss_batch(...)` with the
/// model's saved forward, `loss.backward()` (`cross_entropy_backward`, then `GPTModel::backward`),
/// `optimizer.step()`. Returns the loss (0-d float32). The optimizer must hold the model's
/// parameters (`model.named_parameters()`).
/// @throws std::invalid_argument as `calc_loss_batch` and the optimizer's `step` (nothing is
/// updated when the batch is refused).
Tensor train_step(GPTModel& model, optim::Optimizer& optimizer, const LongTensor& input_batch,
                  const LongTensor& target_batch, TrainStepState& state, Generator& gen = default_generator());

/// His `evaluate_model(model, train_loader, val_loader, device, eval_iter)`: `model.eval()`, the
/// loss of the first `eval_iter` batches of each loader (`calc_loss_loader`, the training loader
/// first), `model.train()`. Returns `(train_loss, val_loss)`.
/// @throws std::invalid_argument as `calc_loss_loader` (the model is back in training mode).
std::pair<double, double> evaluate_model(GPTModel& model, const data::DataLoader& train_loader,
                                         const data::DataLoader& val_loader, std::size_t eval_iter);

namespace detail {

/// The checks `train_model_simple` and `train_model` make before their first step (`where` names
/// the caller in messages).
/// @throws std::invalid_argument when `eval_freq`, `eval_iter` or `max_steps` is not positive,
/// or the training loader gives no batch (its windows, batch size and `drop_last` named).
void check_training_run(const std::string& where, std::size_t eval_freq, std::size_t eval_iter,
                        std::optional<std::int64_t> max_steps, const data::DataLoader& train_loader);

/// His loops' evaluation, at a step where `global_step % eval_freq == 0`: `evaluate_model`, the
/// two losses and `tokens_seen` appended to the histories, and his line
/// `Ep 1 (Step 000000): Train loss 9.781, Val loss 9.933` written to `out` (`step_word`:
/// `"Step"` in chapter 5's `train_model_simple`, `"Iter"` in appendix D's `train_model`).
/// `epoch` is 0-based (printed 1-based).
/// @throws std::invalid_argument as `evaluate_model`.
void evaluate_and_print(GPTModel& model, const data::DataLoader& train_loader, const data::DataLoader& val_loader,
                        std::size_t eval_iter, std::size_t epoch, std::int64_t global_step, const char* step_word,
                        std::int64_t tokens_seen, std::vector<double>& train_losses, std::vector<double>& val_losses,
                        std::vector<std::int64_t>& tokens, std::ostream& out);

}  // namespace detail

/// His `generate_and_print_sample(model, tokenizer, device, start_context)` without the print:
/// `model.eval()`, 50 new tokens by `generate_text_simple` with the model's whole context,
/// `model.train()`; returns the decoded text with every newline made a space, the line he prints.
/// @throws std::invalid_argument as `generate_text_simple`.
std::string generate_sample(GPTModel& model, const GPT2Tokenizer& tokenizer, std::string_view start_context);

/// What `train_model_simple` reports to its caller while it runs (after every optimizer step).
struct TrainProgress {
    std::size_t epoch = 0;        ///< 1-based, as his lines print it
    std::int64_t global_step = 0; ///< his `global_step`, 0 after the first step
    std::int64_t steps = 0;       ///< steps in the whole run (`num_epochs * len(train_loader)`)
    std::int64_t tokens_seen = 0; ///< his `tokens_seen`
    float loss = 0.0f;            ///< the step's training loss
    double lr = 0.0;              ///< the learning rate of the step (`optimizer.param_groups[0]["lr"]`)
    /// `train_model`: the total gradient norm `clip_grad_norm_` returned, when the step clipped
    std::optional<float> grad_norm{};
};

/// His `train_model_simple`'s arguments after the model, loaders and optimizer.
struct TrainOptions {
    std::size_t num_epochs = 10;    ///< passes over the training loader
    std::size_t eval_freq = 5;      ///< evaluate when `global_step % eval_freq == 0`
    std::size_t eval_iter = 5;      ///< batches per loader in each evaluation
    std::string start_context = "Every effort moves you";  ///< the prompt of each epoch's sample
    /// Not his: stop after this many steps (their evaluations done, no sample after a cut
    /// epoch), for a shortened run; unset: every epoch whole.
    std::optional<std::int64_t> max_steps{};
};

/// What `train_model_simple` returns: his `train_losses, val_losses, track_tokens_seen`, one
/// entry per evaluation.
struct TrainHistory {
    std::vector<double> train_losses;          ///< `calc_loss_loader` of the training loader
    std::vector<double> val_losses;            ///< of the validation loader
    std::vector<std::int64_t> tokens_seen;     ///< tokens trained on before the evaluation
};

/// His `train_model_simple(model, train_loader, val_loader, optimizer, device, num_epochs,
/// eval_freq, eval_iter, start_context, tokenizer)`: for each epoch, `model.train()`, then for
/// each batch of a new iteration of `train_loader` one `train_step`, `tokens_seen +=
/// input_batch.numel()`, `global_step += 1` (from -1), and when `global_step % eval_freq == 0`
/// `evaluate_model` and the line `Ep 1 (Step 000000): Train loss 9.781, Val loss 9.933` written to
/// `out`; after each epoch `generate_sample`'s line. `on_step` (may be empty) is called after every
/// step, for a progress line. With `max_steps` the run stops after that step (its `break`
/// draws what Python's would).
/// @throws std::invalid_argument when `eval_freq` or `eval_iter` is 0, `max_steps` is not
/// positive, when the training loader
/// has no batch (`"train_model_simple: the training loader gives no batch: ..."`: his loop would
/// silently train nothing), or as `train_step` and `evaluate_model`.
TrainHistory train_model_simple(GPTModel& model, const data::DataLoader& train_loader,
                                const data::DataLoader& val_loader, optim::Optimizer& optimizer,
                                const TrainOptions& options, const GPT2Tokenizer& tokenizer, std::ostream& out,
                                const std::function<void(const TrainProgress&)>& on_step = {});

}  // namespace attn
