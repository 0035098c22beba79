/// @file train_model.hpp
/// @brief Raschka's appendix D ("Adding bells and whistles to the training loop",
/// appendix-D.ipynb): `find_highest_gradient` (In [11]) and `train_model` (In [13]), his chapter 5
/// loop with a learning-rate warmup, cosine decay and gradient clipping, on the library's
/// `GPTModel` and its backward pass (no autograd).
///
/// As `train_model_simple` (train.hpp), every float operation is PyTorch 1.13's and every random
/// draw the default generator's in PyTorch's order; the learning rates are his Python floats
/// (`LrSchedule`, lr_schedule.hpp) and the clipping is `torch.nn.utils.clip_grad_norm_` as
/// PyTorch 1.13 computes it (nn/clip_grad.hpp). So a run from `manual_seed(123)` gives the
/// losses, learning rates and parameters Debian's python3-torch gives for his cells
/// (tests/test_appendix_d.cpp, data/oracle/appendix_d.json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/optim.hpp"
#include "attn/text/gpt2_tokenizer.hpp"
#include "attn/train/train.hpp"

namespace attn {

/// His `find_highest_gradient(model)` (appendix D, In [11]): the largest gradient element of the
/// model, `max(param.grad.data.flatten().max())` over the parameters that have a `.grad`, in
/// `parameters()` order, compared as he compares them (`max_grad_param > max_grad`), so a NaN
/// maximum of the first parameter stays and a later one is passed over; each maximum as
/// PyTorch's `max()` gives it (`detail::torch_max`: a NaN among two or more elements is the NaN
/// of all-ones bits); a 0-d float32 tensor, or empty (his `None`) when no parameter has a
/// gradient.
/// Gradients: float32, any shape.
/// @throws std::invalid_argument naming the parameter when a `.grad` is empty (PyTorch's
/// `max()` of no element raises).
/// Source: his `find_highest_gradient`, appendix-D.ipynb In [11].
std::optional<Tensor> find_highest_gradient(nn::Module& model);

/// `find_highest_gradient` of a list of parameters (his loop over `model.parameters()`), e.g.
/// an optimizer's `parameters()`. @throws as the model's, and std::invalid_argument when a
/// `grad` pointer is null.
std::optional<Tensor> find_highest_gradient(const std::vector<nn::NamedParameter>& parameters);

/// His `train_model`'s arguments after the model, loaders and optimizer (its `peak_lr` is the
/// optimizer's learning rate when the run starts).
struct TrainModelOptions {
    std::size_t n_epochs = 15;      ///< passes over the training loader (his In [14]: 15)
    std::size_t eval_freq = 5;      ///< evaluate when `global_step % eval_freq == 0`
    std::size_t eval_iter = 1;      ///< batches per loader in each evaluation (his In [14]: 1)
    std::string start_context = "Every effort moves you";  ///< the prompt of each epoch's sample
    std::int64_t warmup_steps = 0;  ///< his `warmup_steps` (In [5]: `int(0.2 * total_steps)`), >= 1
    double initial_lr = 3e-05;      ///< his default; In [14] passes 1e-5
    double min_lr = 1e-6;           ///< his default; In [14] passes 1e-5
    /// Clip from step `warmup_steps` on (`global_step >= warmup_steps`, his repository since
    /// January 2025) instead of after it (`global_step > warmup_steps`, the printed book's code
    /// and his printed run, which skips the clipping at the first step after the warmup).
    bool clip_from_warmup_step = false;
    double max_norm = 1.0;          ///< `clip_grad_norm_(model.parameters(), max_norm=1.0)`
    /// Not his: stop after this many steps (their evaluations done, no sample after a cut
    /// epoch), for a shortened run; the schedule stays the whole run's. Unset: every epoch whole.
    std::optional<std::int64_t> max_steps{};
};

/// What `train_model` returns: his `train_losses, val_losses, track_tokens_seen, track_lrs`.
struct TrainModelHistory {
    std::vector<double> train_losses;       ///< per evaluation: `calc_loss_loader` of the training loader
    std::vector<double> val_losses;         ///< per evaluation: of the validation loader
    std::vector<std::int64_t> tokens_seen;  ///< per evaluation: tokens trained on before it
    std::vector<double> track_lrs;          ///< per step: its learning rate
};

/// His `train_model(model, train_loader, val_loader, optimizer, device, n_epochs, eval_freq,
/// eval_iter, start_context, tokenizer, warmup_steps, initial_lr, min_lr)` (appendix D, In [13]):
/// `peak_lr = optimizer.param_groups[0]["lr"]`, `total_training_steps = len(train_loader) *
/// n_epochs`; then for each epoch `model.train()` and for each batch of a new iteration of
/// `train_loader`: `optimizer.zero_grad()`, `global_step += 1` (from -1), the step's learning
/// rate (`LrSchedule{peak_lr, warmup_steps, total_training_steps, initial_lr, min_lr}`) set into
/// the optimizer and appended to `track_lrs`, `forward_backward` (his `calc_loss_batch` and
/// `loss.backward()`), `nn::utils::clip_grad_norm_(model.named_parameters(), max_norm)` when
/// `global_step > warmup_steps` (`>=` with `clip_from_warmup_step`), `optimizer.step()`,
/// `tokens_seen += input_batch.numel()`, and when `global_step % eval_freq == 0` `evaluate_model`
/// and the line `Ep 1 (Iter 000000): Train loss 10.934, Val loss 10.939` written to `out`; after
/// each epoch `generate_sample`'s line. `on_step` (may be empty) is called after every step with
/// its loss, learning rate and, when it clipped, the total norm. The optimizer must hold the
/// model's parameters. With `max_steps` the run stops after that step.
/// @throws std::invalid_argument when `eval_freq`, `eval_iter` or `max_steps` is not positive,
/// the training loader has no batch, the schedule is refused (`LrSchedule::validate`: e.g.
/// `warmup_steps` 0 or beyond the run's steps, or the optimizer's rate below `min_lr`),
/// `max_norm` is 0, negative or NaN, or as `train_step` and `evaluate_model`; the options are
/// checked before the first step (no parameter, rate or output changed then). Batches: int64
/// `[batch_size, T]`, `T <= context_length`, as the loaders give them; losses in double (his
/// `loss.item()` means), learning rates in double (his Python floats).
/// Source: his `train_model`, appendix-D.ipynb In [13] (`BOOK_VERSION = True`; `>=` is his
/// repository's `BOOK_VERSION = False`), run as his In [14] runs it.
TrainModelHistory train_model(GPTModel& model, const data::DataLoader& train_loader,
                              const data::DataLoader& val_loader, optim::Optimizer& optimizer,
                              const TrainModelOptions& options, const GPT2Tokenizer& tokenizer, std::ostream& out,
                              const std::function<void(const TrainProgress&)>& on_step = {});

}  // namespace attn
