// Tests of Gated DeltaNet and gated attention (chapter 18).
//
// Expected values come from the oracle data/oracle/deltanet.json, recorded from Debian's
// python3-torch on the reference BLAS by tools/oracle/deltanet.py with Raschka's classes
// (ch04/08_deltanet/README.md with pull request #1033, copied into the script): printed text
// is compared exactly, values within kUlps float32 ulps (values within 1e-7 absolute count as
// equal). Decoding with the state or the cache is compared with the full recomputation (a
// relation), at every step; the chunked form of the rule with the recurrent one.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/modules/deltanet.hpp"
#include "attn/modules/gated_attention.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/elementwise.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"

namespace test_deltanet {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using json = nlohmann::json;
constexpr long long kUlps = 4;  // the stated bound for every oracle value

// The outputs of feeding x [b, T, d] in chunks of `chunk` through `step`, concatenated.
template <class Step>
attn::Tensor in_chunks(const attn::Tensor& x, std::size_t chunk, Step step) {
    std::vector<attn::Tensor> outs;
    const long T = static_cast<long>(x.shape()[1]);
    for (long i = 0; i < T; i += static_cast<long>(chunk))
        outs.push_back(step(attn::slice(x, 1, i, std::min(T, i + static_cast<long>(chunk)))));
    return attn::cat(outs, 1);
}

// The state after `gdn` has run over x from zeros.
attn::Tensor final_state(const attn::GatedDeltaNet& gdn, const attn::Tensor& x) {
    attn::DeltaNetState state;
    gdn.forward(x, state);
    return state.S;
}

}  // namespace

// ============================================================================ GatedDeltaNet

TEST_CASE("GatedDeltaNet with seed 123 on the book's batch equals PyTorch: repr, draws, output, state") {
    const json& c = test::oracle_case("deltanet.json", "gdn_book_s123");
    const json& o = c["outputs"];
    attn::manual_seed(123);
    const attn::GatedDeltaNet gdn({.d_in = 3, .d_out = 4, .dropout = 0.0, .num_heads = 2});
    CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
    CHECK(attn::repr(gdn) == c["repr"].get<std::string>());
    CHECK(test::max_ulp(gdn.A_log, test::oracle_tensor(o["A_log"])) == 0);
    CHECK(attn::repr(gdn.dt_bias) == o["dt_bias"]["repr"].get<std::string>());
    const attn::Tensor out = gdn(test::book_batch());
    CHECK(attn::repr(out) == o["context_vecs"]["repr"].get<std::string>());
    CHECK(test::max_ulp(out, test::oracle_tensor(o["context_vecs"])) <= kUlps);
    const attn::Tensor S = final_state(gdn, test::book_batch());
    CHECK(attn::repr(S) == o["state"]["repr"].get<std::string>());
    CHECK(test::max_ulp(S, test::oracle_tensor(o["state"])) <= kUlps);
}

TEST_CASE("GatedDeltaNet equals PyTorch with biases, 3 heads, centred inputs, and head_dim 32") {
    struct Case {
        const char* name;
        std::uint64_t seed;
        attn::GatedDeltaNetConfig config;
        attn::Shape x_shape;
        float shift;
    };
    const std::vector<Case> cases{
        {"gdn_s7", 7, {.d_in = 6, .d_out = 12, .num_heads = 3, .qkv_bias = true}, {2, 19, 6}, 0.5f},
        {"gdn_hd32_s11", 11, {.d_in = 8, .d_out = 64, .num_heads = 2}, {1, 9, 8}, 0.0f}};
    for (const Case& k : cases) {
        INFO(k.name);
        const json& o = test::oracle_case("deltanet.json", k.name)["outputs"];
        attn::manual_seed(k.seed);
        const attn::GatedDeltaNet gdn(k.config);
        const attn::Tensor x = attn::rand(k.x_shape) - k.shift;
        CHECK(test::max_abs_diff(x, test::oracle_tensor(o["x"])) == 0.0);
        CHECK(test::max_ulp(gdn.A_log, test::oracle_tensor(o["A_log"])) == 0);
        CHECK(test::max_ulp(gdn(x), test::oracle_tensor(o["context_vecs"])) <= kUlps);
        CHECK(test::max_ulp(final_state(gdn, x), test::oracle_tensor(o["state"])) <= kUlps);
    }
}

TEST_CASE("GatedDeltaNet in training mode draws PyTorch's dropout mask on the gated context") {
    const json& o = test::oracle_case("deltanet.json", "gdn_train_s5")["outputs"];
    attn::manual_seed(5);
    const attn::GatedDeltaNet gdn({.d_in = 4, .d_out = 8, .dropout = 0.3, .num_heads = 2});
    const attn::Tensor x = attn::rand({2, 5, 4});
    CHECK(test::max_abs_diff(x, test::oracle_tensor(o["x"])) == 0.0);
    CHECK(test::max_ulp(gdn(x), test::oracle_tensor(o["context_vecs"])) <= kUlps);
}

TEST_CASE("control: the delta rule without its decay gives PyTorch's state", "[!shouldfail]") {
    const json& o = test::oracle_case("deltanet.json", "gdn_book_s123")["outputs"];
    attn::manual_seed(123);
    const attn::GatedDeltaNet gdn({.d_in = 3, .d_out = 4, .dropout = 0.0, .num_heads = 2});
    const auto g = gdn.gates(test::book_batch());
    attn::Tensor state;  // alpha = 1: the state forgets nothing (a deliberately wrong rule)
    attn::gated_delta_rule(g.queries, g.keys, g.values, attn::zeros(attn::shape_of(g.alpha_log)), g.beta, state);
    CHECK(test::max_ulp(state, test::oracle_tensor(o["state"])) <= kUlps);
}

TEST_CASE("GatedDeltaNet decoding with its state equals recomputation at every step, chunks 1..20") {
    attn::Generator gen(41);
    const attn::GatedDeltaNet gdn({.d_in = 6, .d_out = 16, .num_heads = 4, .qkv_bias = true}, gen);
    const attn::Tensor x = attn::randn({2, 64, 6}, gen);
    for (std::size_t chunk = 1; chunk <= 20; ++chunk) {
        INFO("chunk " << chunk);
        attn::DeltaNetState state;
        const double worst = test::decode_gap(
            x, chunk,
            [&](const attn::Tensor& xs, long, long end) {
                attn::Tensor step = gdn.forward(xs, state);
                CHECK(state.pos == std::size_t(end));
                return step;
            },
            [&](const attn::Tensor& prefix) { return gdn(prefix); });
        // the gates' kernels round the last bit by position (elementwise.hpp): not bit for bit
        CHECK(worst <= 1e-6);
        // the state does not grow: b * H * hd * hd floats after any number of tokens
        CHECK(state.bytes() == 2 * 4 * 4 * 4 * sizeof(float));
    }
}

TEST_CASE("the gated delta rule: the chunked form equals the recurrent one within rounding") {
    attn::Generator gen(3);
    const attn::GatedDeltaNet gdn({.d_in = 8, .d_out = 32, .num_heads = 2}, gen);
    const auto g = gdn.gates(attn::randn({2, 50, 8}, gen));
    attn::Tensor s_rec;
    const attn::Tensor y_rec = attn::gated_delta_rule(g.queries, g.keys, g.values, g.alpha_log, g.beta, s_rec);
    for (const std::size_t chunk : {1, 7, 16, 64}) {
        INFO("chunk " << chunk);
        attn::Tensor s_chunk;
        const attn::Tensor y = attn::gated_delta_rule_chunked(g.queries, g.keys, g.values, g.alpha_log, g.beta,
                                                              s_chunk, chunk);
        CHECK(test::max_abs_diff(y, y_rec) <= 1e-5);
        CHECK(test::max_abs_diff(s_chunk, s_rec) <= 1e-5);
    }
    // the module's own loop is the recurrent form
    attn::DeltaNetState state;
    gdn.forward(attn::randn({2, 50, 8}, gen), state);
    CHECK_THROWS_WITH(attn::gated_delta_rule_chunked(g.queries, g.keys, g.values, g.alpha_log, g.beta, s_rec, 0),
                      Catch::Contains("chunk_size"));
}

TEST_CASE("GatedDeltaNet: NaN in a token reaches that token and every later one only") {
    attn::manual_seed(123);
    const attn::GatedDeltaNet gdn({.d_in = 3, .d_out = 4, .dropout = 0.0, .num_heads = 2});
    attn::Tensor x = test::book_batch();
    x(0, 3, 1) = std::numeric_limits<float>::quiet_NaN();
    const attn::Tensor out = gdn(x);
    for (std::size_t t = 0; t < 6; ++t) CHECK(std::isnan(out(0, t, 0)) == (t >= 3));
    CHECK(!std::isnan(out(1, 5, 0)));
}

TEST_CASE("GatedDeltaNet configurations, changed fields and states that cannot work throw, naming them") {
    using C = attn::GatedDeltaNetConfig;
    test::require_invalid([] { attn::GatedDeltaNet m(C{.d_in = 3, .d_out = 4, .num_heads = 3}); },
                          {"d_out must be divisible by num_heads"});
    test::require_invalid([] { attn::GatedDeltaNet m(C{.d_in = 0, .d_out = 4, .num_heads = 2}); }, {"d_in"});
    test::require_invalid([] { attn::GatedDeltaNet m(C{.d_in = 3, .d_out = 4, .dropout = 1.5, .num_heads = 2}); },
                          {"dropout"});
    attn::manual_seed(1);
    attn::GatedDeltaNet gdn({.d_in = 3, .d_out = 4, .num_heads = 2});
    test::require_invalid([&] { gdn(attn::zeros({2, 6, 5})); }, {"GatedDeltaNet", "5"});
    gdn.W_alpha = attn::nn::Linear(3, 3, false);
    test::require_invalid([&] { gdn(test::book_batch()); }, {"W_alpha"});
    gdn.W_alpha = attn::nn::Linear(3, 2, false);
    gdn.A_log = attn::zeros({3});
    test::require_invalid([&] { gdn(test::book_batch()); }, {"A_log", "[2]", "[3]"});
    gdn.A_log = attn::zeros({2});
    gdn.norm = attn::nn::RMSNorm(4, 1e-6);
    test::require_invalid([&] { gdn(test::book_batch()); }, {"norm.weight"});
    gdn.norm = attn::nn::RMSNorm(2, 1e-6);
    attn::DeltaNetState state;
    gdn.forward(test::book_batch(), state);
    test::require_invalid([&] { gdn.forward(attn::zeros({1, 2, 3}), state); }, {"state.S", "[1, 2, 2, 2]"});
    CHECK(state.pos == 6);  // unchanged
    test::require_invalid([] { attn::nn::RMSNorm n(4, -1.0); }, {"eps"});
}

TEST_CASE("RMSNorm and the gates' elementwise functions") {
    attn::nn::RMSNorm norm(3);  // eps unset: float32's epsilon
    CHECK(attn::nn::repr(norm) == "RMSNorm((3,), eps=None, elementwise_affine=True)");
    const attn::Tensor y = norm(attn::tensor({{3.0f, 0.0f, -4.0f}}));
    const float r = std::sqrt(25.0f / 3.0f + std::numeric_limits<float>::epsilon());
    CHECK(y(0, 0) == 3.0f * (1.0f / r));
    CHECK(attn::repr(attn::relu(attn::tensor({-1.0f, -0.0f, 2.0f}))) == "tensor([0., -0., 2.])");
    CHECK(attn::sigmoid(attn::tensor({0.0f}))(0) == 0.5f);
    CHECK(attn::softplus(attn::tensor({30.0f}))(0) == 30.0f);  // beyond the threshold: x itself
    CHECK(std::isinf(attn::log(attn::tensor({0.0f}))(0)));
}

TEST_CASE("the estimator's DeltaNet state is the state a GatedDeltaNet holds, at any context") {
    attn::Generator gen(5);
    const attn::GatedDeltaNet gdn({.d_in = 8, .d_out = 24, .num_heads = 3}, gen);
    attn::DeltaNetState state;
    gdn.forward(attn::rand({2, 40, 8}, gen), state);
    CHECK(state.bytes() == attn::deltanet_state_bytes_per_layer(2, 3, 8, sizeof(float)));
    attn::KVMemoryConfig cfg{.batch = 2, .context_length = 40, .emb_dim = 24, .num_heads = 3, .num_kv_heads = 3,
                             .num_layers = 5, .bytes_per_elem = 4, .deltanet_state = true};
    CHECK(attn::kv_cache_total_bytes(cfg) == 5 * state.bytes());
    cfg.context_length = 4000;  // the state does not grow; its share per token shrinks
    CHECK(attn::kv_cache_total_bytes(cfg) == 5 * state.bytes());
    CHECK(attn::kv_cache_bytes_per_token(cfg) == Approx(5.0 * double(state.bytes()) / (2 * 4000)));
    // his plot_memory_estimates_gated_deltanet.py with its defaults (batch 1, emb_dim 2048,
    // 16 heads, 48 layers, bf16): per layer 1 * 16 * 128 * 128 * 2 bytes, the same at 128 and
    // at 131072 tokens; his MHA line at 131072 tokens: 131072 * 16 * 128 * 2 * 2 bytes per layer
    attn::KVMemoryConfig his{.context_length = 128, .emb_dim = 2048, .num_heads = 16, .num_kv_heads = 16,
                             .num_layers = 48, .bytes_per_elem = 2, .deltanet_state = true};
    CHECK(attn::kv_cache_total_bytes(his) == 48ull * 16 * 128 * 128 * 2);
    his.context_length = 131072;
    CHECK(attn::kv_cache_total_bytes(his) == 48ull * 16 * 128 * 128 * 2);
    his.deltanet_state = false;
    CHECK(attn::kv_cache_total_bytes(his) == 48ull * 131072 * 16 * 128 * 2 * 2);
    cfg.latent_dim = 16;
    test::require_invalid([&] { attn::kv_cache_total_bytes(cfg); }, {"deltanet_state", "latent_dim"});
    CHECK_THROWS_AS(attn::deltanet_state_bytes_per_layer(std::size_t{1} << 40, 1, std::size_t{1} << 20, 4),
                    std::length_error);
}

// ============================================================================ gated attention

TEST_CASE("GatedMultiHeadAttention with seed 123 on the book's batch equals PyTorch") {
    const json& c = test::oracle_case("deltanet.json", "gated_mha_book_s123");
    attn::manual_seed(123);
    const attn::GatedMultiHeadAttention gmha({.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0,
                                              .num_heads = 2});
    CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
    CHECK(attn::repr(gmha) == c["repr"].get<std::string>());
    const attn::Tensor out = gmha(test::book_batch());
    const json& expected = c["outputs"]["context_vecs"];
    CHECK(attn::repr(out) == expected["repr"].get<std::string>());
    CHECK(test::max_ulp(out, test::oracle_tensor(expected)) <= kUlps);
}

TEST_CASE("GatedMultiHeadAttention in training mode draws PyTorch's dropout mask") {
    const json& o = test::oracle_case("deltanet.json", "gated_mha_train_s9")["outputs"];
    attn::manual_seed(9);
    const attn::GatedMultiHeadAttention gmha({.d_in = 5, .d_out = 8, .context_length = 7, .dropout = 0.2,
                                              .num_heads = 2, .qkv_bias = true});
    const attn::Tensor x = attn::rand({2, 7, 5});
    CHECK(test::max_abs_diff(x, test::oracle_tensor(o["x"])) == 0.0);
    CHECK(test::max_ulp(gmha(x), test::oracle_tensor(o["context_vecs"])) <= kUlps);
}

TEST_CASE("GatedMultiHeadAttention decoding equals recomputation at every step, chunks 1..20; fast == step") {
    attn::Generator gen(43);
    const attn::GatedMultiHeadAttention gmha({.d_in = 6, .d_out = 16, .context_length = 64, .num_heads = 4}, gen);
    const attn::Tensor x = attn::randn({2, 64, 6}, gen);
    for (std::size_t chunk = 1; chunk <= 20; ++chunk) {
        INFO("chunk " << chunk);
        attn::KVCache cache;
        const double worst = test::decode_gap(
            x, chunk, [&](const attn::Tensor& xs, long, long) { return gmha.forward(xs, cache); },
            [&](const attn::Tensor& prefix) { return gmha(prefix); });
        CHECK(worst <= 1e-6);
        CHECK(cache.pos == 64);
    }
    const auto run = [&](attn::SDPABackend backend) {
        attn::SDPABackendGuard guard(backend);
        attn::KVCache cache;
        return attn::cat({gmha(x), in_chunks(x, 9, [&](const attn::Tensor& t) { return gmha.forward(t, cache); })}, 1);
    };
    CHECK(test::max_abs_diff(run(attn::SDPABackend::fast), run(attn::SDPABackend::step)) == 0.0);
    attn::KVCache full;
    gmha.forward(x, full);
    test::require_invalid([&] { gmha.forward(attn::slice(x, 1, 0, 1), full); },
                          {"beyond the context", "context_length = 64"});
}

}  // namespace test_deltanet
