// Tests of grouped-query attention (chapter 13) and sliding-window attention (chapter 14).
//
// Expected values come from the oracle data/oracle/gqa_swa.json, recorded from Debian's
// python3-torch on the reference BLAS by tools/oracle/gqa_swa.py with Raschka's modules
// (ch04/04_gqa, ch04/06_swa, copied into the script); printed text is compared exactly, values
// within kUlps float32 ulps (values within 1e-7 absolute count as equal, near zero a last-bit
// difference is many ulps of a tiny result). Decoding with a cache is compared with the full
// recomputation (a relation), at every step.
#include <catch2/catch.hpp>

#include "oracle.hpp"
#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/masks.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/modules/gqa.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/print/print.hpp"
#include "attn/modules/swa.hpp"
#include "textbook/book.hpp"

namespace test_gqa_swa {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using json = nlohmann::json;
constexpr long long kUlps = 4;  // the stated bound for every oracle value

attn::GroupedQueryAttentionConfig book_gqa(std::size_t groups) {
    return {.d_in = 3, .d_out = 8, .context_length = 6, .dropout = 0.0, .num_heads = 4,
            .num_kv_groups = groups};
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

}  // namespace

// ============================================================================ GQA

TEST_CASE("GroupedQueryAttention with seed 123 on the book's batch equals PyTorch (GQA, MQA, MHA)") {
    for (const auto& [name, groups] : {std::pair{"gqa_book_s123", 2}, {"mqa_book_s123", 1}, {"mha_book_s123", 4}}) {
        INFO(name);
        const json& c = test::oracle_case("gqa_swa.json", name);
        attn::manual_seed(123);
        const attn::GroupedQueryAttention gqa(book_gqa(groups));
        CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
        CHECK(attn::repr(gqa) == c["repr"].get<std::string>());
        const attn::Tensor out = gqa(test::book_batch());
        const json& expected = c["outputs"]["context_vecs"];
        CHECK(attn::repr(out) == expected["repr"].get<std::string>());
        CHECK(test::max_ulp(out, test::oracle_tensor(expected)) <= kUlps);
        attn::KVCache cache;
        gqa.forward(test::book_batch(), cache);
        CHECK(attn::repr(attn::shape_of(cache.key)) == c["cache_k_shape"].get<std::string>());
    }
}

TEST_CASE("GroupedQueryAttention in training mode draws PyTorch's dropout mask") {
    const json& c = test::oracle_case("gqa_swa.json", "gqa_train_s5");
    attn::manual_seed(5);
    const attn::GroupedQueryAttention gqa({.d_in = 4, .d_out = 8, .context_length = 5, .dropout = 0.3,
                                           .num_heads = 4, .num_kv_groups = 2, .qkv_bias = true});
    const attn::Tensor x = attn::rand({2, 5, 4});
    CHECK(test::max_abs_diff(x, test::oracle_tensor(c["outputs"]["x"])) == 0.0f);
    CHECK(test::max_ulp(gqa(x), test::oracle_tensor(c["outputs"]["context_vec"])) <= kUlps);
}

TEST_CASE("GQA decoding in chunks of 3 equals PyTorch's cached decoding and cache") {
    const json& c = test::oracle_case("gqa_swa.json", "gqa_decode_s7");
    attn::manual_seed(7);
    const attn::GroupedQueryAttention gqa({.d_in = 4, .d_out = 12, .context_length = 10,
                                           .num_heads = 6, .num_kv_groups = 3, .qkv_bias = true});
    const attn::Tensor x = attn::rand({2, 10, 4});
    CHECK(test::max_ulp(gqa(x), test::oracle_tensor(c["outputs"]["full"])) <= kUlps);
    attn::KVCache cache;
    const attn::Tensor cached = in_chunks(x, 3, [&](const attn::Tensor& t) { return gqa.forward(t, cache); });
    CHECK(test::max_ulp(cached, test::oracle_tensor(c["outputs"]["cached"])) <= kUlps);
    CHECK(test::max_ulp(cache.key, test::oracle_tensor(c["outputs"]["cache_k"])) <= kUlps);
    CHECK(test::max_ulp(cache.value, test::oracle_tensor(c["outputs"]["cache_v"])) <= kUlps);
    CHECK(cache.bytes() == 2 * 2 * 3 * 10 * 2 * sizeof(float));  // only the 3 key/value heads
}

TEST_CASE("control: repeat (tiling) instead of repeat_interleave does not give PyTorch's GQA") {
    const json& c = test::oracle_case("gqa_swa.json", "gqa_book_s123");
    attn::manual_seed(123);
    attn::GroupedQueryAttention gqa(book_gqa(2));
    // Rows of groups tiled [K1, K2, K1, K2] instead of [K1, K1, K2, K2]: the MHA this equals
    // pairs query head 1 with key head 2.
    attn::MultiHeadAttention right = attn::expand_kv_groups(gqa);
    attn::MultiHeadAttention wrong = right;
    const attn::Tensor wk = attn::view(gqa.W_key.weight, {2, 2, 3});
    const attn::Tensor wv = attn::view(gqa.W_value.weight, {2, 2, 3});
    wrong.W_key.weight = attn::view(attn::repeat_along(wk, 2, 0), {8, 3});
    wrong.W_value.weight = attn::view(attn::repeat_along(wv, 2, 0), {8, 3});
    const attn::Tensor expected = test::oracle_tensor(c["outputs"]["context_vecs"]);
    CHECK(test::max_ulp(right(test::book_batch()), expected) <= kUlps);
    CHECK(test::max_ulp(wrong(test::book_batch()), expected) > 1000);  // the control fails
}

TEST_CASE("GQA equals MHA whose key/value weights repeat each group") {
    attn::Generator gen(2024);
    for (std::size_t groups : {1, 2, 3, 6}) {
        const attn::GroupedQueryAttention gqa({.d_in = 5, .d_out = 12, .context_length = 9,
                                               .num_heads = 6, .num_kv_groups = groups,
                                               .qkv_bias = true}, gen);
        const attn::Tensor x = attn::rand({3, 9, 5}, gen);
        CHECK(test::max_abs_diff(gqa(x), attn::expand_kv_groups(gqa)(x)) == 0.0);
    }
}

TEST_CASE("repeat_interleave and repeat order heads as PyTorch does") {
    const attn::Tensor k = attn::tensor({1.0f, 2.0f});
    CHECK(attn::repr(attn::repeat_interleave(k, 2, 0)) == "tensor([1., 1., 2., 2.])");
    CHECK(attn::repr(attn::repeat_along(k, 2, 0)) == "tensor([1., 2., 1., 2.])");
    test::require_invalid([&] { attn::repeat_interleave(k, 0, 0); }, {"repeats"});
}

TEST_CASE("GQA decoding equals recomputation at every step, token by token and in chunks 1..20") {
    attn::Generator gen(31);
    const attn::GroupedQueryAttention gqa({.d_in = 6, .d_out = 16, .context_length = 64,
                                           .num_heads = 8, .num_kv_groups = 2, .qkv_bias = true}, gen);
    const attn::Tensor x = attn::rand({2, 64, 6}, gen);
    const attn::Tensor full = gqa(x);
    for (std::size_t chunk = 1; chunk <= 20; ++chunk) {
        INFO("chunk " << chunk);
        attn::KVCache cache;
        const double worst = test::decode_gap(
            x, chunk, [&](const attn::Tensor& xs, long, long) { return gqa.forward(xs, cache); },
            [&](const attn::Tensor& prefix) { return gqa(prefix); });
        CHECK(worst <= 1e-6);
        CHECK(cache.length() == 64);
        CHECK(test::max_abs_diff(cache.key, attn::zeros({2, 2, 64, 2})) > 0.0);
    }
    (void)full;
}

TEST_CASE("GQA configurations and inputs that cannot work throw, naming the field") {
    using C = attn::GroupedQueryAttentionConfig;
    test::require_invalid([] { attn::GroupedQueryAttention g(C{.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 4, .num_kv_groups = 3}); },
                          {"num_heads must be divisible by num_kv_groups", "num_kv_groups = 3"});
    test::require_invalid([] { attn::GroupedQueryAttention g(C{.d_in = 3, .d_out = 9, .context_length = 6, .num_heads = 4, .num_kv_groups = 2}); },
                          {"d_out must be divisible by num_heads", "d_out = 9"});
    test::require_invalid([] { attn::GroupedQueryAttention g(C{.d_in = 3, .d_out = 8, .context_length = 6, .num_heads = 4}); },
                          {"num_kv_groups"});
    attn::manual_seed(1);
    const attn::GroupedQueryAttention gqa(book_gqa(2));
    attn::KVCache cache;
    gqa.forward(test::book_batch(), cache);
    test::require_invalid([&] { gqa.forward(attn::slice(test::book_batch(), 1, 0, 1), cache); },
                          {"beyond the context", "context_length = 6"});
    CHECK(cache.pos == 6);  // unchanged
}

// ============================================================================ SWA

TEST_CASE("MultiHeadAttentionWithSWA with seed 123 on the book's batch equals PyTorch") {
    const json& c = test::oracle_case("gqa_swa.json", "swa_book_s123");
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithSWA swa({.d_in = 3, .d_out = 4, .context_length = 6,
                                               .num_heads = 2, .sliding_window_size = 3});
    CHECK(attn::default_generator().draws_since_seed() == c["draws_after_init"].get<std::uint64_t>());
    CHECK(attn::repr(swa) == c["repr"].get<std::string>());
    const attn::Tensor out = swa(test::book_batch());
    const json& expected = c["outputs"]["context_vecs"];
    CHECK(attn::repr(out) == expected["repr"].get<std::string>());
    CHECK(test::max_ulp(out, test::oracle_tensor(expected)) <= kUlps);
}

TEST_CASE("SWA's rows within the window equal MultiHeadAttention's with the same seed") {
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithSWA swa({.d_in = 3, .d_out = 4, .context_length = 6,
                                               .num_heads = 2, .sliding_window_size = 3});
    attn::manual_seed(123);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2});
    const attn::Tensor a = swa(test::book_batch()), b = mha(test::book_batch());
    CHECK(test::max_abs_diff(attn::slice(a, 1, 0, 3), attn::slice(b, 1, 0, 3)) == 0.0);
    CHECK(test::max_abs_diff(attn::slice(a, 1, 3, 6), attn::slice(b, 1, 3, 6)) > 1e-3);
}

TEST_CASE("control: the causal mask instead of the window does not give PyTorch's SWA output") {
    const json& c = test::oracle_case("gqa_swa.json", "swa_book_s123");
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithSWA wide({.d_in = 3, .d_out = 4, .context_length = 6,
                                                .num_heads = 2, .sliding_window_size = 6});
    CHECK(test::max_ulp(wide(test::book_batch()), test::oracle_tensor(c["outputs"]["context_vecs"])) > 1000);
}

TEST_CASE("SWA ring-buffer decoding in chunks of 5 equals PyTorch's trimmed cache") {
    const json& c = test::oracle_case("gqa_swa.json", "swa_decode_s9");
    attn::manual_seed(9);
    const attn::MultiHeadAttentionWithSWA swa({.d_in = 4, .d_out = 6, .context_length = 12,
                                               .num_heads = 3, .qkv_bias = true,
                                               .sliding_window_size = 4});
    const attn::Tensor x = attn::rand({2, 12, 4});
    CHECK(test::max_ulp(swa(x), test::oracle_tensor(c["outputs"]["full"])) <= kUlps);
    attn::KVCache cache = swa.make_cache();
    const attn::Tensor cached = in_chunks(x, 5, [&](const attn::Tensor& t) { return swa.forward(t, cache); });
    CHECK(test::max_ulp(cached, test::oracle_tensor(c["outputs"]["cached"])) <= kUlps);
    CHECK(test::max_ulp(cache.recent_keys(4), test::oracle_tensor(c["outputs"]["cache_k"])) <= kUlps);
    CHECK(test::max_ulp(cache.recent_values(4), test::oracle_tensor(c["outputs"]["cache_v"])) <= kUlps);
}

TEST_CASE("the window mask: a key is visible when 0 <= q_pos - k_pos < W") {
    const attn::BoolTensor m = attn::sliding_window_mask(0, 6, 0, 6, 3);
    for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = 0; j < 6; ++j) CHECK(m(i, j) == !(j <= i && i - j < 3));
    // W >= T is the causal mask
    const bool causal = attn::sliding_window_mask(0, 6, 0, 6, 6) == attn::to_bool(attn::triu(attn::ones({6, 6}), 1));
    CHECK(causal);
    test::require_invalid([] { attn::sliding_window_mask(0, 2, 0, 2, 0); }, {"window"});
}

TEST_CASE("SWA decoding equals recomputation at every step, token by token and in chunks 1..20") {
    attn::Generator gen(77);
    const std::size_t W = 7;
    const attn::MultiHeadAttentionWithSWA swa({.d_in = 6, .d_out = 12, .context_length = 64,
                                               .num_heads = 3, .qkv_bias = true,
                                               .sliding_window_size = W}, gen);
    const attn::Tensor x = attn::rand({2, 64, 6}, gen);
    for (std::size_t chunk = 1; chunk <= 20; ++chunk) {
        INFO("chunk " << chunk);
        attn::KVCache cache = swa.make_cache();
        std::size_t bytes = 0;
        const double worst = test::decode_gap(
            x, chunk,
            [&](const attn::Tensor& xs, long i, long) {
                attn::Tensor step = swa.forward(xs, cache);
                if (i == 0) bytes = cache.bytes();  // the W slots, allocated by the first forward
                CHECK(bytes == 2 * 2 * 3 * W * 4 * sizeof(float));
                CHECK(cache.bytes() == bytes);  // flat: the ring never grows
                return step;
            },
            [&](const attn::Tensor& prefix) { return swa(prefix); });
        CHECK(worst <= 1e-6);
        CHECK(cache.length() == W);
        CHECK(cache.pos == 64);
    }
}

TEST_CASE("SWA configurations and positions that cannot work throw, naming the field") {
    using C = attn::MultiHeadAttentionWithSWAConfig;
    test::require_invalid([] { attn::MultiHeadAttentionWithSWA s(C{.d_in = 3, .d_out = 4, .context_length = 6, .num_heads = 2}); },
                          {"sliding_window_size", "> 0"});
    test::require_invalid([] { attn::MultiHeadAttentionWithSWA s(C{.d_in = 3, .d_out = 5, .context_length = 6, .num_heads = 2, .sliding_window_size = 3}); },
                          {"d_out must be divisible by num_heads", "d_out = 5"});
    attn::manual_seed(123);
    const attn::MultiHeadAttentionWithSWA swa({.d_in = 3, .d_out = 4, .context_length = 6,
                                               .num_heads = 2, .sliding_window_size = 3});
    attn::KVCache cache = swa.make_cache();
    swa.forward(test::book_batch(), cache);  // a chunk of 6 > W = 3 is fine (no negative pointer)
    test::require_invalid([&] { swa.forward(attn::slice(test::book_batch(), 1, 0, 1), cache); },
                          {"beyond the context", "context_length = 6"});
    CHECK(cache.pos == 6);
    test::require_invalid([&] { swa(attn::cat({test::book_batch(), test::book_batch()}, 1)); }, {"beyond the context"});
    attn::KVCache other = attn::KVCache::sliding_window(3);  // a ring for batch 1
    other.append(attn::zeros({1, 2, 1, 2}), attn::zeros({1, 2, 1, 2}));
    test::require_invalid([&] { swa.forward(test::book_batch(), other); }, {"cache.key", "[2, 2, 3, 2]"});
    attn::KVCache full;  // a full cache where a ring is needed
    test::require_invalid([&] { swa.forward(test::book_batch(), full); }, {"sliding-window", "window = 0"});
}

}  // namespace test_gqa_swa
