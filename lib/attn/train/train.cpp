// Raschka's chapter 5 training utilities (train.hpp).
#include "attn/train/train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "attn/core/functional.hpp"
#include "attn/model/generate.hpp"

namespace attn {

LongTensor text_to_token_ids(std::string_view text, const GPT2Tokenizer& tokenizer) {
    const std::vector<std::int64_t> ids = tokenizer.encode(text, {"<|endoftext|>"});
    LongTensor t = LongTensor::from_shape({1, ids.size()});
    std::copy(ids.begin(), ids.end(), t.begin());
    return t;
}

std::string token_ids_to_text(const LongTensor& token_ids, const GPT2Tokenizer& tokenizer) {
    const Shape s = shape_of(token_ids);
    if (!(s.size() == 1 || (s.size() == 2 && s[0] == 1)))
        throw_shape_error("token_ids_to_text (token_ids)", "[n] or [1, n] (squeeze(0) must leave one row)", s);
    return tokenizer.decode(std::vector<std::int64_t>(token_ids.begin(), token_ids.end()), DecodeErrors::replace);
}

Tensor calc_loss_batch(const LongTensor& input_batch, const LongTensor& target_batch, const GPTModel& model,
                       Generator& gen) {
    // The logits in this thread's buffer, kept between calls: the batches of an evaluation, and
    // every evaluation, reuse its memory instead of mapping and faulting it in anew.
    thread_local Tensor logits;
    model.forward_into(input_batch, logits, gen);
    const Shape s = shape_of(logits);
    check_same_shape("calc_loss_batch (target_batch)", Shape{s[0], s[1]}, shape_of(target_batch));
    LongTensor targets = target_batch;
    targets.reshape({s[0] * s[1]});
    logits.reshape({s[0] * s[1], s[2]});  // flatten(0, 1) in place; forward_into shapes it again
    return cross_entropy(logits, targets);
}

double calc_loss_loader(const data::DataLoader& data_loader, const GPTModel& model,
                        std::optional<std::size_t> num_batches) {
    if (data_loader.size() == 0) return std::numeric_limits<double>::quiet_NaN();
    const std::size_t n = num_batches ? std::min(*num_batches, data_loader.size()) : data_loader.size();
    double total_loss = 0.0;
    std::size_t i = 0;
    for (const auto& [input_batch, target_batch] : data_loader) {
        if (i++ >= n) break;  // his `if i < num_batches: ... else: break`
        total_loss += static_cast<double>(calc_loss_batch(input_batch, target_batch, model)());
    }
    return total_loss / static_cast<double>(n);
}

Tensor forward_backward(GPTModel& model, const LongTensor& input_batch, const LongTensor& target_batch,
                        TrainStepState& state, Generator& gen) {
    const Shape si = shape_of(input_batch);
    if (si.size() == 2) check_same_shape("forward_backward (target_batch)", si, shape_of(target_batch));
    model.forward(input_batch, state.saved, gen);
    Tensor& logits = state.saved.logits;
    const Shape sl = shape_of(logits);
    LongTensor targets = target_batch;
    check_same_shape("forward_backward (target_batch)", Shape{sl[0], sl[1]}, shape_of(targets));
    targets.reshape({sl[0] * sl[1]});
    // logits.flatten(0, 1) in place (no copy of the 103 MB): cross_entropy and loss.backward()'s
    // first node (dL/dL = 1) in one pass, the gradient into the state's reused buffer
    logits.reshape({sl[0] * sl[1], sl[2]});
    float loss = 0.0f;
    try {
        loss = cross_entropy_with_grad(logits, targets, state.grad_logits);
    } catch (...) {
        logits.reshape(sl);
        throw;
    }
    logits.reshape(sl);
    state.grad_logits.reshape(sl);
    model.backward(state.saved, state.grad_logits);
    return scalar_tensor(loss);
}

Tensor train_step(GPTModel& model, optim::Optimizer& optimizer, const LongTensor& input_batch,
                  const LongTensor& target_batch, TrainStepState& state, Generator& gen) {
    const Shape si = shape_of(input_batch);
    if (si.size() == 2) check_same_shape("train_step (target_batch)", si, shape_of(target_batch));
    optimizer.zero_grad();
    Tensor loss = forward_backward(model, input_batch, target_batch, state, gen);
    optimizer.step();
    return loss;
}

std::pair<double, double> evaluate_model(GPTModel& model, const data::DataLoader& train_loader,
                                         const data::DataLoader& val_loader, std::size_t eval_iter) {
    model.eval();
    struct Restore {  // model.train() again, also when a batch is refused
        GPTModel& m;
        ~Restore() { m.train(); }
    } restore{model};
    const double train_loss = calc_loss_loader(train_loader, model, eval_iter);
    const double val_loss = calc_loss_loader(val_loader, model, eval_iter);
    return {train_loss, val_loss};
}

std::string generate_sample(GPTModel& model, const GPT2Tokenizer& tokenizer, std::string_view start_context) {
    model.eval();
    struct Restore {
        GPTModel& m;
        ~Restore() { m.train(); }
    } restore{model};
    const LongTensor encoded = text_to_token_ids(start_context, tokenizer);
    const LongTensor token_ids = generate_text_simple(model, encoded, 50, model.context_length());
    std::string decoded = token_ids_to_text(token_ids, tokenizer);
    for (char& c : decoded)
        if (c == '\n') c = ' ';  // his decoded_text.replace("\n", " ")
    return decoded;
}

namespace detail {

void check_training_run(const std::string& where, std::size_t eval_freq, std::size_t eval_iter,
                        std::optional<std::int64_t> max_steps, const data::DataLoader& train_loader) {
    if (eval_freq == 0) throw std::invalid_argument(where + ": eval_freq must be positive, got 0");
    if (eval_iter == 0) throw std::invalid_argument(where + ": eval_iter must be positive, got 0");
    if (max_steps && *max_steps <= 0)
        throw std::invalid_argument(where + ": max_steps must be positive, got " + std::to_string(*max_steps));
    if (train_loader.size() == 0)
        throw std::invalid_argument(where + ": the training loader gives no batch: " +
                                    std::to_string(train_loader.dataset().size()) + " windows, batch_size " +
                                    std::to_string(train_loader.options().batch_size) +
                                    (train_loader.options().drop_last ? " with drop_last" : ""));
}

void evaluate_and_print(GPTModel& model, const data::DataLoader& train_loader, const data::DataLoader& val_loader,
                        std::size_t eval_iter, std::size_t epoch, std::int64_t global_step, const char* step_word,
                        std::int64_t tokens_seen, std::vector<double>& train_losses, std::vector<double>& val_losses,
                        std::vector<std::int64_t>& tokens, std::ostream& out) {
    const auto [train_loss, val_loss] = evaluate_model(model, train_loader, val_loader, eval_iter);
    train_losses.push_back(train_loss);
    val_losses.push_back(val_loss);
    tokens.push_back(tokens_seen);
    char line[128];
    std::snprintf(line, sizeof line, "Ep %zu (%s %06lld): Train loss %.3f, Val loss %.3f", epoch + 1, step_word,
                  static_cast<long long>(global_step), train_loss, val_loss);
    out << line << '\n';
}

}  // namespace detail

TrainHistory train_model_simple(GPTModel& model, const data::DataLoader& train_loader,
                                const data::DataLoader& val_loader, optim::Optimizer& optimizer,
                                const TrainOptions& options, const GPT2Tokenizer& tokenizer, std::ostream& out,
                                const std::function<void(const TrainProgress&)>& on_step) {
    detail::check_training_run("train_model_simple", options.eval_freq, options.eval_iter, options.max_steps, train_loader);
    TrainHistory history;
    TrainStepState state;
    std::int64_t tokens_seen = 0, global_step = -1;
    auto steps = static_cast<std::int64_t>(options.num_epochs * train_loader.size());
    if (options.max_steps) steps = std::min(steps, *options.max_steps);
    for (std::size_t epoch = 0; epoch < options.num_epochs; ++epoch) {
        model.train();
        for (const auto& [input_batch, target_batch] : train_loader) {
            const Tensor loss = train_step(model, optimizer, input_batch, target_batch, state);
            tokens_seen += static_cast<std::int64_t>(input_batch.size());
            global_step += 1;
            if (global_step % static_cast<std::int64_t>(options.eval_freq) == 0)
                detail::evaluate_and_print(model, train_loader, val_loader, options.eval_iter, epoch, global_step, "Step",
                                           tokens_seen, history.train_losses, history.val_losses, history.tokens_seen,
                                           out);
            if (on_step) on_step({epoch + 1, global_step, steps, tokens_seen, loss(), optimizer.lr()});
            if (options.max_steps && global_step + 1 >= *options.max_steps) return history;
        }
        out << generate_sample(model, tokenizer, options.start_context) << '\n';
    }
    return history;
}

}  // namespace attn
