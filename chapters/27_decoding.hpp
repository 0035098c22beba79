// Chapter 27's helpers: his print_sampled_tokens' lines, the small model and the Hugging Face
// file the chapter loads, the blocks that need OpenAI's real weights, chapter 26's trained model
// (loaded, or trained when absent), and the attention weights of every head with the measures
// of what they attend to. Compiled with the chapter, in the chapters' unity file
// (chapters/meson.build): everything here is in namespace ch27.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "26_pretraining.hpp"  // ch26::progress, ch26::without_last_newline and the library's headers
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/ulp.hpp"
#include "attn/model/gpt2_weights.hpp"
#include "attn/core/sampling.hpp"
#include "attn/model/decoding.hpp"
#include "textbook/book.hpp"

namespace ch27 {

using ch26::without_last_newline;

/// His `torch.bincount(torch.tensor(sample), minlength=minlength)` printed as `f"{freq} x
/// {inverse_vocab[i]}"`, one line per id from 0 to the largest drawn (at least `minlength`).
inline std::string bincount_lines(const std::vector<std::int64_t>& sample, std::size_t minlength,
                                  const std::vector<std::string>& inverse_vocab) {
    std::size_t n = minlength;
    for (const std::int64_t id : sample) n = std::max(n, static_cast<std::size_t>(id) + 1);
    std::vector<std::size_t> freq(n, 0);
    for (const std::int64_t id : sample) ++freq[static_cast<std::size_t>(id)];
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += (i ? "\n" : "") + std::to_string(freq[i]) + " x " + inverse_vocab[i];
    return out;
}

/// The three temperatures' probabilities, for the figure (his In [34] bar plot).
inline std::vector<textbook::TensorRecord> probas_tensors(const std::vector<attn::Tensor>& scaled_probas) {
    return {{"temperature_1", scaled_probas[0]}, {"temperature_0.1", scaled_probas[1]}, {"temperature_5", scaled_probas[2]}};
}

/// A GPT small enough to save and load in a moment: 1,000 tokens, context 32, 64 wide, 4 heads, 2 blocks.
inline attn::GPTConfig small_config() {
    attn::GPTConfig cfg = attn::GPT_CONFIG_124M;
    cfg.vocab_size = 1000, cfg.context_length = 32, cfg.emb_dim = 64, cfg.n_heads = 4, cfg.n_layers = 2;
    return cfg;
}

/// How many of two models' `state_dict` tensors are equal bit for bit, and the largest
/// difference of their logits for a fixed batch of ids (both in evaluation mode).
inline std::string same_models(attn::GPTModel& a, attn::GPTModel& b) {
    const attn::TensorDict sa = attn::nn::state_dict(a), sb = attn::nn::state_dict(b);
    std::size_t equal = 0;
    for (const auto& [name, t] : sa)
        equal += std::equal(t.begin(), t.end(), sb.at(name).begin(), [](float x, float y) {
            return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
        });
    const attn::LongTensor ids = textbook::ids_tensor({{1, 2, 3, 4, 5, 6, 7, 8}});
    return std::to_string(equal) + " of " + std::to_string(sa.size()) + " tensors equal bit for bit\n" +
           "max |logits - logits of the loaded model|: " + attn::repr_float(attn::max_abs_diff(a(ids), b(ids)));
}

/// His `print("Settings:", settings)` of hparams.json, from a configuration.
inline std::string settings(const attn::GPTConfig& c) {
    return "Settings: {'n_vocab': " + std::to_string(c.vocab_size) + ", 'n_ctx': " + std::to_string(c.context_length) +
           ", 'n_embd': " + std::to_string(c.emb_dim) + ", 'n_head': " + std::to_string(c.n_heads) +
           ", 'n_layer': " + std::to_string(c.n_layers) + "}";
}

/// `n` with its thousands separated by commas: `124,439,808`.
inline std::string grouped(std::size_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) out += (i && (digits.size() - i) % 3 == 0 ? "," : "") + digits.substr(i, 1);
    return out;
}

/// The four GPT-2 sizes: their settings, parameters (the output head tied to `wte`, as OpenAI's
/// files hold them) and float32 bytes.
inline std::string sizes_table() {
    std::vector<textbook::Row> rows{{"model", "emb_dim", "n_layers", "n_heads", "parameters", "float32"}};
    for (const char* name : {"gpt2-small (124M)", "gpt2-medium (355M)", "gpt2-large (774M)", "gpt2-xl (1558M)"}) {
        const attn::GPTConfig c = attn::gpt2_config(name);
        const std::size_t E = c.emb_dim, L = c.n_layers;
        const std::size_t params = c.vocab_size * E + c.context_length * E + L * (12 * E * E + 13 * E) + 2 * E;
        rows.push_back({name, std::to_string(E), std::to_string(L), std::to_string(c.n_heads),
                        grouped(params), textbook::gb_text(4 * params)});
    }
    return textbook::table(rows);
}

/// The oracle's record of the Hugging Face files: data/oracle/gpt2_hf/gpt2_hf.json
/// (tools/oracle/gpt2_hf_files.py, Debian's PyTorch 1.13 running his loader and his generate).
inline nlohmann::json hf_record(const std::filesystem::path& dir) {
    return nlohmann::json::parse(textbook::read_data_file(dir / "gpt2_hf.json"));
}

/// The prompt the oracle generated from, `[1, T]`.
inline attn::LongTensor oracle_prompt(const std::filesystem::path& dir) {
    return textbook::ids_tensor({hf_record(dir).at("generate").at("prompt").get<std::vector<std::int64_t>>()});
}

/// The library's logits for the oracle's batch of ids beside PyTorch's, and its generated ids
/// beside PyTorch's (after the same seed, on the same file).
inline std::string beside_oracle(const std::filesystem::path& dir, const attn::GPTModel& gpt, const attn::LongTensor& ids) {
    const nlohmann::json o = hf_record(dir);
    const auto& f = o.at("files").at("model.safetensors");
    const auto rows = o.at("ids").get<std::vector<std::vector<std::int64_t>>>();
    const attn::Tensor logits = gpt(textbook::ids_tensor(rows));
    const auto bits = [&](const char* key) {
        attn::Tensor t = attn::Tensor::from_shape(attn::shape_of(logits));
        const auto b = f.at(key).get<std::vector<std::uint32_t>>();
        if (b.size() != t.size()) throw std::runtime_error("gpt2_hf.json: " + std::string(key) + " does not fit the logits");
        std::transform(b.begin(), b.end(), t.begin(), [](std::uint32_t u) { return std::bit_cast<float>(u); });
        return t;
    };
    const std::vector<std::int64_t> ours = textbook::row_ids(ids, 0);
    const auto theirs = o.at("generate").at("ids").get<std::vector<std::int64_t>>();
    return "logits " + attn::repr(attn::shape_of(logits)) + " of the oracle's ids beside PyTorch's:\n" +
           "  the same weights held contiguously: " + std::to_string(attn::max_ulp_distance(logits, bits("logits_bits"))) +
           " ulp apart at most\n  his model as his loader leaves it (transposed views: the bias added first): " +
           "max |difference| " + attn::repr_float(attn::max_abs_diff(logits, bits("logits_bits_his_views"))) + "\n" +
           "generated ids, library: " + attn::repr(ids) + "\ngenerated ids, PyTorch: " +
           attn::repr(textbook::ids_tensor({theirs})) + (ours == theirs ? " (identical)" : " (DIFFERENT)");
}

/// What a block that needs OpenAI's real files shows in their place.
inline std::string needs_weights_label(const std::string& id) {
    static const std::map<std::string, std::string> labels = {
        {"rch05-In47", "the versions of TensorFlow and tqdm"},
        {"rch05-In49", "download_and_load_gpt2(model_size=\"124M\")"},
        {"rch05-In51", "params.keys()"},
        {"rch05-In52", "params[\"wte\"]"},
        {"rch05-In56", "generate with OpenAI's GPT-2 small: top_k=50, temperature=1.5"},
        {"rch05hf-In02", "the versions of numpy, torch and safetensors"},
        {"rch05hf-In09", "generate with GPT-2 small from Hugging Face's model.safetensors: top_k=1"},
        {"rch05x-In01", "the versions his solutions ran with"},
        {"rch05x-In14", "exercise 5.5: download_and_load_gpt2(model_size=\"124M\")"},
        {"rch05x-In18", "exercise 5.5: calc_loss_loader of GPT-2 small on both loaders"},
        {"rch05x-In19", "exercise 5.5: the same with GPT-2 XL"},
        {"rch05x-In21", "exercise 5.6: download_and_load_gpt2(model_size=\"1558M\")"},
        {"rch05x-In23", "exercise 5.6: generate with GPT-2 XL"}};
    return labels.at(id);
}

/// The text in its place: what the library reads instead, and how a reader gets the real file
/// and runs the cell's generation with the `generate` program.
inline std::string needs_weights_text(const std::string& id) {
    if (id == "rch05-In47") return "no TensorFlow here: the library reads safetensors files";
    if (id == "rch05hf-In02" || id == "rch05x-In01") return "attn (C++): safetensors read by lib/attn/io, no Python";
    const bool xl = id == "rch05x-In19" || id == "rch05x-In21" || id == "rch05x-In23";
    const std::string repo = xl ? "gpt2-xl" : "gpt2";
    const std::string get = std::string("needs OpenAI's weights") + (xl ? " (GPT-2 XL)" : " (498 MB)") +
                            ", which this run does not download. Hugging Face keeps them as\n  https://huggingface.co/"
                            "openai-community/" + repo + "/resolve/main/model.safetensors (and config.json)";
    const std::string run = "\nwith which this cell is\n  build/chapters/generate --weights model.safetensors --config config.json \\\n    ";
    if (id == "rch05-In56" || id == "rch05x-In23")
        return get + run + "--prompt \"Every effort moves you\" --max-new-tokens 25 --top-k 50 --temperature 1.5 --seed 123";
    if (id == "rch05hf-In09")
        return get + run + "--prompt \"Every effort moves\" --max-new-tokens 30 --top-k 1 --temperature 1.0 --seed 123";
    if (id == "rch05x-In18" || id == "rch05x-In19")
        return get + "\n(his losses: calc_loss_loader of the loaded model on chapter 26's loaders)";
    return get + "\n(his gpt_download.py reads OpenAI's TensorFlow checkpoint instead; load_weights_into_gpt takes\n"
                 "Hugging Face's names for the same tensors)";
}

/// A number of his Python list as Python prints it: `1`, `0.1`, `5`.
inline std::string python_number(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

/// His exercise 5.4's loaders (In [11]): the story split 90/10, windows of `context_length`.
inline std::pair<attn::data::DataLoader, attn::data::DataLoader> verdict_loaders(const attn::GPT2Tokenizer& tokenizer,
                                                                                 std::size_t context_length) {
    const std::string text_data = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
    const std::size_t n = attn::utf8_len(text_data), split_idx = static_cast<std::size_t>(0.90 * static_cast<double>(n));
    return {attn::data::create_dataloader_v1(attn::utf8_slice(text_data, 0, split_idx), tokenizer,
                                             {.batch_size = 2, .max_length = context_length, .stride = context_length,
                                              .shuffle = true, .drop_last = true}),
            attn::data::create_dataloader_v1(attn::utf8_slice(text_data, split_idx, n), tokenizer,
                                             {.batch_size = 2, .max_length = context_length, .stride = context_length,
                                              .shuffle = false, .drop_last = false})};
}

/// Chapter 26's trained model and optimizer (gpt2_the_verdict*.safetensors in the working
/// directory): kept as they are when chapter 26 ran here before, else trained as chapter 26
/// trains them (seed 123, ten epochs, about ten minutes; a progress line on a terminal) and saved.
inline void ensure_trained(const attn::GPTConfig& cfg, textbook::Chapter& ch) {
    if (std::filesystem::exists("gpt2_the_verdict.safetensors") && std::filesystem::exists("gpt2_the_verdict_adamw.safetensors"))
        return;
    const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();
    const auto [train_loader, val_loader] = verdict_loaders(tokenizer, cfg.context_length);  // (made without a draw)
    attn::manual_seed(ch.seed(123));
    attn::GPTModel model(cfg);
    attn::optim::AdamW optimizer(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    const attn::TrainOptions options{.num_epochs = 10, .eval_freq = 5, .eval_iter = 5, .start_context = "Every effort moves you"};
    std::ostringstream printed;
    attn::train_model_simple(model, train_loader, val_loader, optimizer, options, tokenizer, printed,
                             ch26::progress(options, train_loader));
    attn::io::save_safetensors("gpt2_the_verdict.safetensors", attn::nn::state_dict(model));
    const attn::optim::AdamWStateDict adamw = attn::optim::state_dict(optimizer);
    attn::io::save_safetensors("gpt2_the_verdict_adamw.safetensors", adamw.state, adamw.param_groups);
}

/// The story's first 600 characters: the text whose attention the chapter measures.
inline std::string story_opening() {
    const std::string text = textbook::read_data_file(textbook::data_dir() / "text" / "the-verdict.txt");
    return std::string(attn::utf8_slice(text, 0, 600));
}

/// Every block's attention weights for `ids [1, T]`, in evaluation mode: `[1, H, T, T]` each,
/// `softmax(q k^T / sqrt(hd))` of the block's `att.forward_steps` on `norm1` of its input.
inline std::vector<attn::Tensor> attention_weights(const attn::GPTModel& model, const attn::LongTensor& ids) {
    const std::size_t T = ids.shape()[1];
    attn::Tensor x = model.tok_emb(ids) + model.pos_emb(attn::arange(static_cast<std::int64_t>(T)));
    std::vector<attn::Tensor> weights;
    for (std::size_t i = 0; i < model.trf_blocks.size(); ++i) {
        weights.push_back(model.trf_blocks[i].att.forward_steps(model.trf_blocks[i].norm1(x)).attn_weights);
        x = model.trf_blocks[i](x);
    }
    return weights;
}

/// The measures of a head, each a mean over the queries 1..T-1 (query 0 has one key).
constexpr std::size_t n_measures = 5;
/// Their names, as the table prints them.
inline const std::array<const char*, n_measures> measure_names = {
    "previous token", "first token", "after the earlier occurrence", "the token itself", "largest weight"};

/// Per head of `w [1, H, T, T]`, the mean over queries of five weights: on the previous token, on
/// the first token, on the token after the latest earlier occurrence of the query's own token (the
/// queries whose token occurred before, not just before: chapter 21's induction pattern), on the
/// query's own token, and the query's largest weight (how far from spread out the head is: a
/// uniform head's largest weight is 1/(i+1)). `[H][5]`.
inline std::vector<std::array<double, n_measures>> head_measures(const attn::Tensor& w, const std::vector<std::int64_t>& ids) {
    const std::size_t H = w.shape()[1], T = w.shape()[2];
    std::vector<std::array<double, n_measures>> out(H, std::array<double, n_measures>{});
    for (std::size_t h = 0; h < H; ++h) {
        std::size_t induction_queries = 0;
        for (std::size_t i = 1; i < T; ++i) {
            out[h][0] += w(0, h, i, i - 1), out[h][1] += w(0, h, i, 0), out[h][3] += w(0, h, i, i);
            float largest = 0;
            for (std::size_t j = 0; j <= i; ++j) largest = std::max(largest, static_cast<float>(w(0, h, i, j)));
            out[h][4] += largest;
            for (std::size_t j = i - 1; j-- > 0;)
                if (ids[j] == ids[i]) {
                    if (j + 1 < i) out[h][2] += w(0, h, i, j + 1), ++induction_queries;
                    break;
                }
        }
        for (const std::size_t m : {0, 1, 3, 4}) out[h][m] /= double(T - 1);
        out[h][2] = induction_queries ? out[h][2] / double(induction_queries) : 0.0;
    }
    return out;
}

/// For each measure, the three heads of the trained model that score highest, with the same
/// head's score in the untrained model; then the mean over all heads of both.
inline std::string head_table(const std::vector<attn::Tensor>& trained, const std::vector<attn::Tensor>& untrained,
                              const attn::LongTensor& story) {
    const std::vector<std::int64_t> ids = textbook::row_ids(story, 0);
    struct Head { std::size_t block, head; std::array<double, n_measures> trained, untrained; };
    std::vector<Head> heads;
    for (std::size_t b = 0; b < trained.size(); ++b) {
        const auto t = head_measures(trained[b], ids), u = head_measures(untrained[b], ids);
        for (std::size_t h = 0; h < t.size(); ++h) heads.push_back({b, h, t[h], u[h]});
    }
    std::vector<textbook::Row> rows{{"measure", "head", "trained", "untrained"}};
    for (std::size_t m = 0; m < n_measures; ++m) {
        std::vector<Head> sorted = heads;
        std::stable_sort(sorted.begin(), sorted.end(), [m](const Head& a, const Head& b) { return a.trained[m] > b.trained[m]; });
        for (std::size_t k = 0; k < 3; ++k)
            rows.push_back({k ? "" : measure_names[m], "block " + std::to_string(sorted[k].block) + " head " + std::to_string(sorted[k].head),
                            textbook::fixed(sorted[k].trained[m], 3), textbook::fixed(sorted[k].untrained[m], 3)});
        double mt = 0, mu = 0;
        for (const Head& h : heads) mt += h.trained[m], mu += h.untrained[m];
        rows.push_back({"", "mean of all " + std::to_string(heads.size()), textbook::fixed(mt / double(heads.size()), 3),
                        textbook::fixed(mu / double(heads.size()), 3)});
    }
    return std::to_string(ids.size()) + " tokens: the story's first 600 characters\n" + textbook::table(rows);
}

/// Every block's weights over the first `n` tokens, `[H, n, n]` each, for the figures.
inline std::vector<textbook::TensorRecord> weights_tensors(const std::vector<attn::Tensor>& weights, std::size_t n) {
    std::vector<textbook::TensorRecord> out;
    for (std::size_t b = 0; b < weights.size(); ++b) {
        const std::size_t H = weights[b].shape()[1], T = weights[b].shape()[2];
        attn::Tensor w = attn::Tensor::from_shape({H, n, n});
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < n && i < T; ++i)
                for (std::size_t j = 0; j < n && j < T; ++j) w(h, i, j) = weights[b](0, h, i, j);
        out.push_back({"block_" + std::to_string(b), w});
    }
    return out;
}

}  // namespace ch27
