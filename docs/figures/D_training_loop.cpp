// Appendix D's figures: his In [7] and In [9] learning rates (the warmup alone, then with the
// cosine decay), and what his train_model run recorded (chapters/D_training_loop.hpp:
// history_tensors): the rates of In [15], the losses of In [16], and the total gradient norm of
// every step it clipped.
#include "figures.hpp"

#include <string>
#include <vector>

namespace {

std::vector<double> values(const attn::Tensor& t) { return {t.begin(), t.end()}; }

std::vector<double> steps(std::size_t n) {
    std::vector<double> s(n);
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<double>(i);
    return s;
}

FIGURES{
    {.chapter = "D", .step = "cosine", .file = "chD_schedules.svg",
     .caption = "Appendix D, steps 2 and 3: his In [7] and In [9], the learning rate of each of the 135 steps: "
                "the warmup rising for the first fifth of the run, then either staying at peak_lr or falling "
                "along half a cosine to min_lr.",
     .draw = [](const figures::Data& data) {
         const std::vector<double> warmup = values(data.tensor("track_lrs of his In [6]: the first steps, the last of "
                                                               "the warmup, and the rest at peak_lr", "track_lrs"));
         const std::vector<double> cosine = values(data.tensor("track_lrs of his In [8]: the warmup, then half a "
                                                               "cosine from peak_lr down to min_lr", "track_lrs"));
         figures::svg::PlotStyle style;
         style.title = "Learning rate per step";
         style.subtitle = "initial_lr 0.0001, peak_lr 0.01, 15 epochs of 9 steps";
         style.x_label = "step";
         style.y_label = "learning rate";
         return figures::svg::line_plot({{"warmup (In [7])", steps(warmup.size()), warmup, "", true},
                                         {"warmup and cosine decay (In [9])", steps(cosine.size()), cosine, "", false}},
                                        style);
     }},
    {.chapter = "D", .step = "training", .file = "chD_losses.svg",
     .caption = "Appendix D, step 5: his In [16], the training and validation losses of every fifth step of his "
                "train_model run against the epochs, as the library ran it. The training loss falls to "
                "almost nothing; the validation loss stops falling early: the model memorises the story.",
     .draw = [](const figures::Data& data) {
         const std::string key = "rchD-In14";
         const std::vector<double> x = values(data.tensor(key, "epochs_seen"));
         figures::svg::PlotStyle style;
         style.title = "Training and validation loss";
         style.subtitle = "his train_model on The Verdict: warmup, cosine decay, clipping; seed 123";
         style.x_label = "epochs";
         style.y_label = "loss";
         return figures::svg::line_plot({{"training loss", x, values(data.tensor(key, "train_losses")), "", false},
                                         {"validation loss", x, values(data.tensor(key, "val_losses")), "", true}},
                                        style);
     }},
    {.chapter = "D", .step = "training", .file = "chD_run_rates.svg",
     .caption = "Appendix D, step 5: his In [15], the learning rate train_model set at each step of the run: "
                "from initial_lr up to peak_lr over the warmup, then down to min_lr.",
     .draw = [](const figures::Data& data) {
         const std::vector<double> lrs = values(data.tensor("rchD-In14", "track_lrs"));
         figures::svg::PlotStyle style;
         style.title = "The run's learning rate";
         style.subtitle = "peak_lr 0.001, initial_lr and min_lr 1e-5";
         style.x_label = "step";
         style.y_label = "learning rate";
         return figures::svg::line_plot({{"learning rate", steps(lrs.size()), lrs, "", false}}, style);
     }},
    {.chapter = "D", .step = "training", .file = "chD_norms.svg",
     .caption = "Appendix D, step 5: the total norm of all the gradients at each step train_model clipped, "
                "before clipping, against max_norm. Above the line the step was scaled down to it.",
     .draw = [](const figures::Data& data) {
         const std::vector<double> x = values(data.tensor("rchD-In14", "clipped_steps"));
         const std::vector<double> y = values(data.tensor("rchD-In14", "total_norms"));
         figures::svg::PlotStyle style;
         style.title = "Total gradient norm before clipping";
         style.subtitle = "clip_grad_norm_(model.parameters(), max_norm=1.0) after the warmup";
         style.x_label = "step";
         style.y_label = "norm";
         style.log_y = true;
         const std::vector<double> ones(x.size(), 1.0);
         return figures::svg::line_plot({{"total norm", x, y, "", false}, {"max_norm", x, ones, "", true}}, style);
     }},
};

}  // namespace
