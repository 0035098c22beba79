// Tests for OpenAI's GPT-2 weights from Hugging Face's safetensors files in his GPTModel
// (lib/attn/model/gpt2_weights.hpp; his ch05 weight-loading-hf-safetensors notebook, In [4] and
// In [7]). Expected values come from PyTorch: a small GPT-2 in Hugging Face's layout (F32, F16,
// BF16), its config.json, and the logits of his GPTModel after his load_weights_into_gpt
// (tools/oracle/gpt2_hf_files.py, data/oracle/gpt2_hf/); the four sizes from his In [4] as his
// notebook's text export prints it (data/sources/raschka/raschka_ch05_hf_safetensors.txt).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

#include "attn/core/generator.hpp"
#include "attn/core/tensor_dict.hpp"
#include "attn/core/ulp.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/decoding.hpp"
#include "attn/model/gpt2_weights.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/state_dict.hpp"
#include "oracle.hpp"

namespace test_gpt2_weights {  // every test file is a namespace of its own (tests/meson.build)

namespace {

namespace fs = std::filesystem;
using attn::LongTensor;
using attn::Tensor;
using attn::TensorDict;

const nlohmann::json& oracle() { return test::oracle_file("gpt2_hf/gpt2_hf.json"); }
fs::path oracle_file_path(const std::string& name) { return test::oracle_path("gpt2_hf/" + name); }

std::string text_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    INFO(p.string());
    REQUIRE(in.good());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::uint32_t> gw_bits(const Tensor& t) {
    std::vector<std::uint32_t> out(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) out[i] = std::bit_cast<std::uint32_t>(t.data()[i]);
    return out;
}

// SHA-256 of bytes, in hex (the oracle records each file's).
std::string gw_sha256(const std::string& bytes) {
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), h);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : h) out += {hex[c >> 4], hex[c & 15]};
    return out;
}

LongTensor oracle_ids() {
    const auto& ids = oracle()["ids"];
    LongTensor t = LongTensor::from_shape({ids.size(), ids[0].size()});
    for (std::size_t b = 0; b < t.shape()[0]; ++b)
        for (std::size_t i = 0; i < t.shape()[1]; ++i) t(b, i) = ids[b][i].get<std::int64_t>();
    return t;
}

// The F32 file's tensors with `drop` left out and `add` added (the file's own tensors edited).
TensorDict edited(const std::string& drop, const std::string& add = "", const Tensor& added = {}) {
    const auto file = attn::io::load_safetensors(oracle_file_path("model.safetensors")).tensors;
    TensorDict d;
    for (const auto& [name, t] : file)
        if (name != drop) d.insert(name, name == add ? added : t);
    if (!add.empty() && !d.contains(add)) d.insert(add, added);
    return d;
}

// The small model, built from other weights than the file's.
attn::GPTModel small_model() {
    attn::manual_seed(7);
    return attn::GPTModel(attn::gpt2_config_from_json(oracle_file_path("config.json")));
}

}  // namespace

TEST_CASE("gpt2_config: his In [4], the four sizes as his notebook prints them", "[gpt2_weights]") {
    const std::string text =
        text_of(textbook::data_dir() / "sources" / "raschka" / "raschka_ch05_hf_safetensors.txt");
    const auto base = [&](const std::string& key) {
        std::smatch m;
        REQUIRE(std::regex_search(text, m, std::regex("\"" + key + "\": ([0-9.]+|True|False)")));
        return m[1].str();
    };
    const std::regex size_line(R"re("(gpt2-[a-z]+ \([0-9]+M\))": \{"emb_dim": ([0-9]+), "n_layers": ([0-9]+), "n_heads": ([0-9]+)\})re");
    int sizes = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), size_line); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        INFO(m[1].str());
        const attn::GPTConfig c = attn::gpt2_config(m[1].str());
        CHECK(c.emb_dim == std::stoul(m[2].str()));
        CHECK(c.n_layers == std::stoul(m[3].str()));
        CHECK(c.n_heads == std::stoul(m[4].str()));
        CHECK(c.vocab_size == std::stoul(base("vocab_size")));
        CHECK(c.context_length == std::stoul(base("context_length")));
        CHECK(c.drop_rate == std::stod(base("drop_rate")));
        CHECK(c.qkv_bias == (base("qkv_bias") == "True"));
        ++sizes;
    }
    CHECK(sizes == 4);
    CHECK_THROWS_AS(attn::gpt2_config("gpt2-small"), std::invalid_argument);
    CHECK_THROWS_WITH(attn::gpt2_config("gpt2-small"), Catch::Contains("unknown model name \"gpt2-small\"") &&
                             Catch::Contains("\"gpt2-small (124M)\", \"gpt2-medium (355M)\", \"gpt2-large (774M)\", "
                                             "\"gpt2-xl (1558M)\""));
    // openai-community/gpt2's config.json is his small size.
    const attn::GPTConfig hf = attn::gpt2_config_from_json(oracle_file_path("config_gpt2_124M.json"));
    const attn::GPTConfig small = attn::gpt2_config("gpt2-small (124M)");
    CHECK(hf.vocab_size == small.vocab_size);
    CHECK(hf.context_length == small.context_length);
    CHECK(hf.emb_dim == small.emb_dim);
    CHECK(hf.n_heads == small.n_heads);
    CHECK(hf.n_layers == small.n_layers);
    CHECK(hf.drop_rate == small.drop_rate);
    CHECK(hf.qkv_bias == small.qkv_bias);
}

TEST_CASE("Hugging Face's GPT-2 files (F32, F16, BF16) give his model's logits bit for bit", "[gpt2_weights]") {
    const auto& o = oracle();
    const attn::GPTConfig c = attn::gpt2_config_from_json(oracle_file_path("config.json"));
    CHECK(c.vocab_size == o["config"]["vocab_size"].get<std::size_t>());
    CHECK(c.context_length == o["config"]["context_length"].get<std::size_t>());
    CHECK(c.emb_dim == o["config"]["emb_dim"].get<std::size_t>());
    CHECK(c.n_heads == o["config"]["n_heads"].get<std::size_t>());
    CHECK(c.n_layers == o["config"]["n_layers"].get<std::size_t>());
    CHECK(c.drop_rate == o["config"]["drop_rate"].get<double>());
    CHECK(c.qkv_bias == o["config"]["qkv_bias"].get<bool>());
    for (const char* name : {"model.safetensors", "model_f16.safetensors", "model_bf16.safetensors"}) {
        INFO(name);
        const auto& rec = o["files"][name];
        CHECK(gw_sha256(text_of(oracle_file_path(name))) == rec["sha256"].get<std::string>());
        const auto file = attn::io::load_safetensors(oracle_file_path(name));
        CHECK(file.metadata == attn::io::Metadata{{"format", "pt"}});
        auto names = file.tensors.names(), keys = o["keys"].get<std::vector<std::string>>();
        std::sort(names.begin(), names.end());
        std::sort(keys.begin(), keys.end());
        CHECK(names == keys);  // GPT2Model's keys, h.N.attn.bias included
        attn::GPTModel gpt = small_model();
        attn::load_weights_into_gpt(gpt, file.tensors);
        // Tied head: out_head.weight is wte.weight, as his In [7] assigns it.
        CHECK(gw_bits(gpt.out_head.weight) == gw_bits(file.tensors.at("wte.weight")));
        CHECK(gw_bits(gpt.tok_emb.weight) == gw_bits(file.tensors.at("wte.weight")));
        gpt.eval();
        const Tensor logits = gpt(oracle_ids());
        CHECK(attn::shape_of(logits) == rec["logits_shape"].get<attn::Shape>());
        // Bit for bit: his model with the same weights held contiguously (reloaded by load_state_dict).
        CHECK(gw_bits(logits) == rec["logits_bits"].get<std::vector<std::uint32_t>>());
        // His model as his In [7] leaves it holds transposed views, for which PyTorch's addmm adds
        // the bias before the products (the reference BLAS's other loop): a few ulps apart, not more.
        const Tensor views = test::oracle_bits_tensor(rec["logits_shape"].get<attn::Shape>(), rec["logits_bits_his_views"]);
        // (Measured in ulps of the largest logit: raw ulps near 0 say nothing.)
        const float scale = xt::amax(xt::abs(views))();
        const double ulps = attn::max_diff_in_ulps(logits, views, scale);
        INFO("max |difference| to his views' logits, in ulps of " << scale << ": " << ulps);
        CHECK(attn::max_ulp_distance(logits, views) > 0);  // the oracle does tell the two paths apart
        CHECK(ulps <= 16);
    }
}

TEST_CASE("his generate on a Hugging Face file: PyTorch's sampled ids for seed 123, cached and not", "[gpt2_weights]") {
    const auto& g = oracle()["generate"];
    attn::GPTModel gpt = small_model();
    attn::load_weights_into_gpt(gpt, attn::io::load_safetensors(oracle_file_path("model.safetensors")).tensors);
    gpt.eval();
    const auto prompt_ids = g["prompt"].get<std::vector<std::int64_t>>();
    LongTensor prompt = LongTensor::from_shape({1, prompt_ids.size()});
    std::copy(prompt_ids.begin(), prompt_ids.end(), prompt.begin());
    const auto max_new_tokens = g["max_new_tokens"].get<std::size_t>();
    const auto top_k = g["top_k"].get<std::size_t>();
    const auto temperature = g["temperature"].get<double>();
    const auto expected = g["ids"].get<std::vector<std::int64_t>>();
    REQUIRE(expected == g["ids_his_views"].get<std::vector<std::int64_t>>());  // both of PyTorch's models drew alike
    attn::manual_seed(123);
    const LongTensor ids = attn::generate(gpt, prompt, max_new_tokens, gpt.context_length(), temperature, top_k);
    CHECK(std::vector<std::int64_t>(ids.begin(), ids.end()) == expected);
    attn::manual_seed(123);
    attn::GPTCache cache;
    const LongTensor cached = attn::generate_cached(gpt, prompt, max_new_tokens, cache, gpt.context_length(), temperature, top_k);
    CHECK(std::vector<std::int64_t>(cached.begin(), cached.end()) == expected);
}

TEST_CASE("load_weights_into_gpt: the masks skipped, GPT2LMHeadModel's prefix accepted", "[gpt2_weights]") {
    const auto& rec = oracle()["files"]["model.safetensors"];
    const auto logits_of = [&](const TensorDict& d) {
        attn::GPTModel gpt = small_model();
        attn::load_weights_into_gpt(gpt, d);
        gpt.eval();
        return gw_bits(gpt(oracle_ids()));
    };
    const auto want = rec["logits_bits"].get<std::vector<std::uint32_t>>();
    // Without the h.N.attn.bias buffers (newer transformers do not save them), with older files'
    // h.N.attn.masked_bias (a 0-d -1e4).
    CHECK(logits_of(edited("h.0.attn.bias")) == want);
    TensorDict with_masked = edited("", "h.1.attn.masked_bias", attn::scalar_tensor(-1e4f));
    CHECK(logits_of(with_masked) == want);
    // Every key prefixed with transformer., and lm_head.weight tied to wte.
    const TensorDict file = edited("");
    TensorDict prefixed;
    for (const auto& [name, t] : file) prefixed.insert("transformer." + name, t);
    CHECK(logits_of(prefixed) == want);
    prefixed.insert("lm_head.weight", file.at("wte.weight"));
    CHECK(logits_of(prefixed) == want);
}

TEST_CASE("load_weights_into_gpt refuses, naming the key, and changes nothing", "[gpt2_weights]") {
    attn::GPTModel gpt = small_model();
    const TensorDict before = attn::nn::state_dict(gpt);
    const auto refused = [&](const TensorDict& d, const std::vector<std::string>& parts) {
        std::string message;
        try {
            attn::load_weights_into_gpt(gpt, d);
        } catch (const std::invalid_argument& e) {
            message = e.what();
        }
        INFO(message);
        CHECK(message.rfind("load_weights_into_gpt: ", 0) == 0);
        for (const auto& p : parts) CHECK(message.find(p) != std::string::npos);
        CHECK(attn::bitwise_equal(attn::nn::state_dict(gpt), before));
    };
    refused(edited("h.1.mlp.c_fc.bias"), {"missing key(s): \"h.1.mlp.c_fc.bias\""});
    refused(edited("", "h.0.attn.c_attn.weight_v", attn::zeros({2})), {"unexpected key(s): \"h.0.attn.c_attn.weight_v\""});
    refused(edited("ln_f.bias", "h.2.ln_1.weight", attn::zeros({16})),
            {"unexpected key(s): \"h.2.ln_1.weight\"", "missing key(s): \"ln_f.bias\""});
    // A mask of a block the model does not have is not skipped.
    refused(edited("", "h.2.attn.bias", attn::zeros({1, 1, 8, 8})), {"unexpected key(s): \"h.2.attn.bias\""});
    // Shapes: the expected one in the file's layout (Conv1D's [in, out]), then the file's.
    refused(edited("", "h.0.attn.c_attn.weight", attn::zeros({16, 47})),
            {"h.0.attn.c_attn.weight: Shape mismatch. expected [16, 48], got [16, 47]"});
    refused(edited("", "h.1.mlp.c_proj.weight", attn::zeros({16, 64})),
            {"h.1.mlp.c_proj.weight: Shape mismatch. expected [64, 16], got [16, 64]"});
    refused(edited("", "wte.weight", attn::zeros({51, 16})), {"wte.weight: Shape mismatch. expected [50, 16], got [51, 16]"});
    refused(edited("", "ln_f.weight", attn::zeros({1, 16})), {"ln_f.weight: Shape mismatch. expected [16], got [1, 16]"});
    // The shape error comes before any tensor is assigned: an error in the last block's last tensor.
    refused(edited("", "h.1.ln_2.bias", attn::zeros({15})), {"h.1.ln_2.bias: Shape mismatch. expected [16], got [15]"});
    // The prefix on some keys only; an untied lm_head.
    TensorDict mixed = edited("wpe.weight");
    mixed.insert("transformer.wpe.weight", edited("").at("wpe.weight"));
    refused(mixed, {"1 keys start with \"transformer.\""});
    refused(edited("", "lm_head.weight", attn::zeros({50, 16})), {"lm_head.weight is not wte.weight"});
    // A model without query/key/value biases (his chapter 4 config).
    attn::GPTConfig no_bias = attn::gpt2_config_from_json(oracle_file_path("config.json"));
    no_bias.qkv_bias = false;
    attn::GPTModel plain(no_bias);
    CHECK_THROWS_AS(attn::load_weights_into_gpt(plain, edited("")), std::invalid_argument);
    CHECK_THROWS_WITH(attn::load_weights_into_gpt(plain, edited("")), Catch::Contains("qkv_bias = false"));
}

TEST_CASE("gpt2_config_from_json refuses a bad config.json, naming the file and the key", "[gpt2_weights]") {
    const nlohmann::json good = nlohmann::json::parse(text_of(oracle_file_path("config.json")));
    const auto with = [&](const std::string& key, const nlohmann::json& value) {
        nlohmann::json j = good;
        if (value.is_discarded()) j.erase(key);
        else j[key] = value;
        return j.dump(2);
    };
    const nlohmann::json gone = nlohmann::json(nlohmann::json::value_t::discarded);
    const auto refused = [](const std::string& text, const std::vector<std::string>& parts) {
        std::string message;
        try {
            attn::parse_gpt2_config(text, "cfg/config.json");
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
        INFO(message);
        CHECK(message.rfind("cfg/config.json: ", 0) == 0);
        for (const auto& p : parts) CHECK(message.find(p) != std::string::npos);
    };
    refused(with("n_head", gone), {"\"n_head\": missing"});
    refused(with("n_embd", "16"), {"\"n_embd\": expected an integer, got string"});
    refused(with("n_layer", 2.0), {"\"n_layer\": expected an integer, got number"});
    refused(with("n_positions", nullptr), {"\"n_positions\": expected an integer, got null"});
    refused(with("vocab_size", true), {"\"vocab_size\": expected an integer, got boolean"});
    refused(with("n_layer", -2), {"\"n_layer\": expected an integer in [1, 2147483647], got -2"});
    refused(with("n_head", 0), {"\"n_head\": expected an integer in [1, 2147483647], got 0"});
    refused(with("vocab_size", 18446744073709551615ull), {"\"vocab_size\": expected an integer in [1, 2147483647]"});
    refused(with("n_head", 3), {"\"n_embd\" must be divisible by \"n_head\", got n_embd = 16, n_head = 3"});
    // Valid sizes too large for any machine: refused before anything is allocated.
    refused(with("n_embd", 2147483640), {"cannot allocate"});
    refused("{\"n_embd\": 16,", {"not valid JSON"});
    refused("[1, 2]", {"expected a JSON object, got array"});
    refused(std::string(100, '[') + std::string(100, ']'), {"nested more than 64 deep"});
    // The file's own name in the messages; a missing file.
    CHECK_THROWS_AS(attn::gpt2_config_from_json("/nonexistent/config.json"), std::runtime_error);
    CHECK_THROWS_WITH(attn::gpt2_config_from_json("/nonexistent/config.json"), Catch::StartsWith("/nonexistent/config.json: "));
    const fs::path tmp = fs::temp_directory_path() / ("attn_gpt2_config_" + std::to_string(::getpid()) + ".json");
    std::ofstream(tmp) << with("n_layer", "two");
    CHECK_THROWS_AS(attn::gpt2_config_from_json(tmp), std::runtime_error);
    CHECK_THROWS_WITH(attn::gpt2_config_from_json(tmp), Catch::StartsWith(tmp.string() + ": \"n_layer\": expected an integer, got string"));
    fs::remove(tmp);
}

// Hugging Face's 124M layout at full size, without its 500 MB file: the oracle's draws (after
// torch.manual_seed(123)) made again here, written as save_file writes them, must be the bytes
// whose SHA-256 the oracle recorded; loaded, his model's logits of four tokens are PyTorch's.
// About 2.5 GB of memory and 6 s (2 cores): run only when ATTN_GPT2_124M is set
// (`ATTN_GPT2_124M=1 build/tests/unit_tests '[#test_gpt2_weights]'`).
TEST_CASE("the 124M configuration: the oracle's file made again, byte for byte, and its logits", "[gpt2_weights]") {
    if (std::getenv("ATTN_GPT2_124M") == nullptr) return;
    const auto& o = oracle()["gpt2_124M"];
    const attn::GPTConfig cfg = attn::gpt2_config("gpt2-small (124M)");
    REQUIRE(cfg.emb_dim == o["config"]["emb_dim"].get<std::size_t>());
    const std::size_t V = cfg.vocab_size, C = cfg.context_length, E = cfg.emb_dim;
    // hf_tensors of tools/oracle/gpt2_hf_files.py: torch.randn(*shape) * scale (float32 products),
    // 1 + that for the LayerNorm weights, in GPT2Model's key order.
    attn::manual_seed(123);
    TensorDict d;
    const auto w = [](const attn::Shape& shape, float scale, float plus = 0.0f) {
        Tensor t = attn::randn(shape);
        for (float& x : t) x = plus == 0.0f ? x * scale : plus + x * scale;
        return t;
    };
    d.insert("wte.weight", w({V, E}, 0.5f));
    d.insert("wpe.weight", w({C, E}, 0.1f));
    Tensor mask = attn::zeros({1, 1, C, C});
    for (std::size_t i = 0; i < C; ++i)
        for (std::size_t j = 0; j <= i; ++j) mask.data()[i * C + j] = 1.0f;
    for (std::size_t b = 0; b < cfg.n_layers; ++b) {
        const std::string h = "h." + std::to_string(b) + ".";
        d.insert(h + "ln_1.weight", w({E}, 0.1f, 1.0f));
        d.insert(h + "ln_1.bias", w({E}, 0.1f));
        d.insert(h + "attn.bias", mask);
        d.insert(h + "attn.c_attn.weight", w({E, 3 * E}, 0.2f));
        d.insert(h + "attn.c_attn.bias", w({3 * E}, 0.1f));
        d.insert(h + "attn.c_proj.weight", w({E, E}, 0.2f));
        d.insert(h + "attn.c_proj.bias", w({E}, 0.1f));
        d.insert(h + "ln_2.weight", w({E}, 0.1f, 1.0f));
        d.insert(h + "ln_2.bias", w({E}, 0.1f));
        d.insert(h + "mlp.c_fc.weight", w({E, 4 * E}, 0.2f));
        d.insert(h + "mlp.c_fc.bias", w({4 * E}, 0.1f));
        d.insert(h + "mlp.c_proj.weight", w({4 * E, E}, 0.1f));
        d.insert(h + "mlp.c_proj.bias", w({E}, 0.1f));
    }
    d.insert("ln_f.weight", w({E}, 0.1f, 1.0f));
    d.insert("ln_f.bias", w({E}, 0.1f));
    std::string bytes = attn::io::serialize_safetensors(d, {{"format", "pt"}});
    d = TensorDict();
    CHECK(gw_sha256(bytes) == o["sha256"].get<std::string>());
    const TensorDict params = attn::io::parse_safetensors(bytes, "gpt2-124M").tensors;
    bytes = std::string();
    attn::GPTModel gpt(cfg);
    attn::load_weights_into_gpt(gpt, params);
    gpt.eval();
    const auto& ids = o["ids"][0];
    LongTensor in_idx = LongTensor::from_shape({1, ids.size()});
    for (std::size_t i = 0; i < ids.size(); ++i) in_idx(0, i) = ids[i].get<std::int64_t>();
    const Tensor logits = gpt(in_idx);
    REQUIRE(attn::shape_of(logits) == o["logits_shape"].get<attn::Shape>());
    const auto& want = o["contiguous"];
    CHECK(test::sha256(logits) == want["sha256"].get<std::string>());
    for (std::size_t t = 0; t < ids.size(); ++t) {
        INFO("position " << t);
        std::vector<std::uint32_t> first8;
        for (std::size_t v = 0; v < 8; ++v) first8.push_back(std::bit_cast<std::uint32_t>(logits(0, t, v)));
        CHECK(first8 == want["first8_bits"][t].get<std::vector<std::uint32_t>>());
        const auto row = xt::view(logits, 0, t, xt::all());
        CHECK(static_cast<std::int64_t>(xt::argmax(row)()) == want["argmax"][t].get<std::int64_t>());
    }
}

}  // namespace test_gpt2_weights
