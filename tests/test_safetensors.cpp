// Tests for keeping weights: `state_dict` / `load_state_dict` of modules and of AdamW
// (lib/attn/nn/state_dict.hpp) and safetensors files (lib/attn/io/safetensors.hpp). Expected
// values come from PyTorch: files written by hand from the format's specification and what
// PyTorch holds in them, his GPTModel's `state_dict()` keys, tensors and logits
// (tools/oracle/safetensors_files.py, data/oracle/safetensors/). The reverse direction (Python
// reading what the library wrote) is tests/check_safetensors.py; the malformed files are the
// bad-input table's family "safetensors" (test_bad_input_safetensors.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/core/generator.hpp"
#include "attn/core/tensor_dict.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/nn/optim.hpp"
#include "attn/nn/state_dict.hpp"
#include "attn/train/train.hpp"
#include "oracle.hpp"

namespace test_safetensors {  // every test file is a namespace of its own (tests/meson.build)

namespace {

namespace fs = std::filesystem;
using attn::LongTensor;
using attn::Tensor;
using attn::TensorDict;

const nlohmann::json& files() { return test::oracle_file("safetensors/files.json"); }
const nlohmann::json& gpt_oracle() { return files()["files"]["gpt_small.safetensors"]; }

std::string bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in.good());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::uint32_t> bits_of(const Tensor& t) {
    std::vector<std::uint32_t> out(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) out[i] = std::bit_cast<std::uint32_t>(t.data()[i]);
    return out;
}

// A tensor's dtype, shape and bits as files.json records them (from PyTorch's t.float()).
void check_as_recorded(const Tensor& t, const nlohmann::json& recorded) {
    CHECK(attn::shape_of(t) == recorded["shape"].get<attn::Shape>());
    CHECK(bits_of(t) == recorded["float32_bits"].get<std::vector<std::uint32_t>>());
}

attn::GPTConfig config_of(const nlohmann::json& c) {
    return {.vocab_size = c["vocab_size"], .context_length = c["context_length"], .emb_dim = c["emb_dim"],
            .n_heads = c["n_heads"], .n_layers = c["n_layers"], .drop_rate = c["drop_rate"],
            .qkv_bias = c["qkv_bias"]};
}

// A fresh directory under the system's temporary directory, removed with its contents.
struct TempDir {
    fs::path path;
    TempDir() {
        static int counter = 0;
        path = fs::temp_directory_path() /
               ("attn_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(++counter));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

// The message of the `E` that `f` throws ("<nothing thrown>", "<another exception: ...>" else).
template <class E, class F>
std::string thrown(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<another exception: ") + e.what() + ">";
    }
    return "<nothing thrown>";
}

std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("TensorDict: insertion order, lookup, duplicates and empty names refused", "[safetensors]") {
    TensorDict d;
    d.insert("b", attn::tensor({1.0f}));
    d.insert("a", attn::tensor({2.0f, 3.0f}));
    CHECK(d.names() == std::vector<std::string>{"b", "a"});
    CHECK(d.at("a").size() == 2);
    CHECK(d.find("c") == nullptr);
    CHECK_THROWS_WITH(d.insert("b", Tensor()), Catch::Contains("\"b\" is already present"));
    CHECK_THROWS_WITH(d.insert("", Tensor()), Catch::Contains("must not be empty"));
    CHECK_THROWS_AS(d.at("c"), std::out_of_range);
    CHECK(d.size() == 2);
}

TEST_CASE("state_dict of his GPTModel: PyTorch's keys, order and values, masks included", "[safetensors]") {
    const auto& o = gpt_oracle();
    attn::manual_seed(123);
    attn::GPTModel model(config_of(o["config"]));
    const TensorDict sd = attn::nn::state_dict(model);
    CHECK(sd.names() == o["state_dict_keys"].get<std::vector<std::string>>());
    for (const auto& [name, t] : sd) {
        INFO(name);
        check_as_recorded(t, o["tensors"][name]);
    }
    // A copy: changing it leaves the model alone.
    TensorDict copy = attn::nn::state_dict(model);
    copy.at("out_head.weight").fill(0.0f);
    CHECK(attn::bitwise_equal(attn::nn::state_dict(model), sd));
}

TEST_CASE("a file written as save_file writes it: every dtype read as PyTorch's t.float()", "[safetensors]") {
    const auto& o = files()["files"]["dtypes.safetensors"];
    const attn::io::SafetensorsFile f = attn::io::load_safetensors(test::oracle_path("safetensors/dtypes.safetensors"));
    CHECK(f.metadata == o["metadata"].get<attn::io::Metadata>());
    // The data's order: I64, then F32 by name, then BF16, then F16 (alignment, then name).
    std::vector<std::string> order, dtypes;
    for (const auto& info : f.infos) order.push_back(info.name), dtypes.push_back(info.dtype);
    CHECK(order == std::vector<std::string>{"ids", "empty", "scalar", "weights.f32", "weights.bf16", "weights.f16"});
    CHECK(dtypes == std::vector<std::string>{"I64", "F32", "F32", "F32", "BF16", "F16"});
    CHECK(f.tensors.names() == std::vector<std::string>{"empty", "scalar", "weights.f32", "weights.bf16", "weights.f16"});
    for (const auto& [name, t] : f.tensors) {
        INFO(name << " (" << o["tensors"][name]["dtype"].get<std::string>() << ")");
        check_as_recorded(t, o["tensors"][name]);
    }
    REQUIRE(f.int64_tensors.count("ids") == 1);
    const LongTensor& ids = f.int64_tensors.at("ids");
    CHECK(attn::shape_of(ids) == attn::Shape{5});
    for (std::size_t i = 0; i < ids.size(); ++i)
        CHECK(std::to_string(ids.data()[i]) == o["tensors"]["ids"]["values"][i].get<std::string>());
    // parse_safetensors of the same bytes reads the same.
    const auto g = attn::io::parse_safetensors(bytes_of(test::oracle_path("safetensors/dtypes.safetensors")));
    CHECK(attn::bitwise_equal(g.tensors, f.tensors));
}

TEST_CASE("the library writes save_file's bytes: his model's file, byte for byte", "[safetensors]") {
    const auto& o = gpt_oracle();
    attn::manual_seed(123);
    attn::GPTModel model(config_of(o["config"]));
    const std::string expected = bytes_of(test::oracle_path("safetensors/gpt_small.safetensors"));
    const attn::io::Metadata metadata = {{"format", "pt"}};
    CHECK(attn::io::serialize_safetensors(attn::nn::state_dict(model), metadata) == expected);
    TempDir dir;
    attn::io::save_safetensors(dir.path / "model.safetensors", attn::nn::state_dict(model), metadata);
    CHECK(bytes_of(dir.path / "model.safetensors") == expected);
    CHECK(listing(dir.path) == std::vector<std::string>{"model.safetensors"});  // no temporary file left
    // An empty dictionary: "{}" and six spaces, as the reference's own test expects.
    CHECK(attn::io::serialize_safetensors(TensorDict()) == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
}

TEST_CASE("his model's file loads into a fresh model, which then computes his logits", "[safetensors]") {
    const auto& o = gpt_oracle();
    attn::manual_seed(7);  // other weights than his
    attn::GPTModel model(config_of(o["config"]));
    const auto f = attn::io::load_safetensors(test::oracle_path("safetensors/gpt_small.safetensors"));
    CHECK(f.metadata == attn::io::Metadata{{"format", "pt"}});
    const attn::nn::IncompatibleKeys keys = attn::nn::load_state_dict(model, f.tensors);
    CHECK(keys.missing_keys.empty());
    CHECK(keys.unexpected_keys.empty());
    for (const auto& [name, t] : attn::nn::state_dict(model)) {
        INFO(name);
        check_as_recorded(t, o["tensors"][name]);
    }
    model.eval();
    LongTensor ids = LongTensor::from_shape({2, 6});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 6; ++t) ids(b, t) = o["ids"][b][t].get<std::int64_t>();
    const Tensor logits = model(ids);
    CHECK(attn::shape_of(logits) == o["logits_shape"].get<attn::Shape>());
    CHECK(bits_of(logits) == o["logits_bits"].get<std::vector<std::uint32_t>>());
}

TEST_CASE("load_state_dict refuses with PyTorch's messages and changes nothing", "[safetensors]") {
    const auto& o = gpt_oracle();
    attn::manual_seed(5);
    attn::GPTModel model(config_of(o["config"]));
    const TensorDict before = attn::nn::state_dict(model);
    const auto file = attn::io::load_safetensors(test::oracle_path("safetensors/gpt_small.safetensors")).tensors;
    // The file with one entry left out, one renamed, one added, or one of another shape.
    const auto edited = [&](const std::string& drop, const std::string& add, const Tensor& added) {
        TensorDict d;
        for (const auto& [name, t] : file)
            if (name != drop) d.insert(name, t);
        if (!add.empty()) d.insert(add, added);
        return d;
    };
    const auto refused = [&](const TensorDict& d, bool strict, const std::string& message) {
        INFO(message);
        CHECK_THROWS_MATCHES(attn::nn::load_state_dict(model, d, strict), std::runtime_error,
                             Catch::Message(message));
        CHECK(attn::bitwise_equal(attn::nn::state_dict(model), before));
    };
    const Tensor some = attn::zeros({2});
    refused(edited("trf_blocks.1.att.mask", "", some), true,
            "Error(s) in loading state_dict for GPTModel: Missing key(s) in state_dict: \"trf_blocks.1.att.mask\".");
    refused(edited("", "trf_blocks.0.att.W_query.weight_v", some), true,
            "Error(s) in loading state_dict for GPTModel: Unexpected key(s) in state_dict: "
            "\"trf_blocks.0.att.W_query.weight_v\".");
    refused(edited("final_norm.shift", "out_head.bias", some), true,
            "Error(s) in loading state_dict for GPTModel: Missing key(s) in state_dict: \"final_norm.shift\". "
            "Unexpected key(s) in state_dict: \"out_head.bias\".");
    TensorDict wrong = edited("pos_emb.weight", "pos_emb.weight", attn::zeros({7, 8}));
    refused(wrong, true,
            "Error(s) in loading state_dict for GPTModel: size mismatch for pos_emb.weight: copying a param with "
            "shape torch.Size([7, 8]) from checkpoint, the shape in current model is torch.Size([6, 8]).");
    refused(wrong, false,  // a size mismatch is an error also when not strict, as in PyTorch
            "Error(s) in loading state_dict for GPTModel: size mismatch for pos_emb.weight: copying a param with "
            "shape torch.Size([7, 8]) from checkpoint, the shape in current model is torch.Size([6, 8]).");
    // Not strict: the rest loads, the missing and unexpected keys are returned.
    const auto keys = attn::nn::load_state_dict(model, edited("final_norm.shift", "extra", some), false);
    CHECK(keys.missing_keys == std::vector<std::string>{"final_norm.shift"});
    CHECK(keys.unexpected_keys == std::vector<std::string>{"extra"});
    CHECK(bits_of(attn::nn::state_dict(model).at("out_head.weight")) == bits_of(file.at("out_head.weight")));
    CHECK(bits_of(attn::nn::state_dict(model).at("final_norm.shift")) == bits_of(before.at("final_norm.shift")));
    // PyTorch's rules (checked with torch 1.13 on nn.Sequential(nn.Linear(2, 2, bias=False))): a
    // key naming a module itself, or a part below a parameter, is neither loaded nor
    // unexpected; unexpected keys come module by module (the root's first), not as given.
    CHECK(attn::nn::load_state_dict(model, edited("", "trf_blocks.0", some)).unexpected_keys.empty());
    CHECK(attn::nn::load_state_dict(model, edited("", "tok_emb.weight.x", some)).unexpected_keys.empty());
    TensorDict two = edited("", "out_head.bias", some);
    two.insert("zzz", some);
    CHECK(attn::nn::load_state_dict(model, two, false).unexpected_keys == std::vector<std::string>{"zzz", "out_head.bias"});
}

TEST_CASE("a GPTModel round-trips through a file bit for bit, masks and all", "[safetensors]") {
    attn::manual_seed(11);
    attn::GPTModel a({.vocab_size = 50, .context_length = 9, .emb_dim = 12, .n_heads = 3, .n_layers = 3,
                      .drop_rate = 0.0, .qkv_bias = false});
    attn::manual_seed(12);
    attn::GPTModel b({.vocab_size = 50, .context_length = 9, .emb_dim = 12, .n_heads = 3, .n_layers = 3,
                      .drop_rate = 0.0, .qkv_bias = false});
    REQUIRE_FALSE(attn::bitwise_equal(attn::nn::state_dict(a), attn::nn::state_dict(b)));
    TempDir dir;
    attn::io::save_safetensors(dir.path / "a.safetensors", attn::nn::state_dict(a));
    attn::nn::load_state_dict(b, attn::io::load_safetensors(dir.path / "a.safetensors").tensors);
    CHECK(attn::bitwise_equal(attn::nn::state_dict(a), attn::nn::state_dict(b)));
    const LongTensor ids = attn::randint(0, 50, {2, 9});
    const Tensor la = a(ids), lb = b(ids);
    CHECK(bits_of(la) == bits_of(lb));
}

TEST_CASE("AdamW's state_dict: PyTorch's state per parameter, a float32 step, the hyperparameters", "[safetensors]") {
    attn::manual_seed(3);
    attn::GPTModel model({.vocab_size = 31, .context_length = 5, .emb_dim = 8, .n_heads = 2, .n_layers = 1,
                          .drop_rate = 0.0, .qkv_bias = false});
    attn::optim::AdamW opt(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    CHECK(attn::optim::state_dict(opt).state.empty());  // no step yet: no state, as PyTorch's
    attn::TrainStepState state;
    const LongTensor x = attn::randint(0, 31, {2, 5}), y = attn::randint(0, 31, {2, 5});
    for (int i = 0; i < 2; ++i) attn::train_step(model, opt, x, y, state);
    const attn::optim::AdamWStateDict sd = attn::optim::state_dict(opt);
    CHECK(sd.state.size() == 3 * opt.parameters().size());
    CHECK(sd.state.names()[0] == "state.tok_emb.weight.step");
    CHECK(sd.state.names()[1] == "state.tok_emb.weight.exp_avg");
    CHECK(sd.state.names()[2] == "state.tok_emb.weight.exp_avg_sq");
    const Tensor& step = sd.state.at("state.out_head.weight.step");
    CHECK(attn::shape_of(step).empty());
    CHECK(step() == 2.0f);
    CHECK(sd.param_groups == std::map<std::string, std::string>{
                                 {"optimizer", "AdamW"}, {"lr", "0.0004"}, {"beta1", "0.9"}, {"beta2", "0.999"},
                                 {"eps", "1e-08"}, {"weight_decay", "0.1"}, {"amsgrad", "False"}, {"maximize", "False"}});
}

TEST_CASE("training resumed from the files is the uninterrupted run, bit for bit", "[safetensors]") {
    const attn::GPTConfig cfg{.vocab_size = 97, .context_length = 12, .emb_dim = 24, .n_heads = 4, .n_layers = 2,
                              .drop_rate = 0.1, .qkv_bias = true};
    attn::Generator data(2024);
    std::vector<LongTensor> xs, ys;
    for (int i = 0; i < 6; ++i) xs.push_back(attn::randint(0, 97, {2, 12}, data)), ys.push_back(attn::randint(0, 97, {2, 12}, data));
    TempDir dir;

    // The uninterrupted run: 3 steps, the files written, 3 more steps.
    attn::Generator gen(34);
    attn::GPTModel a(cfg, gen);
    attn::optim::AdamW opt_a(a.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    attn::TrainStepState state_a;
    for (int i = 0; i < 3; ++i) attn::train_step(a, opt_a, xs[i], ys[i], state_a, gen);
    attn::io::save_safetensors(dir.path / "model.safetensors", attn::nn::state_dict(a));
    const attn::optim::AdamWStateDict saved = attn::optim::state_dict(opt_a);
    attn::io::save_safetensors(dir.path / "optimizer.safetensors", saved.state, saved.param_groups);
    const attn::Generator gen_at_save = gen;  // the caller keeps the generator's state, as in PyTorch
    std::vector<Tensor> losses_a;
    for (int i = 3; i < 6; ++i) losses_a.push_back(attn::train_step(a, opt_a, xs[i], ys[i], state_a, gen));

    // The resumed run: another model and optimizer (other weights, default hyperparameters).
    attn::Generator other(99);
    attn::GPTModel b(cfg, other);
    attn::optim::AdamW opt_b(b.named_parameters());
    attn::nn::load_state_dict(b, attn::io::load_safetensors(dir.path / "model.safetensors").tensors);
    const auto opt_file = attn::io::load_safetensors(dir.path / "optimizer.safetensors");
    attn::optim::load_state_dict(opt_b, opt_file.tensors, opt_file.metadata);
    CHECK(opt_b.options.lr == 0.0004);
    CHECK(opt_b.options.weight_decay == 0.1);
    attn::Generator gen_b = gen_at_save;
    attn::TrainStepState state_b;
    for (int i = 3; i < 6; ++i) {
        const Tensor loss = attn::train_step(b, opt_b, xs[i], ys[i], state_b, gen_b);
        CHECK(bits_of(loss) == bits_of(losses_a[static_cast<std::size_t>(i - 3)]));
    }
    CHECK(attn::bitwise_equal(attn::nn::state_dict(a), attn::nn::state_dict(b)));
    const auto sa = attn::optim::state_dict(opt_a), sb = attn::optim::state_dict(opt_b);
    CHECK(attn::bitwise_equal(sa.state, sb.state));
}

TEST_CASE("AdamW's load_state_dict refuses what does not fit and changes nothing", "[safetensors]") {
    attn::manual_seed(3);
    attn::GPTModel model({.vocab_size = 31, .context_length = 5, .emb_dim = 8, .n_heads = 2, .n_layers = 1,
                          .drop_rate = 0.0, .qkv_bias = false});
    attn::optim::AdamW opt(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    attn::TrainStepState state;
    attn::train_step(model, opt, attn::randint(0, 31, {1, 5}), attn::randint(0, 31, {1, 5}), state);
    const attn::optim::AdamWStateDict good = attn::optim::state_dict(opt);
    const auto with = [&](const std::string& key, const Tensor* value) {
        TensorDict d;
        for (const auto& [name, t] : good.state)
            if (name != key) d.insert(name, t);
        if (value != nullptr) d.insert(key, *value);
        return d;
    };
    const auto refused = [&](const TensorDict& d, const std::map<std::string, std::string>& groups,
                             const std::string& substring) {
        INFO(substring);
        CHECK_THAT(thrown<std::invalid_argument>([&] { attn::optim::load_state_dict(opt, d, groups); }),
                   Catch::Contains(substring));
        CHECK(attn::bitwise_equal(attn::optim::state_dict(opt).state, good.state));
        CHECK(opt.options.lr == 0.0004);
    };
    const Tensor zero_step = attn::scalar_tensor(0.0f), half_step = attn::scalar_tensor(1.5f);
    const Tensor vector_step = attn::tensor({1.0f}), wrong_shape = attn::zeros({3});
    refused(with("state.pos_emb.weight.exp_avg", nullptr), {}, "\"state.pos_emb.weight.exp_avg\" is missing");
    refused(with("state.nothing.step", &zero_step), {}, "unexpected key(s) \"state.nothing.step\"");
    refused(with("state.pos_emb.weight.step", &zero_step), {}, "\"state.pos_emb.weight.step\": expected a 0-d tensor");
    refused(with("state.pos_emb.weight.step", &half_step), {}, "holding 1.5");
    refused(with("state.pos_emb.weight.step", &vector_step), {}, "got shape [1]");
    refused(with("state.pos_emb.weight.exp_avg_sq", &wrong_shape), {}, "state.pos_emb.weight.exp_avg_sq");
    refused(good.state, {{"optimizer", "SGD"}}, "expected \"AdamW\", got \"SGD\"");
    refused(good.state, {{"lr", "0.1x"}}, "\"lr\": expected a number, got \"0.1x\"");
    refused(good.state, {{"lr", "-1"}}, "Invalid learning rate");
    refused(good.state, {{"amsgrad", "True"}}, "\"amsgrad\": only \"False\"");
}

TEST_CASE("save_safetensors: nothing written when refused, no half file when the write fails", "[safetensors]") {
    TempDir dir;
    TensorDict d;
    d.insert("__metadata__", attn::zeros({1}));
    CHECK_THAT(thrown<std::invalid_argument>([&] { attn::io::save_safetensors(dir.path / "x.safetensors", d); }),
               Catch::Contains("__metadata__: a tensor may not be named as the metadata"));
    TensorDict bad_utf8;
    bad_utf8.insert("w\xff", attn::zeros({1}));
    CHECK_THROWS_WITH(attn::io::save_safetensors(dir.path / "x.safetensors", bad_utf8),
                      Catch::Contains("the name is not valid UTF-8"));
    TensorDict ok;
    ok.insert("w", attn::ones({2}));
    CHECK_THROWS_WITH(attn::io::save_safetensors(dir.path / "x.safetensors", ok, {{"k", "\xc0\x80"}}),
                      Catch::Contains("__metadata__: the key or value of \"k\" is not valid UTF-8"));
    CHECK(listing(dir.path).empty());
    // Over a directory: the rename fails, the temporary file is removed, the directory stays.
    fs::create_directories(dir.path / "d.safetensors");
    CHECK_THAT(thrown<std::runtime_error>([&] { attn::io::save_safetensors(dir.path / "d.safetensors", ok); }),
               Catch::StartsWith((dir.path / "d.safetensors").string() + ": cannot be written"));
    CHECK(listing(dir.path) == std::vector<std::string>{"d.safetensors"});
    CHECK_THROWS_WITH(attn::io::save_safetensors(dir.path / "no" / "such" / "x.safetensors", ok),
                      Catch::Contains("cannot be written (cannot create"));
    // A file that exists is replaced whole.
    attn::io::save_safetensors(dir.path / "w.safetensors", ok);
    TensorDict bigger;
    bigger.insert("v", attn::ones({100}));
    attn::io::save_safetensors(dir.path / "w.safetensors", bigger);
    CHECK(attn::io::load_safetensors(dir.path / "w.safetensors").tensors.names() == std::vector<std::string>{"v"});
}

TEST_CASE("every truncation and every byte of the header changed: refused or read, never a crash", "[safetensors]") {
    const std::string good = bytes_of(test::oracle_path("safetensors/dtypes.safetensors"));
    std::size_t refused = 0, read = 0;
    const auto attempt = [&](const std::string& bytes) {
        try {
            (void)attn::io::parse_safetensors(bytes, "f");
            ++read;
        } catch (const std::runtime_error& e) {
            ++refused;
            CHECK(std::string(e.what()).rfind("f: ", 0) == 0);
        }
    };
    for (std::size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n));
    CHECK(refused == good.size());  // every truncation is refused
    const std::size_t header_end = 8 + static_cast<unsigned char>(good[0]) + 256u * static_cast<unsigned char>(good[1]);
    for (std::size_t i = 0; i < header_end; ++i)
        for (const char c : {'\0', '"', '{', '[', '9', ' ', '\xff', '-'}) {
            std::string bytes = good;
            bytes[i] = c;
            attempt(bytes);
        }
    CHECK(read > 0);
    CHECK(refused > good.size());
}

// Not a test of its own: tests/check_safetensors.py runs it (ATTN_SAFETENSORS_OUT names a
// directory) to have files the library wrote, which it reads with Python and his model.
TEST_CASE("write files for tests/check_safetensors.py", "[.safetensors_for_python]") {
    const char* out = std::getenv("ATTN_SAFETENSORS_OUT");
    if (out == nullptr) return;
    const attn::GPTConfig cfg = config_of(gpt_oracle()["config"]);
    attn::Generator gen(77);
    attn::GPTModel model(cfg, gen);
    attn::optim::AdamW opt(model.named_parameters(), {.lr = 0.0004, .weight_decay = 0.1});
    attn::TrainStepState state;
    for (int i = 0; i < 2; ++i)
        attn::train_step(model, opt, attn::randint(0, 23, {2, 6}, gen), attn::randint(0, 23, {2, 6}, gen), state, gen);
    const fs::path dir(out);
    attn::io::save_safetensors(dir / "model.safetensors", attn::nn::state_dict(model), {{"format", "pt"}});
    const auto o = attn::optim::state_dict(opt);
    attn::io::save_safetensors(dir / "optimizer.safetensors", o.state, o.param_groups);
    model.eval();
    LongTensor ids = LongTensor::from_shape({2, 6});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 6; ++t) ids(b, t) = gpt_oracle()["ids"][b][t].get<std::int64_t>();
    TensorDict logits;
    logits.insert("logits", model(ids));
    attn::io::save_safetensors(dir / "logits.safetensors", logits);
    // One more step from the saved state: manual_seed(5), the ids, each row's targets the ids
    // shifted left by one (wrapping); the model after it.
    LongTensor targets = LongTensor::from_shape({2, 6});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t t = 0; t < 6; ++t) targets(b, t) = ids(b, (t + 1) % 6);
    model.train();
    attn::manual_seed(5);
    attn::train_step(model, opt, ids, targets, state);
    attn::io::save_safetensors(dir / "after_step.safetensors", attn::nn::state_dict(model));
}

}  // namespace test_safetensors
