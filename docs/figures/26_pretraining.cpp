// Chapter 26's figure: his In [28] plot_losses, the training and validation losses of every
// evaluation of the training run against the epochs (the tokens seen, his second axis, in the
// caption's terms), from the losses the chapter records with its training block
// (chapters/26_pretraining.hpp: history_tensors).
#include "figures.hpp"

#include <string>
#include <vector>

namespace {

FIGURES{
    {.chapter = "26", .step = "training", .file = "ch26_losses.svg",
     .caption = "Chapter 26, step 6: his In [28], the training and validation losses of every fifth step of "
                "his training run against the epochs (two windows of 256 tokens a step, 4,608 tokens an "
                "epoch), as the library ran it. The training loss keeps falling; the validation loss stops "
                "falling after a few epochs: the model memorises the story's training part.",
     .draw = [](const figures::Data& data) {
         const std::string key = "rch05-In27";
         const attn::Tensor epochs = data.tensor(key, "epochs_seen"), train = data.tensor(key, "train_losses");
         const attn::Tensor val = data.tensor(key, "val_losses");
         const std::vector<double> x(epochs.begin(), epochs.end()), y_train(train.begin(), train.end()),
             y_val(val.begin(), val.end());
         figures::svg::PlotStyle style;
         style.title = "Training and validation loss";
         style.subtitle = "his train_model_simple on The Verdict, GPT_CONFIG_124M (context 256), seed 123";
         style.x_label = "epochs";
         style.y_label = "loss";
         return figures::svg::line_plot({{"training loss", x, y_train, "", false},
                                         {"validation loss", x, y_val, "", true}},
                                        style);
     }},
};

}  // namespace
