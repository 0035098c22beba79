// generate: a reader's program, as Raschka's ch05 gpt_generate.py: GPT-2 weights from a
// safetensors file (Hugging Face's GPT-2 layout, or a GPTModel's state_dict such as chapter 26's
// gpt2_the_verdict.safetensors), his `generate` with the KV cache, the text printed.
//
//     build/chapters/generate --weights model.safetensors --prompt "Every effort moves you"
//
// Not a chapter: it prints no book. Its defaults are his script's (25 new tokens, top_k 50,
// temperature 1.0, torch.manual_seed(123)).
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#define CXXOPTS_NO_REGEX
#include <cxxopts.hpp>

#include "attn/core/generator.hpp"
#include "attn/model/decoding.hpp"
#include "attn/model/gpt2_weights.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/train/train.hpp"
#include "textbook/tokenizer_data.hpp"

namespace {

namespace fs = std::filesystem;

struct Args {
    fs::path weights, config;
    std::string prompt;
    std::size_t max_new_tokens = 25;
    double temperature = 1.0;
    std::optional<std::size_t> top_k = 50;
    std::uint64_t seed = 123;
    int threads = 0;  // 0: OpenMP's default
};

const char* how_to_get_weights =
    "no --weights given, and no gpt2_the_verdict.safetensors in this directory.\n"
    "Either train chapter 26's model here (build/chapters/chapter_26_pretraining, about ten minutes;\n"
    "it saves gpt2_the_verdict.safetensors), or download OpenAI's GPT-2 small from Hugging Face:\n"
    "  https://huggingface.co/openai-community/gpt2/resolve/main/model.safetensors\n"
    "  https://huggingface.co/openai-community/gpt2/resolve/main/config.json\n"
    "and run: generate --weights model.safetensors --config config.json --prompt \"Every effort moves you\"";

Args parse(int argc, char** argv) {
    cxxopts::Options cli("generate", "Generates text with GPT-2 weights from a safetensors file: Raschka's generate "
                                     "(ch05 In [40]) with the KV cache, as his gpt_generate.py");
    cli.add_options()
        ("weights", "a safetensors file: Hugging Face's GPT-2 model.safetensors, or a GPTModel's state_dict "
                    "(default: gpt2_the_verdict.safetensors, chapter 26's, if it is here)", cxxopts::value<std::string>(), "FILE")
        ("config", "Hugging Face's config.json for the weights (default: config.json beside them, else the "
                   "sizes read from the tensors)", cxxopts::value<std::string>(), "FILE")
        ("prompt", "the text to continue (required)", cxxopts::value<std::string>(), "TEXT")
        ("max-new-tokens", "tokens to generate", cxxopts::value<std::size_t>()->default_value("25"), "N")
        ("temperature", "divides the logits before sampling; 0 takes the most likely token (greedy)",
         cxxopts::value<double>()->default_value("1.0"), "T")
        ("top-k", "sample among the K largest logits only, 1 <= K <= the vocabulary; 'none' for all",
         cxxopts::value<std::string>()->default_value("50"), "K")
        ("seed", "torch.manual_seed(S) before generating", cxxopts::value<std::uint64_t>()->default_value("123"), "S")
        ("threads", "OpenMP threads (default: OpenMP's, OMP_NUM_THREADS)", cxxopts::value<int>(), "N")
        ("h,help", "print this help and exit");
    Args a;
    try {
        const auto r = cli.parse(argc, argv);
        if (r.count("help")) {
            std::cout << cli.help() << std::endl;
            std::exit(0);
        }
        if (!r.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + r.unmatched().front() + "'");
        if (!r.count("prompt")) throw std::invalid_argument("--prompt is required");
        a.prompt = r["prompt"].as<std::string>();
        if (r.count("weights")) a.weights = r["weights"].as<std::string>();
        if (r.count("config")) a.config = r["config"].as<std::string>();
        a.max_new_tokens = r["max-new-tokens"].as<std::size_t>();
        a.temperature = r["temperature"].as<double>();
        if (!(a.temperature >= 0.0) || !std::isfinite(a.temperature))
            throw std::invalid_argument("--temperature must be a finite number >= 0 (0: greedy), got " +
                                        r["temperature"].as<std::string>());
        const std::string k = r["top-k"].as<std::string>();
        if (k == "none") a.top_k = std::nullopt;
        else {
            std::size_t used = 0;
            const long long v = std::stoll(k, &used);
            if (used != k.size() || v < 1) throw std::invalid_argument("--top-k must be an integer >= 1 or 'none', got '" + k + "'");
            a.top_k = static_cast<std::size_t>(v);
        }
        a.seed = r["seed"].as<std::uint64_t>();
        if (r.count("threads")) {
            a.threads = r["threads"].as<int>();
            if (a.threads < 1) throw std::invalid_argument("--threads must be >= 1");
        }
    } catch (const std::exception& e) {
        std::cerr << "generate: " << e.what() << "\n\n" << cli.help() << std::endl;
        std::exit(2);
    }
    return a;
}

}  // namespace

int main(int argc, char** argv) {
    Args a = parse(argc, argv);
    try {
        if (a.threads) omp_set_num_threads(a.threads);
        if (a.weights.empty()) {
            if (!fs::exists("gpt2_the_verdict.safetensors")) {
                std::cerr << "generate: " << how_to_get_weights << std::endl;
                return 1;
            }
            a.weights = "gpt2_the_verdict.safetensors";
        }
        attn::GPTModel gpt = attn::load_gpt_safetensors(a.weights, a.config);  // either layout, checked
        gpt.eval();
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();
        const attn::LongTensor idx = attn::text_to_token_ids(a.prompt, tokenizer);
        attn::manual_seed(a.seed);
        attn::GPTCache cache;
        const attn::LongTensor token_ids = attn::generate_cached(gpt, idx, a.max_new_tokens, cache, gpt.context_length(),
                                                                 a.temperature, a.top_k);
        std::cout << "Output text:\n " << attn::token_ids_to_text(token_ids, tokenizer) << std::endl;
        return std::cout ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "generate: " << e.what() << std::endl;
        return 1;
    }
}
