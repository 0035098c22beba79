// Tests of multi-head latent attention (chapter 15), keys and values shared across layers
// (chapter 16) and their memory estimates.
//
// Module outputs come from the oracle data/oracle/mla_sharing.json, recorded from Debian's
// python3-torch 1.13.1 on the reference BLAS by tools/oracle/mla_sharing.py with Raschka's
// classes (ch04/05_mla, ch04/10_kv-sharing, copied into the script): printed text is compared
// exactly, values within kUlps float32 ulps (values within 1e-7 absolute count as equal).
// Cached decoding is compared with the full recomputation at every step (a relation). The
// estimates are compared with the figures Raschka's READMEs print for his estimators'
// arguments (ch04/05_mla/README.md, ch04/10_kv-sharing/README.md): GB to two decimals, ratios
// and savings as his script formats them.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/attention/kv_memory.hpp"
#include "attn/modules/kv_sharing.hpp"
#include "attn/modules/mla.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"

namespace test_mla_sharing {  // every test file is a namespace of its own (tests/meson.build)

namespace {

// Python's f"{x:,.2f}" for the values these tests meet (below 1000: no thousands separator).
std::string two_decimals(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", x);
    return buf;
}

// convert_bytes of his estimators: 10^9 bytes to a GB.
std::string gb(std::size_t bytes) { return two_decimals(static_cast<double>(bytes) / 1e9) + " GB"; }

constexpr std::size_t kBf16 = 2;

using json = nlohmann::json;
constexpr long long kUlps = 4;  // the stated bound for every oracle value

attn::MultiHeadLatentAttentionConfig book_mla(std::optional<std::size_t> latent_dim) {
    return {.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0, .num_heads = 2,
            .latent_dim = latent_dim};
}

const attn::MultiHeadAttentionWithKVSharingConfig kBookSharing{.d_in = 3, .d_out = 4, .context_length = 6,
                                                                .dropout = 0.0, .num_heads = 2};

// The outputs of feeding x [b, T, d] in chunks of `chunk` through `step`, concatenated.
template <class Step>
attn::Tensor in_chunks(const attn::Tensor& x, std::size_t chunk, Step step) {
    std::vector<attn::Tensor> outs;
    const long T = static_cast<long>(x.shape()[1]);
    for (long i = 0; i < T; i += static_cast<long>(chunk))
        outs.push_back(step(attn::slice(x, 1, i, std::min(T, i + static_cast<long>(chunk)))));
    return attn::cat(outs, 1);
}

// Feeds x [b, 64, d] in chunks of 1..20 through `cached` (a fresh cache per chunk size, made
// by `fresh`) and returns the largest difference from `full` over the prefix at every step.
template <class Fresh, class Cached, class Full>
double worst_decode_gap(const attn::Tensor& x, Fresh fresh, Cached cached, Full full) {
    double worst = 0.0;
    for (std::size_t chunk = 1; chunk <= 20; ++chunk) {
        auto cache = fresh();
        worst = std::max(worst, test::decode_gap(
                                    x, chunk, [&](const attn::Tensor& xs, long, long) { return cached(xs, cache); },
                                    full));
    }
    return worst;
}

}  // namespace

// ============================================================================ MLA

TEST_CASE("MultiHeadLatentAttention with seed 123 on the book's batch equals PyTorch (latent_dim 2 and None)") {
    for (const auto& [name, latent] : {std::pair{"mla_book_s123", std::optional<std::size_t>(2)},
                                       {"mla_default_s123", std::optional<std::size_t>()}}) {
        INFO(name);
        const json& c = test::oracle_case("mla_sharing.json", name);
        attn::manual_seed(123);
        const attn::MultiHeadLatentAttention mla(book_mla(latent));
        CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
        CHECK(mla.latent_dim == c["latent_dim"].get<std::size_t>());
        CHECK(attn::repr(mla) == c["repr"].get<std::string>());
        const attn::Tensor out = mla(test::book_batch());
        const json& expected = c["outputs"]["context_vecs"];
        CHECK(attn::repr(out) == expected["repr"].get<std::string>());
        CHECK(test::max_ulp(out, test::oracle_tensor(expected)) <= kUlps);
        // The cache holds the latents only: his cache_c_kv, [b, T, latent_dim].
        attn::KVCache cache = mla.make_cache();
        CHECK(test::max_ulp(mla.forward(test::book_batch(), cache), out) == 0);
        const json& latents = c["outputs"]["cache_c_kv"];
        if (latents.contains("repr")) CHECK(attn::repr(cache.key) == latents["repr"].get<std::string>());
        CHECK(test::max_ulp(cache.key, test::oracle_tensor(latents)) <= kUlps);
        CHECK(cache.bytes() == 2 * 6 * mla.latent_dim * sizeof(float));
    }
}

TEST_CASE("MLA in training mode draws PyTorch's dropout mask") {
    const json& c = test::oracle_case("mla_sharing.json", "mla_train_s5");
    attn::manual_seed(5);
    const attn::MultiHeadLatentAttention mla({.d_in = 4, .d_out = 8, .context_length = 5, .dropout = 0.3,
                                              .num_heads = 4, .qkv_bias = true, .latent_dim = 3});
    const attn::Tensor x = attn::rand({2, 5, 4});
    CHECK(attn::max_abs_diff(x, test::oracle_tensor(c["outputs"]["x"])) == 0.0f);
    CHECK(test::max_ulp(mla(x), test::oracle_tensor(c["outputs"]["context_vec"])) <= kUlps);
}

TEST_CASE("MLA decoding in chunks of 3 equals PyTorch's cached decoding and latent cache") {
    const json& c = test::oracle_case("mla_sharing.json", "mla_decode_s7");
    attn::manual_seed(7);
    const attn::MultiHeadLatentAttention mla({.d_in = 4, .d_out = 12, .context_length = 10, .num_heads = 3,
                                              .qkv_bias = true, .latent_dim = 5});
    const attn::Tensor x = attn::rand({2, 10, 4});
    CHECK(test::max_ulp(mla(x), test::oracle_tensor(c["outputs"]["full"])) <= kUlps);
    attn::KVCache cache = mla.make_cache();
    const attn::Tensor cached = in_chunks(x, 3, [&](const attn::Tensor& t) { return mla.forward(t, cache); });
    CHECK(test::max_ulp(cached, test::oracle_tensor(c["outputs"]["cached"])) <= kUlps);
    CHECK(test::max_ulp(cache.key, test::oracle_tensor(c["outputs"]["cache_c_kv"])) <= kUlps);
    CHECK(attn::shape_of(cache.value) == attn::Shape{2, 10, 0});
    CHECK(cache.bytes() == 2 * 10 * 5 * sizeof(float));  // 5 numbers per token, not 2 * 12
}

TEST_CASE("MLA decoding equals recomputation at every step (64 tokens, chunks 1..20), module and absorbed form") {
    attn::Generator gen(15);
    const attn::MultiHeadLatentAttention mla({.d_in = 6, .d_out = 16, .context_length = 64, .num_heads = 4,
                                              .qkv_bias = true, .latent_dim = 6}, gen);
    const attn::Tensor x = attn::rand({2, 64, 6}, gen);
    const auto fresh = [&] { return mla.make_cache(); };
    // The same float operations in the same order: keys rebuilt from the same latents.
    CHECK(worst_decode_gap(x, fresh, [&](const attn::Tensor& t, attn::KVCache& k) { return mla.forward(t, k); },
                           [&](const attn::Tensor& t) { return mla(t); }) == 0.0);
    const attn::AbsorbedLatentAttention absorbed = attn::absorb(mla);
    CHECK(worst_decode_gap(x, fresh, [&](const attn::Tensor& t, attn::KVCache& k) { return absorbed.forward(t, k); },
                           [&](const attn::Tensor& t) { return absorbed(t); }) == 0.0);
}

TEST_CASE("MLA's absorbed form equals the module up to float32 rounding, also with biases") {
    attn::Generator gen(16);
    for (const bool bias : {false, true}) {
        INFO("qkv_bias " << bias);
        attn::MultiHeadLatentAttention mla({.d_in = 8, .d_out = 12, .context_length = 9, .num_heads = 3,
                                            .qkv_bias = bias, .latent_dim = 5}, gen);
        const attn::Tensor x = attn::rand({2, 9, 8}, gen);
        const attn::AbsorbedLatentAttention absorbed = attn::absorb(mla);
        CHECK(attn::shape_of(absorbed.W_query.weight) == attn::Shape{3 * 5, 8});
        CHECK(attn::shape_of(absorbed.out_proj.weight) == attn::Shape{12, 3 * 5});
        const double gap = test::max_abs_diff(absorbed(x), mla(x));
        CHECK(gap <= 2e-6);
        // The latent cache the module fills is read by the absorbed form as it is.
        attn::KVCache cache = mla.make_cache();
        mla.forward(attn::slice(x, 1, 0, 5), cache);
        CHECK(test::max_abs_diff(absorbed.forward(attn::slice(x, 1, 5, 9), cache), attn::slice(mla(x), 1, 5, 9)) <= 2e-6);
    }
}

TEST_CASE("MLA's fast backend gives the step backend's bits, with dropout") {
    attn::Generator gen(17);
    attn::MultiHeadLatentAttention mla({.d_in = 6, .d_out = 12, .context_length = 33, .dropout = 0.2,
                                        .num_heads = 3, .latent_dim = 4}, gen);
    const attn::Tensor x = attn::rand({2, 33, 6}, gen);
    attn::Generator g1(5), g2(5);
    attn::Tensor fast, step;
    {
        attn::SDPABackendGuard guard(attn::SDPABackend::fast);
        fast = mla(x, g1);
    }
    {
        attn::SDPABackendGuard guard(attn::SDPABackend::step);
        step = mla(x, g2);
    }
    CHECK(test::max_abs_diff(fast, step) == 0.0);
}

TEST_CASE("MLA configurations, changed fields and caches that cannot work throw, naming them") {
    using C = attn::MultiHeadLatentAttentionConfig;
    test::require_invalid([] { attn::MultiHeadLatentAttention m(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2, .latent_dim = 0}); },
                          {"latent_dim > 0"});
    test::require_invalid([] { attn::MultiHeadLatentAttention m(C{.d_in = 3, .d_out = 5, .context_length = 6, .num_heads = 2, .latent_dim = {}}); },
                          {"d_out must be divisible by num_heads", "d_out = 5"});
    attn::manual_seed(1);
    CHECK_THROWS_AS(attn::MultiHeadLatentAttention(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2,
                                                     .latent_dim = std::size_t(1) << 62}),
                    std::length_error);
    CHECK(attn::default_generator().draws_since_seed() == 0);  // nothing drawn
    attn::MultiHeadLatentAttention mla(book_mla(2));
    const attn::Tensor batch = test::book_batch();
    test::require_invalid([&] { mla(attn::rand({2, 6, 5})); }, {"[b, T, 3]", "[2, 6, 5]"});
    attn::MultiHeadLatentAttention wrong_uk = mla;
    wrong_uk.W_UK = attn::nn::Linear(3, 4, false);
    test::require_invalid([&] { wrong_uk(batch); }, {"W_UK.weight", "[4, 2]", "[4, 3]"});
    attn::MultiHeadLatentAttention wrong_latent = mla;
    wrong_latent.latent_dim = 3;
    test::require_invalid([&] { wrong_latent(batch); }, {"W_DKV.weight", "[3, 3]", "[2, 3]"});
    attn::MultiHeadLatentAttention wrong_heads = mla;
    wrong_heads.num_heads = 4;
    test::require_invalid([&] { wrong_heads(batch); }, {"num_heads * head_dim = d_out"});
    test::require_invalid([&] { attn::absorb(wrong_uk); }, {"W_UK.weight"});
    // Caches: a ring, another latent width, a cache beyond the context.
    attn::KVCache ring = attn::KVCache::sliding_window(3);
    test::require_invalid([&] { mla.forward(batch, ring); }, {"full latent KVCache"});
    attn::KVCache other(attn::zeros({2, 4, 3}), attn::zeros({2, 4, 0}));
    test::require_invalid([&] { mla.forward(batch, other); }, {"cache.key, the latents", "[2, 4, 2]", "[2, 4, 3]"});
    attn::KVCache kv(attn::zeros({2, 4, 2}), attn::zeros({2, 4, 2}));
    test::require_invalid([&] { mla.forward(batch, kv); }, {"cache.value, empty", "[2, 4, 0]", "[2, 4, 2]"});
    attn::KVCache cache = mla.make_cache();
    mla.forward(batch, cache);
    test::require_invalid([&] { mla.forward(attn::slice(batch, 1, 0, 1), cache); }, {"beyond the context"});
    CHECK(cache.pos == 6);  // unchanged
}

TEST_CASE("MLA: NaN in, NaN out, on every backend") {
    attn::manual_seed(2);
    const attn::MultiHeadLatentAttention mla(book_mla(2));
    attn::Tensor x = test::book_batch();
    x(0, 2, 1) = std::numeric_limits<float>::quiet_NaN();
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        attn::SDPABackendGuard guard(backend);
        const attn::Tensor out = mla(x);
        // Token 2's latent, hence its key and value, is NaN. A later token attends to it; an
        // earlier one gives it weight 0, and 0 * NaN is NaN (PyTorch's attn_weights @ values).
        // The other sequence is untouched.
        for (std::size_t t = 0; t < 6; ++t)
            for (std::size_t e = 0; e < 4; ++e) {
                CHECK(std::isnan(out(0, t, e)));
                CHECK(!std::isnan(out(1, t, e)));
            }
    }
}

TEST_CASE("control: MLA with W_UK and W_UV swapped does not give PyTorch's output", "[!shouldfail]") {
    const json& c = test::oracle_case("mla_sharing.json", "mla_book_s123");
    attn::manual_seed(123);
    attn::MultiHeadLatentAttention mla(book_mla(2));
    std::swap(mla.W_UK, mla.W_UV);  // keys from the value projection: same shapes, another function
    CHECK(attn::repr(mla(test::book_batch())) == c["outputs"]["context_vecs"]["repr"].get<std::string>());
}

// ============================================================================ KV sharing

TEST_CASE("a producer and a consumer built after it with seed 123 equal PyTorch's") {
    const json& c = test::oracle_case("mla_sharing.json", "sharing_book_s123");
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithKVSharing producer(kBookSharing);
    const attn::MultiHeadAttentionWithKVSharing consumer(kBookSharing);
    CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
    CHECK(attn::repr(consumer) == c["repr"].get<std::string>());
    attn::KVCache shared_kv;  // his shared_kv: the producer's keys and values of this chunk
    const attn::Tensor out_p = producer.forward(test::book_batch(), shared_kv);
    CHECK(test::max_abs_diff(out_p, producer(test::book_batch())) == 0.0);
    const attn::Tensor out_c = consumer.forward_shared(test::book_batch(), shared_kv);
    const json& o = c["outputs"];
    CHECK(attn::repr(out_p) == o["producer"]["repr"].get<std::string>());
    CHECK(attn::repr(out_c) == o["consumer"]["repr"].get<std::string>());
    CHECK(test::max_ulp(out_p, test::oracle_tensor(o["producer"])) <= kUlps);
    CHECK(test::max_ulp(out_c, test::oracle_tensor(o["consumer"])) <= kUlps);
    CHECK(test::max_ulp(shared_kv.key, test::oracle_tensor(o["shared_keys"])) <= kUlps);
    CHECK(test::max_ulp(shared_kv.value, test::oracle_tensor(o["shared_values"])) <= kUlps);
    // His forward's second result: the producer's keys and values, the consumer's None.
    const attn::KVSharingOutput produced = producer.forward_with_kv(test::book_batch());
    const attn::KVSharingOutput consumed = consumer.forward_with_kv(test::book_batch(), &shared_kv);
    REQUIRE(produced.new_shared_kv.has_value());
    CHECK(test::max_abs_diff(produced.context_vec, out_p) == 0.0);
    CHECK(test::max_abs_diff(produced.new_shared_kv->key, shared_kv.key) == 0.0);
    CHECK(test::max_abs_diff(produced.new_shared_kv->value, shared_kv.value) == 0.0);
    CHECK(produced.new_shared_kv->pos == 6);
    CHECK_FALSE(consumed.new_shared_kv.has_value());
    CHECK(test::max_abs_diff(consumed.context_vec, out_c) == 0.0);
}

TEST_CASE("KV sharing in training mode draws PyTorch's dropout masks (producer, then consumer)") {
    const json& c = test::oracle_case("mla_sharing.json", "sharing_train_s5");
    attn::manual_seed(5);
    const attn::MultiHeadAttentionWithKVSharingConfig cfg{.d_in = 4, .d_out = 8, .context_length = 5,
                                                          .dropout = 0.3, .num_heads = 4, .qkv_bias = true};
    const attn::MultiHeadAttentionWithKVSharing producer(cfg), consumer(cfg);
    const attn::Tensor x = attn::rand({2, 5, 4});
    attn::KVCache shared_kv;
    const attn::Tensor out_p = producer.forward(x, shared_kv);
    const attn::Tensor out_c = consumer.forward_shared(x, shared_kv);
    CHECK(test::max_ulp(out_p, test::oracle_tensor(c["outputs"]["producer"])) <= kUlps);
    CHECK(test::max_ulp(out_c, test::oracle_tensor(c["outputs"]["consumer"])) <= kUlps);
}

TEST_CASE("his GPTModel's loop over 4 layers, 2 producing, equals PyTorch's without and with the cache") {
    const json& c = test::oracle_case("mla_sharing.json", "sharing_decode_s9");
    attn::manual_seed(9);
    std::vector<attn::MultiHeadAttentionWithKVSharing> layers;
    for (int i = 0; i < 4; ++i)
        layers.emplace_back(attn::MultiHeadAttentionWithKVSharingConfig{
            .d_in = 6, .d_out = 6, .context_length = 12, .num_heads = 3, .qkv_bias = true});
    const attn::Tensor x = attn::rand({2, 12, 6});
    std::vector<attn::KVCache> fresh;
    CHECK(test::max_ulp(attn::forward_kv_sharing(layers, 2, x, fresh), test::oracle_tensor(c["outputs"]["full"])) <= kUlps);
    std::vector<attn::KVCache> caches;
    const attn::Tensor cached = in_chunks(x, 5, [&](const attn::Tensor& t) { return attn::forward_kv_sharing(layers, 2, t, caches); });
    CHECK(test::max_ulp(cached, test::oracle_tensor(c["outputs"]["cached"])) <= kUlps);
    REQUIRE(caches.size() == 2);  // only the producers hold keys and values
    CHECK(test::max_ulp(caches[1].key, test::oracle_tensor(c["outputs"]["last_producer_cache_k"])) <= kUlps);
}

TEST_CASE("KV-sharing decoding equals recomputation within float32 rounding (64 tokens, chunks 1..20)") {
    attn::Generator gen(16);
    std::vector<attn::MultiHeadAttentionWithKVSharing> layers;
    for (int i = 0; i < 5; ++i)
        layers.emplace_back(attn::MultiHeadAttentionWithKVSharingConfig{
            .d_in = 8, .d_out = 8, .context_length = 64, .num_heads = 4, .qkv_bias = true}, gen);
    const attn::Tensor x = attn::rand({2, 64, 8}, gen);
    const auto full = [&](const attn::Tensor& t) {
        std::vector<attn::KVCache> none;
        return attn::forward_kv_sharing(layers, 2, t, none);
    };
    const auto cached = [&](const attn::Tensor& t, std::vector<attn::KVCache>& caches) {
        return attn::forward_kv_sharing(layers, 2, t, caches);
    };
    // Not 0: a row decoded early holds the keys seen so far, and under 8 keys PyTorch's
    // softmax adds them in order; the same row in a longer recomputation has 8 keys or more
    // (the hidden ones as zeros) and is added as 8 lanes and their tree (core/reduce.hpp).
    // One layer stays exact (the MLA test above); the second producer and the consumers read
    // the first's rows, so the last bits differ: at most 2 ulp of outputs below 1.
    const double gap = worst_decode_gap(x, [] { return std::vector<attn::KVCache>(); }, cached, full);
    CHECK(gap <= 1.2e-7);
    std::vector<attn::KVCache> caches;
    cached(x, caches);
    CHECK(caches.size() == 2);
    CHECK(caches[0].bytes() + caches[1].bytes() == 2 * (2 * 2 * 64 * 8 * sizeof(float)));
}

TEST_CASE("KV-sharing inputs, changed fields and shared caches that cannot work throw, naming them") {
    using C = attn::MultiHeadAttentionWithKVSharingConfig;
    test::require_invalid([] { attn::MultiHeadAttentionWithKVSharing m(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 3}); },
                          {"d_out must be divisible by num_heads"});
    attn::manual_seed(3);
    attn::MultiHeadAttentionWithKVSharing producer(kBookSharing), consumer(kBookSharing);
    const attn::Tensor batch = test::book_batch();
    attn::KVCache empty;
    test::require_invalid([&] { consumer.forward_shared(batch, empty); }, {"holds 0"});
    attn::KVCache shared;
    producer.forward(attn::slice(batch, 1, 0, 3), shared);
    test::require_invalid([&] { consumer.forward_shared(batch, shared); }, {"the 6 tokens of x", "holds 3"});
    attn::KVCache other_heads(attn::zeros({2, 1, 6, 4}), attn::zeros({2, 1, 6, 4}));
    test::require_invalid([&] { consumer.forward_shared(batch, other_heads); }, {"shared_kv.key", "[2, 2, 6, 2]", "[2, 1, 6, 4]"});
    attn::MultiHeadAttentionWithKVSharing wrong = producer;
    wrong.W_key = attn::nn::Linear(3, 6, false);
    test::require_invalid([&] { wrong(batch); }, {"W_key.weight", "[4, 3]", "[6, 3]"});
    // As a consumer it never uses W_key: the changed field is not in its way.
    attn::KVCache full;
    producer.forward(batch, full);
    CHECK(test::max_abs_diff(wrong.forward_shared(batch, full), producer.forward_shared(batch, full)) == 0.0);
    wrong.out_proj = attn::nn::Linear(4, 5);
    test::require_invalid([&] { wrong.forward_shared(batch, shared); }, {"out_proj.weight"});
    std::vector<attn::MultiHeadAttentionWithKVSharing> layers{producer, consumer};
    std::vector<attn::KVCache> caches;
    test::require_invalid([&] { attn::forward_kv_sharing(layers, 0, batch, caches); }, {"between 1 and n_layers = 2"});
    test::require_invalid([&] { attn::forward_kv_sharing(layers, 3, batch, caches); }, {"got 3"});
    std::vector<attn::KVCache> three(3);
    test::require_invalid([&] { attn::forward_kv_sharing(layers, 1, batch, three); }, {"one cache per producer"});
}

TEST_CASE("KV sharing: NaN in, NaN out, on every backend") {
    attn::manual_seed(4);
    const attn::MultiHeadAttentionWithKVSharing producer(kBookSharing), consumer(kBookSharing);
    attn::Tensor x = test::book_batch();
    x(1, 3, 0) = std::numeric_limits<float>::quiet_NaN();
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        attn::SDPABackendGuard guard(backend);
        attn::KVCache shared;
        producer.forward(x, shared);
        const attn::Tensor out = consumer.forward_shared(test::book_batch(), shared);  // clean queries
        // Token 3's key and value came from the NaN token: later queries attend to it, earlier
        // ones weigh it by 0 and 0 * NaN is NaN (as PyTorch); the other sequence is clean.
        for (std::size_t t = 0; t < 6; ++t)
            for (std::size_t e = 0; e < 4; ++e) {
                CHECK(std::isnan(out(1, t, e)));
                CHECK(!std::isnan(out(0, t, e)));
            }
    }
}

// ============================================================================ estimators

TEST_CASE("memory_estimator_mla.py with his README's arguments prints his README's figures") {
    // --context_length 8192 --emb_dim 2048 --n_heads 24 --n_layers 48 --n_kv_groups 4
    // --batch_size 1 --dtype bf16 --latent_dim 1024; head_dim = ceil(2048 / 24) = 86.
    const std::size_t mha = attn::kv_bytes_total(1, 8192, 2048, 24, 24, 48, kBf16);
    const std::size_t gqa = attn::kv_bytes_total(1, 8192, 2048, 24, 24 / 4, 48, kBf16);
    const std::size_t mla = attn::mla_bytes_total(1, 8192, 48, 1024, kBf16);
    CHECK(gb(mha) == "3.25 GB");
    CHECK(gb(gqa) == "0.81 GB");
    CHECK(gb(mla) == "0.81 GB");
    CHECK(two_decimals(double(mha) / double(gqa)) == "4.00");
    CHECK(two_decimals((1 - double(gqa) / double(mha)) * 100) == "75.00");
    CHECK(two_decimals(double(mha) / double(mla)) == "4.03");
    CHECK(two_decimals((1 - double(mla) / double(mha)) * 100) == "75.19");
    // The same through the one config.
    attn::KVMemoryConfig cfg{.batch = 1, .context_length = 8192, .emb_dim = 2048, .num_heads = 24,
                             .num_kv_heads = 24, .num_layers = 48, .bytes_per_elem = kBf16};
    CHECK(attn::kv_cache_total_bytes(cfg) == mha);
    cfg.num_kv_heads = 6;
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa);
    cfg.latent_dim = 1024;
    CHECK(attn::kv_cache_total_bytes(cfg) == mla);
    CHECK(attn::kv_cache_bytes_per_token(cfg) == 48.0 * 1024 * 2);
    CHECK(attn::latent_bytes_per_layer(1, 8192, 1024, kBf16) * 48 == mla);
}

TEST_CASE("memory_estimator_kv_sharing.py with his README's E2B arguments prints his README's figures") {
    // --context_length 131072 --emb_dim 2048 --n_heads 8 --n_layers 35 --n_kv_groups 8
    // --n_kv_producing_layers 15 --batch_size 1 --dtype bf16; head_dim 256, GQA n_kv_heads 1.
    const std::size_t mha = attn::kv_bytes_total(1, 131072, 2048, 8, 8, 35, kBf16);
    const std::size_t gqa = attn::kv_bytes_total(1, 131072, 2048, 8, 1, 35, kBf16);
    const std::size_t mha_sharing = attn::kv_bytes_total(1, 131072, 2048, 8, 8, 15, kBf16);
    const std::size_t gqa_sharing = attn::kv_bytes_total(1, 131072, 2048, 8, 1, 15, kBf16);
    CHECK(gb(mha) == "37.58 GB");
    CHECK(gb(gqa) == "4.70 GB");
    CHECK(gb(mha_sharing) == "16.11 GB");
    CHECK(gb(gqa_sharing) == "2.01 GB");
    CHECK(two_decimals(double(mha) / double(gqa_sharing)) == "18.67");
    CHECK(two_decimals((1 - double(gqa_sharing) / double(mha)) * 100) == "94.64");
    attn::KVMemoryConfig cfg{.batch = 1, .context_length = 131072, .emb_dim = 2048, .num_heads = 8,
                             .num_kv_heads = 1, .num_layers = 35, .bytes_per_elem = kBf16,
                             .num_kv_producing_layers = 15};
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa_sharing);
    cfg.num_kv_producing_layers = 35;  // every layer produces: no sharing
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa);
    cfg.num_kv_producing_layers = 0;
    CHECK(attn::kv_cache_total_bytes(cfg) == gqa);
    // His tests.py, test_memory_estimator_counts_cached_layers.
    CHECK(attn::kv_bytes_total(1, 128, 32, 4, 1, 2, 2) == 1 * 128 * 8 * 1 * 2 * 2 * 2);
}

TEST_CASE("the variants combine in one config: sharing, MLA and SWA layers") {
    attn::KVMemoryConfig cfg{.batch = 2, .context_length = 4096, .emb_dim = 768, .num_heads = 12,
                             .num_kv_heads = 12, .num_layers = 12, .bytes_per_elem = 4};
    const std::size_t per_layer = 2 * 4096 * 2 * 768 * 4;
    CHECK(attn::kv_cache_total_bytes(cfg) == 12 * per_layer);
    CHECK(attn::kv_cache_bytes_per_token(cfg) == 12.0 * 2 * 768 * 4);
    cfg.num_kv_producing_layers = 6;
    CHECK(attn::kv_cache_total_bytes(cfg) == 6 * per_layer);
    // 6 producers at 1:1: 3 hold a 1024-token window, 3 the whole context.
    cfg.sliding_window_size = 1024, cfg.swa_a = 1, cfg.swa_b = 1;
    CHECK(attn::kv_cache_total_bytes(cfg) == 3 * per_layer + 3 * per_layer / 4);
    cfg.latent_dim = 96;  // each cached layer holds 96 numbers per token instead of 2 * 768
    CHECK(attn::kv_cache_total_bytes(cfg) == 3 * (2 * 4096 * 96 * 4) + 3 * (2 * 1024 * 96 * 4));
}

TEST_CASE("the estimators refuse what they cannot count") {
    constexpr std::size_t big = std::numeric_limits<std::size_t>::max() / 2;
    CHECK_THROWS_WITH(attn::mla_bytes_total(1, big, 48, 1024, 2),
                      Catch::Contains("mla_bytes_total") && Catch::Contains("overflows"));
    CHECK_THROWS_WITH(attn::latent_bytes_per_layer(big, 4, 1, 1),
                      Catch::Contains("latent_bytes_per_layer") && Catch::Contains("overflows"));
    CHECK_THROWS_WITH(attn::kv_bytes_total(1, big, 2048, 8, 8, 35, 2), Catch::Contains("overflows"));
    CHECK_THROWS_WITH(attn::kv_bytes_total(1, 1, 2048, 0, 8, 35, 2), Catch::Contains("num_heads > 0"));
    const attn::KVMemoryConfig over{.batch = 1, .context_length = 8, .emb_dim = 64, .num_heads = 8,
                                    .num_kv_heads = 8, .num_layers = 4, .num_kv_producing_layers = 5};
    CHECK_THROWS_WITH(attn::kv_cache_total_bytes(over),
                      Catch::Contains("num_kv_producing_layers <= num_layers = 4") && Catch::Contains("got 5"));
    attn::KVMemoryConfig huge{.batch = 1, .context_length = big, .emb_dim = 64, .num_heads = 8,
                              .num_kv_heads = 8, .num_layers = 4, .latent_dim = 64};
    CHECK_THROWS_AS(attn::kv_cache_bytes_per_token(huge), std::length_error);
}

TEST_CASE("control: MLA's estimate counted as keys and values both (2 x latent_dim)", "[!shouldfail]") {
    // A latent cache holds one latent per token, not a key and a value: doubling it must not
    // match his README's 0.81 GB / 4.03x.
    const std::size_t mha = attn::kv_bytes_total(1, 8192, 2048, 24, 24, 48, kBf16);
    const std::size_t wrong = 2 * attn::mla_bytes_total(1, 8192, 48, 1024, kBf16);
    CHECK(two_decimals(double(mha) / double(wrong)) == "4.03");
}

}  // namespace test_mla_sharing
