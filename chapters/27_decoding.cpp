// Chapter 27: choosing the next token, keeping the weights, OpenAI's GPT-2 — Raschka's chapter 5
// §5.3-5.5 (In [29]-[56]), his safetensors notebook and his exercises 5.1-5.4; then what the
// trained model's heads attend to. Prose: docs/chapters/27_decoding.md.
#include "27_decoding.hpp"  // the library's headers this chapter calls, and its helpers

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "27_decoding", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        ch.step("toy");
        //! [toy]
        const std::vector<std::string> inverse_vocab = {"closer", "every", "effort", "forward", "inches",
                                                        "moves",  "pizza", "toward", "you"};
        // Suppose input is "every effort moves you", and the LLM returns these logits for the next token:
        const attn::Tensor next_token_logits = attn::tensor({4.51f, 0.89f, -1.90f, 6.75f, 1.63f, -1.62f, -1.89f, 6.28f, 1.79f});
        const attn::Tensor probas = attn::softmax(next_token_logits, 0);
        const std::int64_t next_token_id = attn::argmax(probas, 0)();
        attn::manual_seed(ch.seed(123));
        const std::int64_t sampled_id = attn::multinomial(probas, 1)(0);
        //! [toy]
        ch.book("rch05-In30", "inverse_vocab[torch.argmax(probas).item()]", inverse_vocab[next_token_id]);
        ch.book("rch05-In31", "inverse_vocab[torch.multinomial(probas, num_samples=1).item()]", inverse_vocab[sampled_id]);

        ch.step("temperature");
        //! [temperature]
        const auto softmax_with_temperature = [](const attn::Tensor& logits, float temperature) {
            const attn::Tensor scaled_logits = logits / temperature;
            return attn::softmax(scaled_logits, 0);
        };
        const std::vector<float> temperatures = {1.0f, 0.1f, 5.0f};  // original, higher and lower confidence
        std::vector<attn::Tensor> scaled_probas;
        for (const float T : temperatures) scaled_probas.push_back(softmax_with_temperature(next_token_logits, T));
        const auto print_sampled_tokens = [&](const attn::Tensor& p, std::size_t minlength) {
            attn::manual_seed(ch.seed(123));  // manual seed for reproducibility
            std::vector<std::int64_t> sample;
            for (int i = 0; i < 1'000; ++i) sample.push_back(attn::multinomial(p, 1)(0));
            return ch27::bincount_lines(sample, minlength, inverse_vocab);  // "73 x closer", ...
        };
        //! [temperature]
        ch.book("rch05-In32", "print_sampled_tokens(probas): 1000 draws", print_sampled_tokens(probas, 9));
        ch.book("rch05-In35", "print_sampled_tokens(scaled_probas[1]): temperature 0.1", print_sampled_tokens(scaled_probas[1], 9));
        ch.book("rch05-In36", "print_sampled_tokens(scaled_probas[2]): temperature 5", print_sampled_tokens(scaled_probas[2], 9),
                ch27::probas_tensors(scaled_probas));
        std::string by_temperature;  // his exercise 5.1: bincount without minlength
        for (std::size_t i = 0; i < temperatures.size(); ++i)
            by_temperature += std::string(i ? "\n\n\n" : "") + "Temperature: " + ch27::python_number(temperatures[i]) + "\n" +
                              print_sampled_tokens(scaled_probas[i], 0);
        ch.book("rch05x-In03", "exercise 5.1: the counts at each temperature", by_temperature);
        ch.book("rch05x-In04", "scaled_probas[2][6]: the probability of \"pizza\" at temperature 5",
                attn::repr(attn::scalar_tensor(scaled_probas[2](6))));

        ch.step("top-k");
        //! [top-k]
        const std::size_t top_k = 3;
        const auto [top_logits, top_pos] = attn::topk(next_token_logits, top_k);
        const attn::Tensor new_logits = attn::masked_fill(next_token_logits, next_token_logits < top_logits(top_k - 1),
                                                          -std::numeric_limits<float>::infinity());
        const attn::Tensor topk_probas = attn::softmax(new_logits, 0);
        //! [top-k]
        ch.book("rch05-In37", "torch.topk(next_token_logits, 3)",
                "Top logits: " + attn::repr(top_logits) + "\nTop positions: " + attn::repr(top_pos));
        ch.book("rch05-In38", "torch.where(next_token_logits < top_logits[-1], -inf, next_token_logits)", attn::repr(new_logits));
        ch.book("rch05-In39", "torch.softmax(new_logits, dim=0)", attn::repr(topk_probas));

        ch.step("keep");
        //! [keep]
        attn::manual_seed(ch.seed(123));
        attn::GPTModel small(ch27::small_config());
        const std::filesystem::path file = std::filesystem::temp_directory_path() / "small.safetensors";
        attn::io::save_safetensors(file, attn::nn::state_dict(small));  // torch.save(model.state_dict(), file)
        attn::GPTModel loaded(ch27::small_config());  // another model, drawn from the generator's next numbers
        attn::nn::load_state_dict(loaded, attn::io::load_safetensors(file).tensors);
        small.eval(), loaded.eval();
        //! [keep]
        ch.show("a model saved and loaded into another one: its tensors and its logits", ch27::same_models(small, loaded));

        ch.step("openai");
        //! [openai]
        const attn::GPTConfig gpt2_small = attn::gpt2_config("gpt2-small (124M)");
        const std::filesystem::path hf = textbook::data_dir() / "oracle" / "gpt2_hf";  // Hugging Face's layout, random weights
        attn::GPTModel gpt(attn::gpt2_config_from_json(hf / "config.json"));
        attn::load_weights_into_gpt(gpt, attn::io::load_safetensors(hf / "model.safetensors").tensors);
        gpt.eval();
        attn::manual_seed(ch.seed(123));
        const attn::LongTensor hf_ids = attn::generate(gpt, ch27::oracle_prompt(hf), 5, gpt.context_length(), 1.5, 5);
        //! [openai]
        ch.book("rch05-In50", "GPT-2 small's settings (his hparams.json; the library's gpt2_config)", ch27::settings(gpt2_small));
        ch.show("the four sizes of GPT-2 (his model_configs): parameters, and bytes of float32", ch27::sizes_table());
        ch.show("a file in Hugging Face's GPT-2 layout (random weights) through load_weights_into_gpt, beside PyTorch "
                "on the same file: logits, and generate after manual_seed(123) with top_k=5, temperature=1.5",
                ch27::beside_oracle(hf, gpt, hf_ids));
        for (const char* id : {"rch05-In47", "rch05-In49", "rch05-In51", "rch05-In52", "rch05-In56", "rch05hf-In02", "rch05hf-In09",
                               "rch05x-In01", "rch05x-In14", "rch05x-In18", "rch05x-In19", "rch05x-In21", "rch05x-In23"})
            ch.book(id, ch27::needs_weights_label(id), ch27::needs_weights_text(id));

        ch.step("trained");
        if (ch.quick()) {
            ch.left_out("The trained model's texts (his In [29] and In [41], exercises 5.3 and 5.4) and its heads: they "
                        "need chapter 26's whole training run (about 10 minutes), or its saved weights.");
            return;
        }
        //! [trained]
        attn::GPTConfig GPT_CONFIG_124M = attn::GPT_CONFIG_124M;
        GPT_CONFIG_124M.context_length = 256;
        GPT_CONFIG_124M.backend = ch.backend();
        ch27::ensure_trained(GPT_CONFIG_124M, ch);  // chapter 26's gpt2_the_verdict.safetensors, trained if absent
        attn::GPTModel model(GPT_CONFIG_124M);
        attn::nn::load_state_dict(model, attn::io::load_safetensors("gpt2_the_verdict.safetensors").tensors);
        model.eval();
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();
        const attn::LongTensor prompt = attn::text_to_token_ids("Every effort moves you", tokenizer);
        const attn::LongTensor greedy = attn::generate_text_simple(model, prompt, 25, GPT_CONFIG_124M.context_length);
        const attn::LongTensor deterministic = attn::generate(model, prompt, 25, GPT_CONFIG_124M.context_length, 0.0, std::nullopt);
        attn::manual_seed(ch.seed(123));
        const attn::LongTensor sampled = attn::generate(model, prompt, 15, GPT_CONFIG_124M.context_length, 1.4, 25);
        //! [trained]
        const auto text = [&](const attn::LongTensor& ids) { return "Output text:\n " + attn::token_ids_to_text(ids, tokenizer); };
        ch.book("rch05-In29,rch05x-In07", "generate_text_simple(model, ..., max_new_tokens=25)", text(greedy));
        ch.book("rch05x-In08,rch05x-In09", "generate(..., top_k=None, temperature=0.0): the same tokens", text(deterministic));
        ch.book("rch05-In41", "torch.manual_seed(123); generate(..., max_new_tokens=15, top_k=25, temperature=1.4)", text(sampled));

        ch.step("continue");
        //! [continue]
        attn::GPTModel resumed(GPT_CONFIG_124M);
        attn::nn::load_state_dict(resumed, attn::io::load_safetensors("gpt2_the_verdict.safetensors").tensors);
        attn::optim::AdamW optimizer(resumed.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
        const attn::io::SafetensorsFile adamw = attn::io::load_safetensors("gpt2_the_verdict_adamw.safetensors");
        attn::optim::load_state_dict(optimizer, adamw.tensors, adamw.metadata);
        attn::manual_seed(ch.seed(123));
        const auto [train_loader, val_loader] = ch27::verdict_loaders(tokenizer, GPT_CONFIG_124M.context_length);
        std::ostringstream printed;
        attn::train_model_simple(resumed, train_loader, val_loader, optimizer,
                                 {.num_epochs = 1, .eval_freq = 5, .eval_iter = 5, .start_context = "Every effort moves you"},
                                 tokenizer, printed, ch26::progress(train_loader.size()));  // a line on a terminal
        //! [continue]
        ch.book("rch05x-In12", "exercise 5.4: train_model_simple for one more epoch", ch27::without_last_newline(printed.str()));

        ch.step("heads");
        //! [heads]
        const attn::LongTensor story = attn::text_to_token_ids(ch27::story_opening(), tokenizer);
        const std::vector<attn::Tensor> weights = ch27::attention_weights(model, story);  // per block: [1, H, T, T]
        attn::manual_seed(ch.seed(123));
        attn::GPTModel untrained(GPT_CONFIG_124M);
        untrained.eval();
        const std::vector<attn::Tensor> untrained_weights = ch27::attention_weights(untrained, story);
        //! [heads]
        ch.show("what each head attends to", ch27::head_table(weights, untrained_weights, story), ch27::weights_tensors(weights, 16));
    });
}
