// Tests for torch.nn.MultiheadAttention (attn/modules/torch_mha.hpp): forward, weights and
// backward against PyTorch's own module, the cross-attention cache, fast == step.
//
// Expected values come from the oracle: Debian's python3-torch 1.13.1 on the reference BLAS,
// recorded by tools/oracle/cross_attention.py into data/oracle/cross_attention.json (each case's
// parameters, inputs, outputs, weights and gradients as float32 bits). Bound: 0 ulp, NaN where
// PyTorch has NaN. Each case is rebuilt from its seed in the script's order of draws, and the
// draws themselves (weights, inputs, masks) are checked against the recording first.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "oracle.hpp"
#include "support.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/torch_mha.hpp"

namespace test_cross_attention {  // every test file is a namespace of its own (tests/meson.build)

using json = nlohmann::json;
using attn::Tensor;

namespace {

const char* kFile = "cross_attention.json";

// Equal bit for bit, NaN where the other has NaN.
bool same_bits(const Tensor& a, const Tensor& b) {
    if (attn::shape_of(a) != attn::shape_of(b)) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return false;
        } else if (std::bit_cast<std::uint32_t>(x) != std::bit_cast<std::uint32_t>(y)) {
            return false;
        }
    }
    return true;
}

void check_bits(const Tensor& ours, const json& oracle, const std::string& what) {
    INFO(what << ": ours " << attn::shape_str(attn::shape_of(ours)) << ", PyTorch's "
              << oracle["shape"].dump() << "; max |diff| "
              << (attn::shape_of(ours) == oracle["shape"].get<attn::Shape>()
                      ? test::max_abs_diff(ours, test::oracle_bits_tensor(oracle)) : -1.0));
    CHECK(same_bits(ours, test::oracle_bits_tensor(oracle)));
}

attn::BoolTensor bool_tensor(const json& j) {
    attn::BoolTensor t = attn::BoolTensor::from_shape(j["shape"].get<attn::Shape>());
    const auto& v = j["bool"];
    REQUIRE(v.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = v[i].get<bool>();
    return t;
}

attn::MultiheadAttentionConfig config_of(const json& m) {
    attn::MultiheadAttentionConfig c{.embed_dim = m["embed_dim"], .num_heads = m["num_heads"]};
    if (m.contains("dropout")) c.dropout = m["dropout"];
    if (m.contains("bias")) c.bias = m["bias"];
    if (m.contains("add_bias_kv")) c.add_bias_kv = m["add_bias_kv"];
    if (m.contains("add_zero_attn")) c.add_zero_attn = m["add_zero_attn"];
    if (m.contains("kdim")) c.kdim = m["kdim"].get<std::size_t>();
    if (m.contains("vdim")) c.vdim = m["vdim"].get<std::size_t>();
    if (m.contains("batch_first")) c.batch_first = m["batch_first"];
    return c;
}

// One recorded case rebuilt: the module after its seed, the inputs and masks drawn in the
// script's order (checked against the recording), the forward's arguments.
struct Case {
    attn::MultiheadAttention mha;
    Tensor query, key, value;
    std::optional<attn::BoolTensor> kpm, mask;
    std::optional<Tensor> bias;
    bool self = false, key_is_value = false;
    attn::MultiheadAttentionArgs args() const {
        attn::MultiheadAttentionArgs a;
        a.key_padding_mask = kpm ? &*kpm : nullptr;
        a.attn_mask = mask ? &*mask : nullptr;
        a.attn_bias = bias ? &*bias : nullptr;
        return a;
    }
};

// The script's `pokes` into `tensor` ("query", "key", "value", "grad_output"): values rand and
// randn never give, set after the draws.
void poke(const json& c, const std::string& tensor, Tensor& t) {
    if (!c.contains("pokes")) return;
    for (const auto& p : c["pokes"]) {
        if (p["tensor"] != tensor) continue;
        const auto index = p["index"].get<std::vector<std::size_t>>();
        REQUIRE(index.size() == t.dimension());
        std::size_t flat = 0;
        for (std::size_t d = 0; d < index.size(); ++d) flat = flat * t.shape()[d] + index[d];
        t.data()[flat] = std::bit_cast<float>(p["bits"].get<std::uint32_t>());
    }
}

// grad_output as the script draws it (randn), poked.
Tensor grad_output_of(const json& c, const attn::Shape& shape) {
    Tensor g = attn::randn(shape);
    poke(c, "grad_output", g);
    return g;
}

Case rebuild(const json& c) {
    attn::manual_seed(c["seed"].get<std::uint64_t>());
    Case k{attn::MultiheadAttention(config_of(c["module"])), {}, {}, {}, {}, {}, {}};
    k.self = c["self_attention"];
    k.key_is_value = c["key_is_value"];
    for (const auto& p : k.mha.named_parameters()) check_bits(*p.value, c["params"][p.name], "parameter " + p.name);
    CHECK(k.mha.named_parameters().size() == c["params"].size());
    k.query = attn::rand(c["query"]["shape"].get<attn::Shape>());
    poke(c, "query", k.query);
    check_bits(k.query, c["query"], "query");
    if (!k.self) {
        k.key = attn::rand(c["key"]["shape"].get<attn::Shape>());
        poke(c, "key", k.key);
        check_bits(k.key, c["key"], "key");
        if (!k.key_is_value) {
            k.value = attn::rand(c["value"]["shape"].get<attn::Shape>());
            poke(c, "value", k.value);
            check_bits(k.value, c["value"], "value");
        }
    }
    // The masks, drawn as the script's draw_mask() draws them, then compared with its record.
    const auto draw_bool = [](const json& spec) {
        const std::string kind = spec[0];
        if (kind == "rand_lt") {
            const Tensor r = attn::rand(spec[1].get<attn::Shape>());
            attn::BoolTensor m = attn::BoolTensor::from_shape(attn::shape_of(r));
            for (std::size_t i = 0; i < r.size(); ++i) m.data()[i] = r.data()[i] < spec[2].get<float>();
            return m;
        }
        if (kind == "triu") {
            const std::size_t L = spec[1], S = spec[2];
            attn::BoolTensor m = attn::BoolTensor::from_shape({L, S});
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < S; ++j) m(i, j) = j > i;
            return m;
        }
        REQUIRE(kind == "rows");
        const auto rows = spec[1].get<std::vector<std::vector<bool>>>();
        attn::BoolTensor m = attn::BoolTensor::from_shape({rows.size(), rows.at(0).size()});
        for (std::size_t i = 0; i < rows.size(); ++i)
            for (std::size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j];
        return m;
    };
    if (c.contains("key_padding_mask")) {
        k.kpm = draw_bool(c["key_padding_mask"]["draw"]);
        CHECK((*k.kpm == bool_tensor(c["key_padding_mask"])));
    }
    if (c.contains("attn_mask")) {
        const auto& j = c["attn_mask"];
        if (j["draw"][0] == "randn") {
            k.bias = attn::randn(j["draw"][1].get<attn::Shape>());
            check_bits(*k.bias, j, "attn_mask (float)");
        } else {
            k.mask = draw_bool(j["draw"]);
            CHECK((*k.mask == bool_tensor(j)));
        }
    }
    return k;
}

attn::MultiheadAttentionOutput forward(const Case& k, attn::MultiheadAttentionArgs a,
                                       attn::MultiheadAttentionSaved* saved = nullptr) {
    const Tensor& key = k.self ? k.query : k.key;
    const Tensor& value = k.self ? k.query : k.key_is_value ? key : k.value;
    if (saved) return k.mha.forward(k.query, key, value, a, *saved);
    return k.mha(k.query, key, value, a);
}

}  // namespace

// PyTorch 1.13's baddbmm adds a float attn_mask before the products when a head's scores take
// fewer than 400 multiply-adds (its naive kernel starts each sum from the mask) and after them
// otherwise (BLAS); the core adds it after. That one case is compared within a bound (below).
bool mask_added_first(const json& c) { return c["name"] == "float_mask_small"; }

TEST_CASE("nn.MultiheadAttention: outputs, weights and every gradient are PyTorch's bits (oracle, 0 ulp)") {
    for (const auto& c : test::oracle_file(kFile)["cases"]) {
        const std::string name = c["name"];
        if (mask_added_first(c)) continue;
        SECTION(name) {
            INFO(c["python"].get<std::string>());
            Case k = rebuild(c);
            attn::MultiheadAttentionArgs a = k.args();
            a.need_weights = c["need_weights"];
            a.average_attn_weights = c["average_attn_weights"];
            attn::MultiheadAttentionSaved saved;
            const attn::MultiheadAttentionOutput out = forward(k, a, &saved);
            check_bits(out.attn_output, c["attn_output"], "attn_output");
            if (a.need_weights) {
                REQUIRE(out.attn_output_weights.has_value());
                check_bits(*out.attn_output_weights, c["attn_output_weights"], "attn_output_weights");
            } else {
                CHECK_FALSE(out.attn_output_weights.has_value());
            }
            const Tensor grad_output = grad_output_of(c, attn::shape_of(out.attn_output));
            check_bits(grad_output, c["grad_output"], "grad_output");
            const attn::MultiheadAttentionGrads g = k.mha.backward(saved, grad_output);
            for (const auto& p : k.mha.named_parameters()) {
                REQUIRE(p.grad->has_value());
                check_bits(**p.grad, c["grads"][p.name], "grad of " + p.name);
            }
            check_bits(g.query, c["query_grad"], "query.grad");
            CHECK(g.key.has_value() == c.contains("key_grad"));
            if (g.key) check_bits(*g.key, c["key_grad"], "key.grad");
            CHECK(g.value.has_value() == c.contains("value_grad"));
            if (g.value) check_bits(*g.value, c["value_grad"], "value.grad");
        }
    }
}

TEST_CASE("a float attn_mask on a small head: within 2 ulp of PyTorch, which adds the mask before the products") {
    const json& c = test::oracle_case(kFile, "float_mask_small");
    Case k = rebuild(c);
    attn::MultiheadAttentionSaved saved;
    const auto out = forward(k, k.args(), &saved);
    // The scores differ by the rounding of one addition (the mask's place in the sum): a few
    // ulp after the softmax and the products, never more.
    CHECK(test::max_ulp(out.attn_output, test::oracle_bits_tensor(c["attn_output"])) <= 2);
    CHECK(test::max_ulp(*out.attn_output_weights, test::oracle_bits_tensor(c["attn_output_weights"])) <= 2);
    const Tensor grad_output = attn::randn(attn::shape_of(out.attn_output));
    const attn::MultiheadAttentionGrads g = k.mha.backward(saved, grad_output);
    CHECK(test::max_ulp(g.query, test::oracle_bits_tensor(c["query_grad"])) <= 8);
    CHECK(test::max_ulp(*g.key, test::oracle_bits_tensor(c["key_grad"])) <= 8);
}

TEST_CASE("nn.MultiheadAttention: the fast backend gives the step backend's bits, with and without weights") {
    for (const auto& c : test::oracle_file(kFile)["cases"]) {
        const std::string name = c["name"];
        if (c["module"].contains("dropout")) continue;  // a dropout forward draws: compared in one draw below
        if (mask_added_first(c)) continue;
        INFO(name);
        Case k = rebuild(c);
        for (const bool need_weights : {false, true}) {
            attn::MultiheadAttentionArgs a = k.args();
            a.need_weights = need_weights;
            Tensor step, fast;
            {
                const attn::SDPABackendGuard g(attn::SDPABackend::step);
                step = forward(k, a).attn_output;
            }
            {
                const attn::SDPABackendGuard g(attn::SDPABackend::fast);
                fast = forward(k, a).attn_output;
            }
            CHECK(same_bits(step, fast));
            check_bits(fast, c["attn_output"], "attn_output (need_weights = " + std::to_string(need_weights) + ")");
        }
    }
}

TEST_CASE("nn.MultiheadAttention's backward: the fast backend gives the step backend's bits, every gradient") {
    for (const auto& c : test::oracle_file(kFile)["cases"]) {
        INFO(c["name"].get<std::string>());
        const auto run = [&](attn::SDPABackend backend) {
            Case k = rebuild(c);  // the same draws (dropout included) on both backends
            const attn::SDPABackendGuard guard(backend);
            attn::MultiheadAttentionSaved saved;
            const auto out = forward(k, k.args(), &saved);
            const attn::MultiheadAttentionGrads g = k.mha.backward(saved, grad_output_of(c, attn::shape_of(out.attn_output)));
            std::vector<Tensor> grads{g.query};
            if (g.key) grads.push_back(*g.key);
            if (g.value) grads.push_back(*g.value);
            for (const auto& p : k.mha.named_parameters()) grads.push_back(**p.grad);
            return grads;
        };
        const std::vector<Tensor> step = run(attn::SDPABackend::step), fast = run(attn::SDPABackend::fast);
        REQUIRE(step.size() == fast.size());
        for (std::size_t i = 0; i < step.size(); ++i) CHECK(same_bits(step[i], fast[i]));
    }
}

TEST_CASE("nn.MultiheadAttention with dropout: one mask, the same on every backend and with or without weights") {
    const json& c = test::oracle_case(kFile, "dropout");
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast}) {
        for (const bool need_weights : {false, true}) {
            Case k = rebuild(c);  // the generator stands where the recorded forward drew its mask
            attn::MultiheadAttentionArgs a = k.args();
            a.need_weights = need_weights;
            const attn::SDPABackendGuard g(backend);
            check_bits(forward(k, a).attn_output, c["attn_output"], "attn_output");
            // The generator advanced by the mask's draws only: grad_output is next.
            check_bits(attn::randn(attn::shape_of(test::oracle_bits_tensor(c["grad_output"]))), c["grad_output"],
                       "the draw after the forward");
        }
    }
}

TEST_CASE("the cross-attention cache: the memory projected once gives the uncached bits at every decoding step") {
    for (const char* name : {"cross_padded", "separate_seq_first", "larger_causal_rect"}) {
        INFO(name);
        const json& c = test::oracle_case(kFile, name);
        Case k = rebuild(c);
        const Tensor& value = k.key_is_value ? k.key : k.value;
        const attn::KVCache memory = k.mha.memory_cache(k.key, value);
        const std::size_t S = k.mha.batch_first ? k.key.shape()[1] : k.key.shape()[0];
        CHECK(memory.pos == S + (k.mha.bias_k ? 1 : 0) + (k.mha.add_zero_attn ? 1 : 0));
        attn::MultiheadAttentionArgs a = k.args();
        a.attn_mask = nullptr;  // a decoding step's query sees the whole memory
        a.attn_bias = nullptr;
        const long L = static_cast<long>(k.mha.batch_first ? k.query.shape()[1] : k.query.shape()[0]);
        for (long t = 1; t <= L; ++t) {  // the queries grow as a decoder's would
            const Tensor q = attn::slice(k.query, k.mha.batch_first ? 1 : 0, 0, t);
            const auto cached = k.mha(q, memory, a);
            const auto full = k.mha(q, k.key, value, a);
            CHECK(same_bits(cached.attn_output, full.attn_output));
            CHECK(same_bits(*cached.attn_output_weights, *full.attn_output_weights));
        }
    }
}

TEST_CASE("nn.MultiheadAttention: a fully padded source row is NaN, as PyTorch 1.13 returns it") {
    attn::manual_seed(123);
    const attn::MultiheadAttention mha({.embed_dim = 8, .num_heads = 2, .batch_first = true});
    const Tensor x = attn::rand({2, 3, 8}), memory = attn::rand({2, 5, 8});
    attn::BoolTensor pad = attn::BoolTensor::from_shape({2, 5});
    for (std::size_t j = 0; j < 5; ++j) {
        pad(0, j) = false;
        pad(1, j) = true;
    }
    const auto out = mha(x, memory, memory, {.key_padding_mask = &pad});
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t e = 0; e < 8; ++e) {
            CHECK_FALSE(std::isnan(out.attn_output(0, t, e)));
            CHECK(std::isnan(out.attn_output(1, t, e)));
        }
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t j = 0; j < 5; ++j) CHECK(std::isnan((*out.attn_output_weights)(1, t, j)));
}

TEST_CASE("nn.MultiheadAttention prints as PyTorch prints it, its parameters in PyTorch's order") {
    attn::manual_seed(123);
    attn::MultiheadAttention mha({.embed_dim = 8, .num_heads = 2, .batch_first = true});
    CHECK(attn::repr(mha) == "MultiheadAttention(\n"
                             "  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
                             ")");
    std::vector<std::string> names;
    for (const auto& p : mha.named_parameters()) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
    attn::MultiheadAttention kv({.embed_dim = 8, .num_heads = 2, .add_bias_kv = true, .kdim = 6, .vdim = 4});
    names.clear();
    for (const auto& p : kv.named_parameters()) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                            "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"});
}

}  // namespace test_cross_attention
