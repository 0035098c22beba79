// Chapter 26: attention learns real text — Raschka's chapter 5 pretraining (§5.1-5.2, In [1]-[28]):
// the loss of the untrained model, the data, his train_model_simple. Prose: docs/chapters/26_pretraining.md.
#include "26_pretraining.hpp"  // the library's headers this chapter calls, and its helpers

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "26_pretraining", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        ch.book("rch05-In01", "the versions: no torch here; the library reproduces torch 1.13's CPU arithmetic",
                "attn (C++), in place of torch 1.13.1");
        ch.step("untrained");
        //! [untrained]
        attn::GPTConfig GPT_CONFIG_124M = attn::GPT_CONFIG_124M;
        GPT_CONFIG_124M.context_length = 256;  // shortened context length (orig: 1024)
        GPT_CONFIG_124M.backend = ch.backend();
        attn::manual_seed(ch.seed(123));
        attn::GPTModel model(GPT_CONFIG_124M);
        model.eval();  // disable dropout during inference
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();  // tiktoken.get_encoding("gpt2")
        const std::string start_context = "Every effort moves you";
        const attn::LongTensor token_ids = attn::generate_text_simple(
            model, attn::text_to_token_ids(start_context, tokenizer), 10, GPT_CONFIG_124M.context_length);
        //! [untrained]
        ch.book("rch05-In03", "token_ids_to_text(generate_text_simple(...)) of the untrained model",
                "Output text:\n " + attn::token_ids_to_text(token_ids, tokenizer));

        ch.step("probas");
        //! [probas]
        const attn::LongTensor inputs = textbook::ids_tensor({{16833, 3626, 6100},    // ["every effort moves",
                                                              {40, 1107, 588}});      //  "I really like"]
        const attn::LongTensor targets = textbook::ids_tensor({{3626, 6100, 345},     // [" effort moves you",
                                                               {1107, 588, 11311}});  //  " really like chocolate"]
        const attn::Tensor logits = model(inputs);  // evaluation mode: no dropout, nothing drawn
        const attn::Tensor probas = attn::softmax(logits, -1);
        attn::LongTensor argmax_ids = attn::argmax(probas, -1);
        argmax_ids.reshape({2, 3, 1});  // torch.argmax(probas, dim=-1, keepdim=True)
        //! [probas]
        ch26::show_probas(ch, probas, argmax_ids, targets, tokenizer);  // his In [5]-[7]

        ch.step("cross-entropy");
        //! [cross-entropy]
        const attn::Tensor target_probas_1 = ch26::target_probas(probas, 0, targets);  // probas[0, [0, 1, 2], targets[0]]
        const attn::Tensor target_probas_2 = ch26::target_probas(probas, 1, targets);
        const attn::Tensor log_probas = attn::log(attn::cat({target_probas_1, target_probas_2}, 0));
        const attn::Tensor avg_log_probas = attn::mean(log_probas);
        const attn::Tensor neg_avg_log_probas = avg_log_probas * -1.0f;
        attn::Tensor logits_flat = logits;
        logits_flat.reshape({6, 50257});  // logits.flatten(0, 1)
        attn::LongTensor targets_flat = targets;
        targets_flat.reshape({6});  // targets.flatten()
        const attn::Tensor loss = attn::cross_entropy(logits_flat, targets_flat);
        const attn::Tensor perplexity = attn::exp(loss);
        //! [cross-entropy]
        ch.book("rch05-In08", "the target tokens' probabilities",
                "Text 1: " + attn::repr(target_probas_1) + "\nText 2: " + attn::repr(target_probas_2));
        ch.book("rch05-In09", "torch.log(torch.cat((target_probas_1, target_probas_2)))", attn::repr(log_probas));
        ch.book("rch05-In10", "torch.mean(log_probas)", attn::repr(avg_log_probas));
        ch.book("rch05-In11", "avg_log_probas * -1", attn::repr(neg_avg_log_probas));
        ch.book("rch05-In12", "logits.shape, targets.shape",
                "Logits shape: " + attn::repr(attn::shape_of(logits)) + "\nTargets shape: " + attn::repr(attn::shape_of(targets)));
        ch.book("rch05-In13", "the flattened shapes",
                "Flattened logits: " + attn::repr(attn::shape_of(logits_flat)) +
                    "\nFlattened targets: " + attn::repr(attn::shape_of(targets_flat)));
        ch.book("rch05-In14", "torch.nn.functional.cross_entropy(logits_flat, targets_flat)", attn::repr(loss));
        ch.book("rch05-In15", "torch.exp(loss)", attn::repr(perplexity));

        ch.step("data");
        //! [data]
        const std::string text_data = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
        const std::size_t total_characters = attn::utf8_len(text_data);
        const std::size_t total_tokens = tokenizer.encode(text_data).size();
        const double train_ratio = 0.90;
        const auto split_idx = static_cast<std::size_t>(train_ratio * static_cast<double>(total_characters));
        const std::string_view train_data = attn::utf8_slice(text_data, 0, split_idx);
        const std::string_view val_data = attn::utf8_slice(text_data, split_idx, total_characters);
        attn::manual_seed(ch.seed(123));
        const attn::data::DataLoader train_loader = attn::data::create_dataloader_v1(
            train_data, tokenizer, {.batch_size = 2, .max_length = GPT_CONFIG_124M.context_length,
                                    .stride = GPT_CONFIG_124M.context_length, .shuffle = true, .drop_last = true});
        const attn::data::DataLoader val_loader = attn::data::create_dataloader_v1(
            val_data, tokenizer, {.batch_size = 2, .max_length = GPT_CONFIG_124M.context_length,
                                  .stride = GPT_CONFIG_124M.context_length, .shuffle = false, .drop_last = false});
        //! [data]
        ch26::show_data(ch, text_data, total_tokens, train_loader, val_loader);  // his In [17]-[23]

        ch.step("loader-loss");
        if (ch.quick()) {
            ch.left_out("His In [25] (the untrained model's mean loss over both loaders: 10 forwards of 2 x 256 tokens) "
                        "and In [27] (his whole training run: 90 steps, 18 evaluations, 10 samples).");
            return;
        }
        //! [loader-loss]
        attn::manual_seed(ch.seed(123));  // for reproducibility due to the shuffling in the data loader
        const double train_loss = attn::calc_loss_loader(train_loader, model);
        const double val_loss = attn::calc_loss_loader(val_loader, model);
        //! [loader-loss]
        ch.book("rch05-In25", "calc_loss_loader of both loaders, untrained",
                "Training loss: " + attn::repr_float(train_loss) + "\nValidation loss: " + attn::repr_float(val_loss));

        ch.step("training");
        //! [training]
        attn::manual_seed(ch.seed(123));
        attn::GPTModel trained(GPT_CONFIG_124M);
        const attn::optim::AdamWOptions adamw_options{.lr = 0.0004, .weight_decay = 0.1};
        attn::optim::AdamW optimizer(trained.named_parameters(), adamw_options);
        const attn::TrainOptions options{.num_epochs = 10, .eval_freq = 5, .eval_iter = 5,
                                         .start_context = "Every effort moves you"};
        std::ostringstream printed;
        std::vector<float> step_losses;  // each step's loss, for the rounding step
        const attn::TrainHistory history = attn::train_model_simple(trained, train_loader, val_loader, optimizer, options,
                                                                    tokenizer, printed, ch26::progress(options, train_loader, &step_losses));
        //! [training]
        ch.book("rch05-In27", "train_model_simple(..., AdamW(lr=0.0004, weight_decay=0.1), num_epochs=10, eval_freq=5, eval_iter=5)",
                ch26::without_last_newline(printed.str()), ch26::history_tensors(history, options.num_epochs));
        ch.show("his printed run beside this one: the losses of each evaluation, and the samples",
                ch26::beside(ch.data().at("rch05-In27").text, printed.str(), {"his", "ours"}));

        ch.step("keep");
        //! [keep]
        const attn::TensorDict weights = attn::nn::state_dict(trained);  // model.state_dict()
        attn::io::save_safetensors("gpt2_the_verdict.safetensors", weights);
        const attn::optim::AdamWStateDict adamw = attn::optim::state_dict(optimizer);
        attn::io::save_safetensors("gpt2_the_verdict_adamw.safetensors", adamw.state, adamw.param_groups);
        //! [keep]
        ch.show("the trained model and its optimizer's state, kept in the working directory",
                ch26::file_lines({{"gpt2_the_verdict.safetensors", weights.size()},
                                  {"gpt2_the_verdict_adamw.safetensors", adamw.state.size()}}));

        ch.step("rounding");
        //! [rounding]
        std::ostringstream fused_printed;  // the same run again, but for the rounding of the products:
        std::vector<float> fused_step_losses;  // each term by a fused multiply-add
        const attn::TrainHistory fused_history =
            ch26::train_again(ch.seed(123), GPT_CONFIG_124M, adamw_options, options, train_loader, val_loader, tokenizer,
                              fused_printed, &fused_step_losses, attn::Arithmetic::fma);
        //! [rounding]
        ch.show("the same run with every product's terms added by fused multiply-adds, beside this run",
                ch26::beside(printed.str(), fused_printed.str(), {"exact", "fma"}) + "\n" +
                    ch26::drift(step_losses, fused_step_losses, history, fused_history));

        ch.step("mkl");
        //! [mkl]
        attn::GPTConfig mkl_config = GPT_CONFIG_124M;
        mkl_config.backend = attn::nn::BernoulliBackend::mkl;  // PyTorch's x86 wheels (appendix A)
        attn::TrainOptions first_step = options;
        first_step.max_steps = 1;  // his first step and its evaluation
        std::ostringstream mkl_printed;
        ch26::train_again(ch.seed(123), mkl_config, adamw_options, first_step, train_loader, val_loader, tokenizer, mkl_printed);
        //! [mkl]
        ch.show("[MKL backend] his first training step and evaluation", ch26::without_last_newline(mkl_printed.str()));
    });
}
