// libFuzzer target: Hugging Face's GPT-2 config.json read as untrusted input
// (lib/attn/model/gpt2_weights.hpp: parse_gpt2_config, gpt2_config_from_json). The input is a
// whole file. Findings besides crashes and sanitizer reports (each a trap):
// - an exception other than the reader's std::runtime_error, or a refusal whose message does not
//   start with the file's name;
// - gpt2_config_from_json of the bytes written to a file giving another outcome than
//   parse_gpt2_config of the bytes (another config, another message);
// - a config that is read but is not what its fields say: a field outside [1, 2^31 - 1],
//   n_embd not divisible by n_head, no qkv bias, dropout, or a config GPTConfig::check refuses;
// - a config that is read but does not read back the same from a config.json of its fields.
// Seeds: tools/ci_extra.sh uses data/oracle/gpt2_hf/config*.json, with the fields' names as a
// dictionary (config.dict).
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/model/gpt2_weights.hpp"
#include "fuzz_common.hpp"

namespace {

// The outcome of a read: the message of a clean refusal, with the file's name replaced by "F"
// ("" when it was read).
template <class F>
std::string outcome(F&& read, const std::string& name, attn::GPTConfig& out) {
    try {
        out = read();
        return "";
    } catch (const std::runtime_error& e) {
        const std::string m = e.what();
        if (m.rfind(name + ": ", 0) != 0) __builtin_trap();  // every refusal names the file first
        return "F" + m.substr(name.size());
    } catch (...) {
        __builtin_trap();  // any other exception is a finding
    }
}

bool in_range(std::size_t v) { return v >= 1 && v <= 2147483647u; }

bool same(const attn::GPTConfig& a, const attn::GPTConfig& b) {
    return a.vocab_size == b.vocab_size && a.context_length == b.context_length && a.emb_dim == b.emb_dim &&
           a.n_heads == b.n_heads && a.n_layers == b.n_layers && a.drop_rate == b.drop_rate && a.qkv_bias == b.qkv_bias;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    attn::GPTConfig parsed, loaded;
    const std::string parse_outcome =
        outcome([&] { return attn::parse_gpt2_config(bytes, "input"); }, "input", parsed);
    const auto path = fuzz::work_dir() / "config.json";
    fuzz::write(path, data, size);
    const std::string load_outcome =
        outcome([&] { return attn::gpt2_config_from_json(path); }, path.string(), loaded);
    if (parse_outcome != load_outcome) __builtin_trap();
    if (!parse_outcome.empty()) return 0;
    if (!same(parsed, loaded)) __builtin_trap();

    // What was read is what the fields say, and a model of it fits.
    if (!in_range(parsed.vocab_size) || !in_range(parsed.context_length) || !in_range(parsed.emb_dim) ||
        !in_range(parsed.n_heads) || !in_range(parsed.n_layers) || parsed.emb_dim % parsed.n_heads != 0 ||
        !parsed.qkv_bias || parsed.drop_rate != 0.0)
        __builtin_trap();
    try {
        parsed.check("fuzz_config");
    } catch (...) {
        __builtin_trap();
    }
    // Its fields written as a config.json read back the same.
    const std::string again = "{\"vocab_size\": " + std::to_string(parsed.vocab_size) +
                              ", \"n_positions\": " + std::to_string(parsed.context_length) +
                              ", \"n_embd\": " + std::to_string(parsed.emb_dim) +
                              ", \"n_head\": " + std::to_string(parsed.n_heads) +
                              ", \"n_layer\": " + std::to_string(parsed.n_layers) + "}";
    attn::GPTConfig reread;
    if (!outcome([&] { return attn::parse_gpt2_config(again, "again"); }, "again", reread).empty() || !same(parsed, reread))
        __builtin_trap();
    return 0;
}
