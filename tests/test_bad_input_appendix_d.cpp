// The bad-input table, appendix D's training refinements (attn/train/lr_schedule.hpp,
// attn/nn/clip_grad.hpp, attn/train/train_model.hpp): a warmup beyond the run's steps or of 0
// steps, a peak learning rate below the minimum, rates that are NaN or negative, a max_norm of 0,
// below 0 or NaN, a norm order not offered, his train_model's options out of range -- each
// refused with a message naming what was wrong, before any gradient or parameter changes. His
// Python raises for none of these but the warmup of 0 steps (ZeroDivisionError in his
// `lr_increment`) and the empty gradient (PyTorch's max() of no element); the library refuses
// them (issue 44), as bad_input.hpp describes.
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/core/functional.hpp"
#include "attn/data/dataloader.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/clip_grad.hpp"
#include "attn/nn/optim.hpp"
#include "attn/train/lr_schedule.hpp"
#include "attn/train/train_model.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_bad_input_appendix_d {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace bad_input;

const double nan_d = std::numeric_limits<double>::quiet_NaN();

// A small GPT: 97 tokens, 8 positions, 8 wide, 2 heads, 2 blocks, dropout 0.1.
constexpr GPTConfig kSmall{.vocab_size = 97, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2,
                           .drop_rate = 0.1};

// 30 tokens in windows of 8, stride 8: 3 windows, so 3 batches of one (his len(train_loader)).
data::DataLoader loader(std::size_t batch_size = 1) {
    std::vector<std::int64_t> tokens(30);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::int64_t(i % 97);
    return data::DataLoader(data::GPTDatasetV1(tokens, 8, 8), {.batch_size = batch_size, .shuffle = false, .drop_last = true});
}

// His In [4] and In [5]: 15 epochs of 9 batches, 27 warmup steps, peak 0.01, initial 1e-4, min 1e-5.
LrSchedule his_schedule() {
    return {.peak_lr = 0.01, .warmup_steps = 27, .total_training_steps = 135, .initial_lr = 0.0001, .min_lr = 1e-5};
}

// Every parameter's values, one after the other.
std::vector<float> values(GPTModel& m) {
    std::vector<float> out;
    for (const auto& p : m.named_parameters()) out.insert(out.end(), p.value->begin(), p.value->end());
    return out;
}

// train_model of the small GPT on 3 batches an epoch with `options` (AdamW at `lr`, weight decay
// 0.1): whether it was refused with `substring` in the message and left the parameters, the
// optimizer's rate and the output as they were.
bool refused_untouched(TrainModelOptions options, double lr, const std::string& substring) {
    GPTModel m(kSmall);
    optim::AdamW opt(m.named_parameters(), {.lr = lr, .weight_decay = 0.1});
    const std::vector<float> before = values(m);
    std::ostringstream out;
    try {
        (void)train_model(m, loader(), loader(), opt, options, textbook::gpt2_tokenizer(), out);
        return false;
    } catch (const std::invalid_argument& e) {
        return std::string(e.what()).find(substring) != std::string::npos && values(m) == before &&
               out.str().empty() && opt.lr() == lr;
    }
}

// One parameter with a gradient of 5 values (2-norm above 5), for clip_grad_norm_.
struct OneGrad {
    Tensor value = zeros({5});
    std::optional<Tensor> grad = Tensor(xt::xarray<float>{0.5f, -1.5f, 2.0f, 3.0f, -4.0f});
    std::vector<nn::NamedParameter> named() { return {{"w", &value, &grad}}; }
};

// clip_grad_norm_ refuses max_norm (message checked by the err rows) and leaves the gradient as it was.
bool clip_refused_untouched(double max_norm, double norm_type = 2.0) {
    OneGrad p;
    const Tensor before = *p.grad;
    try {
        (void)nn::utils::clip_grad_norm_(p.named(), max_norm, norm_type);
        return false;
    } catch (const std::invalid_argument&) {
        return *p.grad == before;
    }
}

std::vector<Case> appendix_d_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    // ---- LrSchedule (his In [6], In [8] and train_model's schedule)
    err("LrSchedule: warmup_steps beyond the run's steps", [] {
        LrSchedule s = his_schedule();
        s.warmup_steps = 136;
        (void)s.lrs();
        return true;
    }, IA, "LrSchedule: warmup_steps 136 is beyond total_training_steps 135 (the warmup would never reach peak_lr)");
    err("LrSchedule: warmup_steps 0 (his lr_increment divides by it)", [] {
        LrSchedule s = his_schedule();
        s.warmup_steps = 0;
        (void)s.lr(5);
        return true;
    }, IA, "LrSchedule: warmup_steps must be at least 1 (his lr_increment divides by it), got 0");
    err("LrSchedule: warmup_steps negative", [] {
        LrSchedule s = his_schedule();
        s.warmup_steps = -3;
        (void)s.lr_increment();
        return true;
    }, IA, "got -3");
    err("LrSchedule: peak_lr below min_lr", [] {
        LrSchedule s = his_schedule();
        s.peak_lr = 1e-6;
        (void)s.lrs();
        return true;
    }, IA, "LrSchedule: peak_lr 1e-06 is below min_lr 1e-05 (the cosine decay would rise)");
    err("LrSchedule: peak_lr below min_lr, without the cosine decay too", [] {
        LrSchedule s = his_schedule();
        s.min_lr = 0.02;
        s.cosine_decay = false;
        (void)s.lr(0);
        return true;
    }, IA, "peak_lr 0.01 is below min_lr 0.02");
    err("LrSchedule: peak_lr NaN", [] {
        LrSchedule s = his_schedule();
        s.peak_lr = nan_d;
        (void)s.lrs();
        return true;
    }, IA, "LrSchedule: peak_lr must be a finite rate >= 0, got nan");
    err("LrSchedule: initial_lr infinite", [] {
        LrSchedule s = his_schedule();
        s.initial_lr = std::numeric_limits<double>::infinity();
        (void)s.lrs();
        return true;
    }, IA, "LrSchedule: initial_lr must be a finite rate >= 0, got inf");
    err("LrSchedule: min_lr negative", [] {
        LrSchedule s = his_schedule();
        s.min_lr = -1e-5;
        (void)s.lrs();
        return true;
    }, IA, "LrSchedule: min_lr must be a finite rate >= 0, got -1e-05");
    err("LrSchedule: a negative step", [] {
        (void)his_schedule().lr(-1);
        return true;
    }, IA, "LrSchedule::lr: global_step must be >= 0, got -1");
    err("LrSchedule: a step past a run that is all warmup", [] {
        LrSchedule s = his_schedule();
        s.warmup_steps = 135;
        (void)s.lr(135);
        return true;
    }, IA, "LrSchedule::lr: step 135 is past a run that is all warmup");
    ok("LrSchedule: a run that is all warmup (warmup_steps = total) is his warmup, no division by 0", [] {
        LrSchedule s = his_schedule();
        s.warmup_steps = 135;
        const std::vector<double> lrs = s.lrs();
        return lrs.size() == 135 && lrs[0] == 0.0001 && lrs[134] == 0.0001 + 134.0 * ((0.01 - 0.0001) / 135.0);
    });
    ok("LrSchedule: peak_lr equal to min_lr (a flat decay) is accepted", [] {
        LrSchedule s = his_schedule();
        s.min_lr = s.peak_lr;
        return s.lr(100) == 0.01;
    });

    // ---- clip_grad_norm_ (PyTorch accepts these silently: 0 zeroes the gradients, < 0 flips them, NaN fills NaN)
    err("clip_grad_norm_: max_norm 0", RUN(nn::utils::clip_grad_norm_(OneGrad().named(), 0.0)), IA,
        "clip_grad_norm_: max_norm must be positive, got 0.0");
    err("clip_grad_norm_: max_norm negative", RUN(nn::utils::clip_grad_norm_(OneGrad().named(), -1.0)), IA,
        "clip_grad_norm_: max_norm must be positive, got -1.0");
    err("clip_grad_norm_: max_norm NaN", RUN(nn::utils::clip_grad_norm_(OneGrad().named(), nan_d)), IA,
        "clip_grad_norm_: max_norm must be positive, got nan");
    err("clip_grad_norm_: max_norm 0 with no gradient at all", [] {
        std::vector<nn::NamedParameter> none;
        (void)nn::utils::clip_grad_norm_(none, 0.0);
        return true;
    }, IA, "max_norm must be positive, got 0.0");
    ok("clip_grad_norm_: max_norm 0, below 0 and NaN leave the gradient as it was",
       [] { return clip_refused_untouched(0.0) && clip_refused_untouched(-2.5) && clip_refused_untouched(nan_d); });
    err("clip_grad_norm_: norm_type 1 (not offered)", RUN(nn::utils::clip_grad_norm_(OneGrad().named(), 1.0, 1.0)), IA,
        "clip_grad_norm_: norm_type must be 2.0 or inf");
    ok("clip_grad_norm_: norm_type 1 leaves the gradient as it was", [] { return clip_refused_untouched(1.0, 1.0); });
    err("clip_grad_norm_: a null grad pointer", [] {
        Tensor w = zeros({3});
        (void)nn::utils::clip_grad_norm_({{"w", &w, nullptr}}, 1.0);
        return true;
    }, IA, "clip_grad_norm_: parameter 'w' has a null grad pointer");
    err("clip_grad_norm_: norm_type inf of an empty gradient (PyTorch's abs().max() raises)", [] {
        Tensor w = zeros({0});
        std::optional<Tensor> g = zeros({0});
        (void)nn::utils::clip_grad_norm_({{"w", &w, &g}}, 1.0, std::numeric_limits<double>::infinity());
        return true;
    }, IA, "is empty: its inf-norm (abs().max()) is undefined");

    // ---- find_highest_gradient
    err("find_highest_gradient: an empty gradient (PyTorch's max() of no element raises)", [] {
        Tensor w = zeros({0});
        std::optional<Tensor> g = zeros({0});
        (void)find_highest_gradient(std::vector<nn::NamedParameter>{{"w", &w, &g}});
        return true;
    }, IA, "find_highest_gradient: the gradient of 'w' is empty");
    err("find_highest_gradient: a null grad pointer", [] {
        Tensor w = zeros({3});
        (void)find_highest_gradient(std::vector<nn::NamedParameter>{{"w", &w, nullptr}});
        return true;
    }, IA, "find_highest_gradient: parameter 'w' has a null grad pointer");

    // ---- train_model (3 batches an epoch)
    err("train_model: warmup_steps beyond the run's steps", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 2, .warmup_steps = 7, .initial_lr = 1e-5,
                                                       .min_lr = 1e-5}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model (peak_lr = the optimizer's lr 0.001, total_training_steps = 3 batches * 2 epochs): "
           "LrSchedule: warmup_steps 7 is beyond total_training_steps 6");
    ok("train_model: warmup_steps beyond the run's steps is refused before any parameter moves", [] {
        return refused_untouched({.n_epochs = 2, .warmup_steps = 7}, 0.001, "warmup_steps 7 is beyond");
    });
    err("train_model: warmup_steps 0 (his default-less argument left at 0)", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 2}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "LrSchedule: warmup_steps must be at least 1 (his lr_increment divides by it), got 0");
    err("train_model: the optimizer's rate (his peak_lr) below min_lr", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 1e-6, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 2, .warmup_steps = 1, .initial_lr = 1e-5,
                                                       .min_lr = 1e-5}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model (peak_lr = the optimizer's lr 1e-06, total_training_steps = 3 batches * 2 epochs): "
           "LrSchedule: peak_lr 1e-06 is below min_lr 1e-05");
    ok("train_model: peak_lr below min_lr is refused before any parameter moves", [] {
        return refused_untouched({.n_epochs = 2, .warmup_steps = 1, .min_lr = 1e-5}, 1e-6, "is below min_lr");
    });
    err("train_model: n_epochs 0 (no step, so any warmup is beyond the run)", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 0, .warmup_steps = 1}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "warmup_steps 1 is beyond total_training_steps 0");
    err("train_model: max_norm 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 2, .warmup_steps = 1, .max_norm = 0.0},
                          textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: max_norm must be positive, got 0.0");
    err("train_model: max_norm negative", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 2, .warmup_steps = 1, .max_norm = -1.0},
                          textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: max_norm must be positive, got -1.0");
    err("train_model: max_norm NaN", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001, .weight_decay = 0.1});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.n_epochs = 2, .warmup_steps = 1, .max_norm = nan_d},
                          textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: max_norm must be positive, got nan");
    ok("train_model: a NaN max_norm is refused before any parameter moves (clipping starts after the warmup)", [] {
        return refused_untouched({.n_epochs = 2, .warmup_steps = 1, .max_norm = nan_d}, 0.001, "max_norm");
    });
    err("train_model: eval_freq 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.eval_freq = 0, .warmup_steps = 1}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: eval_freq must be positive, got 0");
    err("train_model: eval_iter 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.eval_iter = 0, .warmup_steps = 1}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: eval_iter must be positive, got 0");
    err("train_model: max_steps 0", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001});
        std::ostringstream out;
        (void)train_model(m, loader(), loader(), opt, {.warmup_steps = 1, .max_steps = 0}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: max_steps must be positive, got 0");
    err("train_model: a training loader with no batch (batch_size 4 > 3 windows, drop_last)", [] {
        GPTModel m(kSmall);
        optim::AdamW opt(m.named_parameters(), {.lr = 0.001});
        std::ostringstream out;
        (void)train_model(m, loader(4), loader(), opt, {.warmup_steps = 1}, textbook::gpt2_tokenizer(), out);
        return true;
    }, IA, "train_model: the training loader gives no batch: 3 windows, batch_size 4 with drop_last");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (appendixd): every case has its exact outcome") {
    run_table("appendixd", appendix_d_cases());
}

}  // namespace test_bad_input_appendix_d
