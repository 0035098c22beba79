// Appendix D: the training loop's refinements — Raschka's appendix D (appendix-D.ipynb, In [1]-[16]):
// learning-rate warmup, cosine decay, gradient clipping, and his train_model with all three.
// Prose: docs/chapters/D_training_loop.md.
#include "D_training_loop.hpp"  // the library's headers this chapter calls, and its helpers

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "D_training_loop", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        ch.book("rchD-In01", "the versions: no torch here; the library reproduces torch 1.13's CPU arithmetic",
                "attn (C++), in place of torch 1.13.1");
        ch.step("data");
        //! [data]
        attn::GPTConfig GPT_CONFIG_124M = attn::GPT_CONFIG_124M;
        GPT_CONFIG_124M.context_length = 256;  // shortened context length (orig: 1024)
        GPT_CONFIG_124M.backend = ch.backend();
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();  // tiktoken.get_encoding("gpt2")
        const std::string text_data = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
        const std::size_t total_characters = attn::utf8_len(text_data);
        const double train_ratio = 0.90;
        const auto split_idx = static_cast<std::size_t>(train_ratio * static_cast<double>(total_characters));
        attn::manual_seed(ch.seed(123));
        const attn::data::DataLoader train_loader = attn::data::create_dataloader_v1(
            attn::utf8_slice(text_data, 0, split_idx), tokenizer,
            {.batch_size = 2, .max_length = GPT_CONFIG_124M.context_length, .stride = GPT_CONFIG_124M.context_length,
             .shuffle = true, .drop_last = true});
        const attn::data::DataLoader val_loader = attn::data::create_dataloader_v1(
            attn::utf8_slice(text_data, split_idx, total_characters), tokenizer,
            {.batch_size = 2, .max_length = GPT_CONFIG_124M.context_length, .stride = GPT_CONFIG_124M.context_length,
             .shuffle = false, .drop_last = false});
        //! [data]
        ch.show("len(train_loader), len(val_loader): batches of 2 x 256 tokens",
                std::to_string(train_loader.size()) + " " + std::to_string(val_loader.size()));

        ch.step("warmup");
        //! [warmup]
        const std::size_t n_epochs = 15;
        const double initial_lr = 0.0001;
        const double peak_lr = 0.01;
        const auto total_steps = static_cast<std::int64_t>(train_loader.size() * n_epochs);
        const auto warmup_steps = static_cast<std::int64_t>(0.2 * static_cast<double>(total_steps));  // 20% warmup
        const attn::LrSchedule warmup{.peak_lr = peak_lr, .warmup_steps = warmup_steps, .total_training_steps = total_steps,
                                      .initial_lr = initial_lr, .cosine_decay = false};
        std::vector<double> track_lrs;
        std::int64_t global_step = -1;
        for (std::size_t epoch = 0; epoch < n_epochs; ++epoch)
            for ([[maybe_unused]] const auto& batch : train_loader) {  // each pass draws its order, as his
                global_step += 1;
                track_lrs.push_back(warmup.lr(global_step));  // param_group["lr"] = lr
                // calculate loss and update weights ...
            }
        //! [warmup]
        ch.book("rchD-In05", "warmup_steps = int(0.2 * total_steps)", std::to_string(warmup_steps));
        ch.show("track_lrs of his In [6]: the first steps, the last of the warmup, and the rest at peak_lr",
                chD::lr_lines(track_lrs, {0, 1, 2, 26, 27, 134}), {chD::lr_record("track_lrs", track_lrs)});

        ch.step("cosine");
        //! [cosine]
        const double min_lr = 0.1 * initial_lr;
        const attn::LrSchedule cosine{.peak_lr = peak_lr, .warmup_steps = warmup_steps, .total_training_steps = total_steps,
                                      .initial_lr = initial_lr, .min_lr = min_lr};
        track_lrs.clear();
        global_step = -1;
        std::optional<attn::data::Batch> last_batch;  // his input_batch, target_batch after the loop
        for (std::size_t epoch = 0; epoch < n_epochs; ++epoch)
            for (const auto& batch : train_loader) {
                global_step += 1;
                track_lrs.push_back(cosine.lr(global_step));
                last_batch = batch;
            }
        //! [cosine]
        ch.show("track_lrs of his In [8]: the warmup, then half a cosine from peak_lr down to min_lr",
                chD::lr_lines(track_lrs, {0, 26, 27, 28, 81, 134}) + "\nmin_lr: " + attn::repr_float(min_lr),
                {chD::lr_record("track_lrs", track_lrs)});

        ch.step("clipping");
        //! [clipping]
        chD::OneGradient G{attn::zeros({2, 2}), attn::tensor({{1.0f, 2.0f}, {2.0f, 4.0f}})};
        const attn::Tensor G_norm = attn::nn::utils::clip_grad_norm_(G.parameters(), 1.0);  // max_norm=1
        //! [clipping]
        ch.show("his G = [[1, 2], [2, 4]] clipped to max_norm 1: the norm it had, and G' = G / 5 (up to float rounding)",
                "total norm: " + attn::repr(G_norm) + "\nG': " + attn::repr(*G.grad));
        //! [clipping.2]
        const attn::LongTensor& input_batch = last_batch->input_ids;
        const attn::LongTensor& target_batch = last_batch->target_ids;
        attn::manual_seed(ch.seed(123));
        attn::GPTModel model(GPT_CONFIG_124M);  // training mode, as his model.to(device): dropout draws
        attn::TrainStepState saved;
        const attn::Tensor loss = attn::forward_backward(model, input_batch, target_batch, saved);  // loss.backward()
        const std::optional<attn::Tensor> highest = attn::find_highest_gradient(model);
        const attn::Tensor total_norm = attn::nn::utils::clip_grad_norm_(model.named_parameters(), 1.0);
        const std::optional<attn::Tensor> highest_clipped = attn::find_highest_gradient(model);
        //! [clipping.2]
        ch.show("calc_loss_batch of the last batch of his In [8] loop, and the total norm clip_grad_norm_ returned",
                "loss: " + attn::repr(loss) + "\ntotal norm: " + attn::repr(total_norm));
        ch.book("rchD-In11", "print(find_highest_gradient(model))", attn::repr(*highest));
        ch.book("rchD-In12", "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0); find_highest_gradient(model)",
                attn::repr(*highest_clipped));

        ch.step("training");
        if (ch.quick()) {
            ch.left_out("His In [14]: train_model's whole run (135 steps, 27 evaluations, 15 samples) and what "
                        "In [15] and In [16] plot from it.");
            return;
        }
        //! [training]
        attn::manual_seed(ch.seed(123));
        attn::GPTModel trained(GPT_CONFIG_124M);
        const double train_peak_lr = 0.001;  // his peak_lr
        attn::optim::AdamW optimizer(trained.named_parameters(), {.lr = train_peak_lr, .weight_decay = 0.1});
        const attn::TrainModelOptions options{.n_epochs = 15, .eval_freq = 5, .eval_iter = 1,
                                              .start_context = "Every effort moves you", .warmup_steps = warmup_steps,
                                              .initial_lr = 1e-5, .min_lr = 1e-5};
        std::ostringstream printed;
        std::vector<std::pair<std::int64_t, float>> norms;  // the total norm of every step that clipped
        const auto line = ch26::progress(options.n_epochs * train_loader.size());
        const attn::TrainModelHistory history = attn::train_model(
            trained, train_loader, val_loader, optimizer, options, tokenizer, printed, [&](const attn::TrainProgress& p) {
                line(p);
                if (p.grad_norm) norms.emplace_back(p.global_step, *p.grad_norm);
            });
        //! [training]
        ch.book("rchD-In14", "train_model(..., AdamW(lr=0.001, weight_decay=0.1), n_epochs=15, eval_freq=5, eval_iter=1, "
                "warmup_steps=27, initial_lr=1e-5, min_lr=1e-5)",
                ch26::without_last_newline(printed.str()), chD::history_tensors(history, options.n_epochs, norms));
        ch.show("his printed run beside this one: the losses of each evaluation, and the samples",
                ch26::beside(ch.data().at("rchD-In14").text, printed.str(), {"his", "ours"}));
        ch.show("the learning rates the run stepped with (steps 0, 26, 27, 134), and the total norm of the steps "
                "clipped first and last",
                chD::lr_lines(history.track_lrs, {0, 26, 27, 134}) + "\nclipped: " + std::to_string(norms.size()) +
                    " steps, from step " + std::to_string(norms.front().first) + " (total norm " +
                    attn::repr_float(norms.front().second) + ") to step " + std::to_string(norms.back().first) +
                    " (total norm " + attn::repr_float(norms.back().second) + ")");
    });
}
