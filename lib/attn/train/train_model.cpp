/// @file train_model.cpp
/// @brief His appendix D: `find_highest_gradient` and `train_model` (train_model.hpp).

#include "attn/train/train_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "attn/core/reduce.hpp"
#include "attn/nn/clip_grad.hpp"
#include "attn/print/python.hpp"
#include "attn/train/lr_schedule.hpp"

namespace attn {

std::optional<Tensor> find_highest_gradient(nn::Module& model) {
    return find_highest_gradient(model.named_parameters());
}

std::optional<Tensor> find_highest_gradient(const std::vector<nn::NamedParameter>& parameters) {
    std::optional<float> max_grad;  // his max_grad = None
    for (const nn::NamedParameter& p : parameters) {
        if (p.grad == nullptr)
            throw std::invalid_argument("find_highest_gradient: parameter '" + p.name + "' has a null grad pointer");
        if (!p.grad->has_value()) continue;  // if param.grad is not None
        const Tensor& g = **p.grad;
        if (g.size() == 0)
            throw std::invalid_argument("find_highest_gradient: the gradient of '" + p.name +
                                        "' is empty (PyTorch's max() of no element raises)");
        const float max_grad_param = detail::torch_max(g.data(), g.size());  // grad_values.max()
        if (!max_grad || max_grad_param > *max_grad) max_grad = max_grad_param;
    }
    if (!max_grad) return std::nullopt;
    return scalar_tensor(*max_grad);
}

TrainModelHistory train_model(GPTModel& model, const data::DataLoader& train_loader,
                              const data::DataLoader& val_loader, optim::Optimizer& optimizer,
                              const TrainModelOptions& options, const GPT2Tokenizer& tokenizer, std::ostream& out,
                              const std::function<void(const TrainProgress&)>& on_step) {
    const std::string where = "train_model";
    detail::check_training_run(where, options.eval_freq, options.eval_iter, options.max_steps, train_loader);
    if (!(options.max_norm > 0.0))  // clip_grad_norm_'s own check, made before the first step
        throw std::invalid_argument(where + ": max_norm must be positive, got " + repr_float(options.max_norm) +
                                    " (clip_grad_norm_ would scale every gradient by a coefficient of 0, below 0 "
                                    "or NaN)");
    // peak_lr = optimizer.param_groups[0]["lr"]; total_training_steps = len(train_loader) * n_epochs
    const LrSchedule schedule{.peak_lr = optimizer.lr(),
                              .warmup_steps = options.warmup_steps,
                              .total_training_steps = static_cast<std::int64_t>(options.n_epochs * train_loader.size()),
                              .initial_lr = options.initial_lr,
                              .min_lr = options.min_lr};
    try {
        schedule.validate();
    } catch (const std::invalid_argument& e) {  // peak_lr is the optimizer's rate, the total its steps
        throw std::invalid_argument(where + " (peak_lr = the optimizer's lr " + repr_float(schedule.peak_lr) +
                                    ", total_training_steps = " + std::to_string(train_loader.size()) +
                                    " batches * " + std::to_string(options.n_epochs) + " epochs): " + e.what());
    }
    TrainModelHistory history;
    TrainStepState state;
    std::int64_t tokens_seen = 0, global_step = -1;
    std::int64_t steps = schedule.total_training_steps;
    if (options.max_steps) steps = std::min(steps, *options.max_steps);
    const std::vector<nn::NamedParameter> parameters = model.named_parameters();
    for (std::size_t epoch = 0; epoch < options.n_epochs; ++epoch) {
        model.train();
        for (const auto& [input_batch, target_batch] : train_loader) {
            const Shape si = shape_of(input_batch);
            if (si.size() == 2) check_same_shape(where + " (target_batch)", si, shape_of(target_batch));
            optimizer.zero_grad();
            global_step += 1;
            const double lr = schedule.lr(global_step);
            optimizer.set_lr(lr);  // for param_group in optimizer.param_groups: param_group["lr"] = lr
            history.track_lrs.push_back(lr);
            const Tensor loss = forward_backward(model, input_batch, target_batch, state);
            std::optional<float> grad_norm;
            if (options.clip_from_warmup_step ? global_step >= options.warmup_steps
                                              : global_step > options.warmup_steps)
                grad_norm = nn::utils::clip_grad_norm_(parameters, options.max_norm)();
            optimizer.step();
            tokens_seen += static_cast<std::int64_t>(input_batch.size());
            if (global_step % static_cast<std::int64_t>(options.eval_freq) == 0)
                detail::evaluate_and_print(model, train_loader, val_loader, options.eval_iter, epoch, global_step, "Iter",
                                           tokens_seen, history.train_losses, history.val_losses, history.tokens_seen,
                                           out);
            if (on_step) on_step({epoch + 1, global_step, steps, tokens_seen, loss(), lr, grad_norm});
            if (options.max_steps && global_step + 1 >= *options.max_steps) return history;
        }
        out << generate_sample(model, tokenizer, options.start_context) << '\n';
    }
    return history;
}

}  // namespace attn
