// Tests of DeepSeek sparse attention (chapter 17).
//
// Expected values come from the oracle data/oracle/dsa.json, recorded from Debian's
// python3-torch on the reference BLAS by tools/oracle/dsa.py with the contributor's module
// (rasbt/LLMs-from-scratch pull request #1014, copied into the script): printed text is
// compared exactly, values within kUlps float32 ulps (values within 1e-7 absolute count as
// equal). His `topk` breaks ties among equal index scores by whatever std::nth_element leaves;
// the cases record it and the library's rule (earliest position first), and say which they ran.
// Decoding with the cache is compared with the full recomputation (a relation), at every step.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/modules/dsa.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/print/print.hpp"

namespace test_dsa {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using json = nlohmann::json;
constexpr long long kUlps = 4;  // the stated bound for every oracle value

attn::MultiHeadAttentionWithDSAConfig book(std::size_t topk) {
    return {.d_in = 3, .d_out = 4, .context_length = 6, .dropout = 0.0, .num_heads = 2,
            .index_n_heads = 2, .index_head_dim = 4, .topk = topk};
}

// The outputs of feeding x [b, T, d] in chunks of `chunk` through `step`, concatenated.
template <class Step>
attn::Tensor in_chunks(const attn::Tensor& x, std::size_t chunk, Step step) {
    std::vector<attn::Tensor> outs;
    const long T = static_cast<long>(x.shape()[1]);
    for (long i = 0; i < T; i += static_cast<long>(chunk))
        outs.push_back(step(attn::slice(x, 1, i, std::min(T, i + static_cast<long>(chunk)))));
    return attn::cat(outs, 1);
}

// An oracle selection (positions kept, [b, T, k] sorted ascending) as the mask [b, T, T],
// without the positions beyond the causal mask (his topk may list them; they stay -inf).
attn::BoolTensor kept_mask(const json& selected) {
    const auto shape = selected["shape"].get<attn::Shape>();
    const auto& v = selected["values"];
    const std::size_t b = shape[0], T = shape[1], k = shape[2];
    attn::BoolTensor m = attn::BoolTensor::from_shape({b, T, T});
    std::fill(m.begin(), m.end(), false);
    for (std::size_t i = 0; i < b; ++i)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < k; ++j) {
                const auto s = v[(i * T + t) * k + j].get<std::size_t>();
                if (s <= t) m(i, t, s) = true;
            }
    return m;
}

}  // namespace

TEST_CASE("MultiHeadAttentionWithDSA with seed 123 on the book's batch equals PyTorch (topk 2 and 6)") {
    for (const auto& entry : {std::pair{"dsa_book_s123", 2}, {"dsa_book_topk6_s123", 6}}) {
        const std::string name = entry.first;
        const std::size_t topk = entry.second;
        INFO(name);
        const json& c = test::oracle_case("dsa.json", name);
        attn::manual_seed(123);
        const attn::MultiHeadAttentionWithDSA dsa(book(topk));
        CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
        CHECK(attn::repr(dsa) == c["repr"].get<std::string>());
        const attn::Tensor out = dsa(test::book_batch());
        const json& expected = c["outputs"]["context_vecs"];
        CHECK(attn::repr(out) == expected["repr"].get<std::string>());
        CHECK(test::max_ulp(out, test::oracle_tensor(expected)) <= kUlps);
        const auto sel = dsa.select(test::book_batch());
        CHECK(test::max_ulp(sel.index_scores, test::oracle_tensor(c["outputs"]["index_scores"])) <= kUlps);
        // his topk and the rule keep the same visible keys here: no tie decides
        CHECK(sel.selected == kept_mask(c["outputs"]["stable_selected"]));
        CHECK(sel.selected == kept_mask(c["outputs"]["topk_selected"]));
    }
}

TEST_CASE("DSA with topk covering the context is dense causal attention, bit for bit") {
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithDSA dsa(book(6));
    attn::manual_seed(123);  // MultiHeadAttention draws W_query, W_key, W_value, out_proj first too
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2});
    CHECK(test::max_abs_diff(dsa(test::book_batch()), mha(test::book_batch())) == 0.0);
}

TEST_CASE("ties at 0: his topk reproduced, cached and full disagree; the earliest rule agrees") {
    const json& c = test::oracle_case("dsa.json", "dsa_ties_s31");
    const json& o = c["outputs"];
    attn::manual_seed(31);
    attn::MultiHeadAttentionWithDSA dsa({.d_in = 4, .d_out = 8, .context_length = 24, .num_heads = 2,
                                         .index_n_heads = 2, .index_head_dim = 4, .topk = 3});
    const attn::Tensor x = test::oracle_tensor(o["x"]);
    for (const auto ties : {attn::IndexTies::torch_topk, attn::IndexTies::earliest}) {
        const std::string rule = ties == attn::IndexTies::torch_topk ? "topk" : "stable";
        INFO(rule);
        dsa.ties = ties;
        CHECK(test::max_ulp(dsa(x), test::oracle_tensor(o[rule + "_full"])) <= kUlps);
        for (const std::size_t chunk : {1, 5}) {
            attn::DSACache cache;
            const attn::Tensor cached = in_chunks(x, chunk, [&](const attn::Tensor& t) { return dsa.forward(t, cache); });
            CHECK(test::max_ulp(cached, test::oracle_tensor(o[rule + "_cached_" + std::to_string(chunk)])) <= kUlps);
            const double gap = test::max_abs_diff(cached, dsa(x));
            if (ties == attn::IndexTies::torch_topk)
                CHECK(gap > 0.01);  // his cached decoding keeps another key at a tie
            else
                CHECK(gap <= 1e-6);
        }
    }
    dsa.ties = attn::IndexTies::earliest;
    CHECK((dsa.select(x).selected == kept_mask(o["stable_selected"])));
    dsa.ties = attn::IndexTies::torch_topk;
    CHECK((dsa.select(x).selected == kept_mask(o["topk_selected"])));
}

TEST_CASE("DSA decoding in chunks of 3 equals PyTorch's cached decoding, cache and index keys") {
    const json& c = test::oracle_case("dsa.json", "dsa_decode_s7");
    const json& o = c["outputs"];
    attn::manual_seed(7);
    const attn::MultiHeadAttentionWithDSA dsa({.d_in = 8, .d_out = 16, .context_length = 20, .num_heads = 4,
                                               .qkv_bias = true, .index_n_heads = 4, .index_head_dim = 8,
                                               .topk = 5});
    const attn::Tensor x = attn::rand({2, 20, 8});
    CHECK(test::max_abs_diff(x, test::oracle_tensor(o["x"])) == 0.0);
    CHECK(test::max_ulp(dsa(x), test::oracle_tensor(o["full"])) <= kUlps);
    attn::DSACache cache;
    const attn::Tensor cached = in_chunks(x, 3, [&](const attn::Tensor& t) { return dsa.forward(t, cache); });
    CHECK(test::max_ulp(cached, test::oracle_tensor(o["cached"])) <= kUlps);
    CHECK(test::max_ulp(cache.kv.key, test::oracle_tensor(o["cache_k"])) <= kUlps);
    CHECK(test::max_ulp(cache.index.key, test::oracle_tensor(o["index_keys"])) <= kUlps);
    CHECK((dsa.select(x).selected == kept_mask(o["stable_selected"])));
    // keys and values of 4 heads of 4, plus one index key of 8, per token: 2 * 16 + 8 floats
    CHECK(cache.bytes() == 2 * 20 * (2 * 16 + 8) * sizeof(float));
}

TEST_CASE("DSA in training mode draws PyTorch's dropout mask on the attention weights") {
    const json& c = test::oracle_case("dsa.json", "dsa_train_s5");
    attn::manual_seed(5);
    const attn::MultiHeadAttentionWithDSA dsa({.d_in = 4, .d_out = 8, .context_length = 7, .dropout = 0.3,
                                               .num_heads = 4, .index_n_heads = 2, .index_head_dim = 4,
                                               .topk = 3});
    const attn::Tensor x = attn::rand({2, 7, 4});
    CHECK(test::max_abs_diff(x, test::oracle_tensor(c["outputs"]["x"])) == 0.0);
    CHECK(test::max_ulp(dsa(x), test::oracle_tensor(c["outputs"]["context_vec"])) <= kUlps);
}

TEST_CASE("DSA decoding equals recomputation at every step, token by token and in chunks 1..20") {
    attn::Generator gen(41);
    for (const auto ties : {attn::IndexTies::earliest}) {
        const attn::MultiHeadAttentionWithDSA dsa({.d_in = 6, .d_out = 16, .context_length = 64, .num_heads = 4,
                                                   .qkv_bias = true, .index_n_heads = 2, .index_head_dim = 4,
                                                   .topk = 5, .ties = ties}, gen);
        // centred inputs: many index scores are exactly 0, so ties decide often
        const attn::Tensor x = attn::rand({2, 64, 6}, gen) - 0.5f;
        for (std::size_t chunk = 1; chunk <= 20; ++chunk) {
            INFO("chunk " << chunk);
            attn::DSACache cache;
            const double worst = test::decode_gap(
                x, chunk, [&](const attn::Tensor& xs, long, long) { return dsa.forward(xs, cache); },
                [&](const attn::Tensor& prefix) { return dsa(prefix); });
            CHECK(worst <= 1e-6);
            CHECK(cache.length() == 64);
        }
    }
}

TEST_CASE("control: his topk's decoding equals recomputation at every step", "[!shouldfail]") {
    attn::Generator gen(41);
    const attn::MultiHeadAttentionWithDSA dsa({.d_in = 6, .d_out = 16, .context_length = 64, .num_heads = 4,
                                               .qkv_bias = true, .index_n_heads = 2, .index_head_dim = 4,
                                               .topk = 5, .ties = attn::IndexTies::torch_topk}, gen);
    const attn::Tensor x = attn::rand({2, 64, 6}, gen) - 0.5f;
    attn::DSACache cache;
    const attn::Tensor cached = in_chunks(x, 1, [&](const attn::Tensor& t) { return dsa.forward(t, cache); });
    CHECK(test::max_abs_diff(cached, dsa(x)) <= 1e-6);
}

TEST_CASE("DSA: fast == step backend, with and without the cache and dropout") {
    for (const double p : {0.0, 0.2}) {
        INFO("dropout " << p);
        attn::Generator init(9);
        const attn::MultiHeadAttentionWithDSA dsa({.d_in = 8, .d_out = 24, .context_length = 40, .dropout = p,
                                                   .num_heads = 3, .index_n_heads = 3, .index_head_dim = 8,
                                                   .topk = 7}, init);
        const attn::Tensor x = attn::randn({2, 40, 8}, init);
        const auto run = [&](attn::SDPABackend backend) {
            attn::SDPABackendGuard guard(backend);
            attn::Generator g(1);
            attn::DSACache cache;
            return attn::cat({dsa(x, g), in_chunks(x, 9, [&](const attn::Tensor& t) { return dsa.forward(t, cache, g); })}, 1);
        };
        CHECK(test::max_abs_diff(run(attn::SDPABackend::fast), run(attn::SDPABackend::step)) == 0.0);
    }
}

TEST_CASE("the selection: top-k of the visible keys, NaN first, earliest of equal scores") {
    // one query row at position 4 over 6 keys: key 5 is in its future
    attn::Tensor s = attn::zeros({1, 1, 6});
    s(0, 0, 3) = 0.5f;
    const attn::BoolTensor kept = attn::topk_selection(s, 3, 4);
    CHECK(attn::repr(kept) == "tensor([[[ True,  True, False,  True, False, False]]])");
    s(0, 0, 2) = std::numeric_limits<float>::quiet_NaN();
    s(0, 0, 5) = 9.0f;  // future: never kept
    CHECK(attn::repr(attn::topk_selection(s, 2, 4)) == "tensor([[[False, False,  True,  True, False, False]]])");
    CHECK(attn::repr(attn::topk_selection(s, 99, 0)) == "tensor([[[ True, False, False, False, False, False]]])");
    test::require_invalid([&] { attn::topk_selection(s, 0, 0); }, {"topk"});
}

TEST_CASE("DSA: NaN in a token reaches its sequence, never the other one") {
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithDSA dsa(book(2));
    attn::Tensor x = test::book_batch();
    x(0, 3, 1) = std::numeric_limits<float>::quiet_NaN();
    const attn::Tensor out = dsa(x);
    // the token's own query and every later one; the earlier ones too, as in PyTorch's
    // `attn_weights @ values`: a hidden key's weight is 0 and 0 * NaN is NaN (the core's rule)
    for (std::size_t t = 0; t < 6; ++t) {
        CHECK(std::isnan(out(0, t, 0)));
        CHECK(!std::isnan(out(1, t, 0)));
    }
}

TEST_CASE("DSA configurations, changed fields and caches that cannot work throw, naming them") {
    using C = attn::MultiHeadAttentionWithDSAConfig;
    test::require_invalid([] { attn::MultiHeadAttentionWithDSA m(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2, .topk = 0}); },
                          {"topk"});
    test::require_invalid([] { attn::MultiHeadAttentionWithDSA m(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 3}); },
                          {"d_out must be divisible by num_heads"});
    test::require_invalid([] { attn::MultiHeadAttentionWithDSA m(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2, .index_head_dim = 0}); },
                          {"index_head_dim"});
    CHECK_THROWS_AS(attn::MultiHeadAttentionWithDSA(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2,
                                                      .index_n_heads = std::size_t{1} << 40, .index_head_dim = std::size_t{1} << 40}),
                    std::length_error);
    attn::manual_seed(1);
    attn::MultiHeadAttentionWithDSA dsa(book(2));
    dsa.indexer.W_weights = attn::nn::Linear(3, 5, false);
    test::require_invalid([&] { dsa(test::book_batch()); }, {"W_weights", "[2, 3]", "[5, 3]"});
    dsa.indexer.W_weights = attn::nn::Linear(3, 2, false);
    dsa.topk = 0;
    test::require_invalid([&] { dsa(test::book_batch()); }, {"topk"});
    dsa.topk = 2;
    attn::DSACache cache;
    dsa.forward(test::book_batch(), cache);
    test::require_invalid([&] { dsa.forward(attn::slice(test::book_batch(), 1, 0, 1), cache); },
                          {"beyond the context", "context_length = 6"});
    CHECK(cache.length() == 6);  // unchanged
    cache.index.reset();
    test::require_invalid([&] { cache.length(); }, {"kv holds 6", "index holds 0"});
}

}  // namespace test_dsa
