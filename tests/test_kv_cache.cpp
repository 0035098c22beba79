// Tests for attn/kv_cache.hpp: BaseSelfAttention (notebook 000 In [41]) with and without a KV
// cache, the [Sq, Sk] causal mask, the In [36] error, decoding helpers, and the relations of the
// book's unseeded KV-cache blocks (000 In [39]/[40], In [44]/[45], In [46]).
//
// Expected values: a reference forward written out below with plain loops in double precision
// (independent of the library's matmul/softmax/masking), masks worked out by hand, PyTorch's
// error text from the book (data/book/000/000-In36.txt), and the book's printed numbers.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support.hpp"
#include <xtensor/xview.hpp>

#include "textbook/book.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/attention/masks.hpp"
#include "attn/modules/base_self_attention.hpp"
#include "attn/attention/kv_cache.hpp"
#include "attn/attention/kv_memory.hpp"
#include "textbook/decoding.hpp"
#include "attn/attention/padding.hpp"

namespace test_kv_cache {  // every test file is a namespace of its own (tests/meson.build)

namespace {

const float inf = std::numeric_limits<float>::infinity();

// y = x W^T + b for one row, in double.
std::vector<double> linear_row(const attn::nn::Linear& l, const attn::Tensor& x, std::size_t b,
                               std::size_t s) {
    const std::size_t out = l.out_features(), in = l.in_features();
    std::vector<double> y(out);
    for (std::size_t o = 0; o < out; ++o) {
        double acc = (*l.bias)(o);
        for (std::size_t i = 0; i < in; ++i) acc += double(l.weight(o, i)) * double(x(b, s, i));
        y[o] = acc;
    }
    return y;
}

// Notebook 000's forward written out: causal attention of every position of x [B, S, E] in
// double precision, with optional attention mask [B, S]; fully masked rows give zero weights.
attn::Tensor reference_forward(const attn::BaseSelfAttention& m, const attn::Tensor& x,
                               const attn::LongTensor* attention_mask = nullptr) {
    const std::size_t B = x.shape()[0], S = x.shape()[1], E = x.shape()[2];
    attn::Tensor out = attn::zeros({B, S, E});
    for (std::size_t b = 0; b < B; ++b) {
        std::vector<std::vector<double>> q(S), k(S), v(S);
        for (std::size_t s = 0; s < S; ++s) {
            q[s] = linear_row(m.query_proj, x, b, s);
            k[s] = linear_row(m.key_proj, x, b, s);
            v[s] = linear_row(m.value_proj, x, b, s);
        }
        for (std::size_t i = 0; i < S; ++i) {
            std::vector<double> w(S, 0.0);
            double mx = -INFINITY;
            std::vector<bool> allowed(S, false);
            for (std::size_t j = 0; j <= i; ++j) {
                if (attention_mask && (*attention_mask)(b, j) == 0) continue;
                allowed[j] = true;
                double dot = 0;
                for (std::size_t e = 0; e < E; ++e) dot += q[i][e] * k[j][e];
                w[j] = dot / std::sqrt(double(E));
                mx = std::max(mx, w[j]);
            }
            double total = 0;
            for (std::size_t j = 0; j < S; ++j) {
                w[j] = allowed[j] ? std::exp(w[j] - mx) : 0.0;
                total += w[j];
            }
            std::vector<double> ctx(E, 0.0);
            for (std::size_t j = 0; j < S; ++j)
                if (allowed[j])
                    for (std::size_t e = 0; e < E; ++e) ctx[e] += w[j] / total * v[j][e];
            for (std::size_t o = 0; o < E; ++o) {
                double acc = (*m.output_proj.bias)(o);
                for (std::size_t e = 0; e < E; ++e) acc += double(m.output_proj.weight(o, e)) * ctx[e];
                out(b, i, o) = static_cast<float>(acc);
            }
        }
    }
    return out;
}

// The float32 spacing (ulp) at magnitude |y|.
double ulp_at(double y) {
    const float f = static_cast<float>(std::fabs(y));
    return double(std::nextafter(f, INFINITY)) - double(f);
}

}  // namespace

TEST_CASE("BaseSelfAttention builds query, key, value, output projections in PyTorch's order") {
    attn::manual_seed(3);
    const attn::BaseSelfAttention m({.embed_dim = 16});
    attn::manual_seed(3);
    const attn::nn::Linear q(16, 16), k(16, 16), v(16, 16), o(16, 16);
    CHECK(m.query_proj.weight == q.weight);
    CHECK(*m.key_proj.bias == *k.bias);
    CHECK(m.value_proj.weight == v.weight);
    CHECK(*m.output_proj.bias == *o.bias);
    CHECK(m.embed_dim == 16);
    CHECK_THROWS_AS(attn::BaseSelfAttention({.embed_dim = 0}), std::invalid_argument);
}

TEST_CASE("forward equals the written-out causal attention, with and without an attention mask") {
    attn::manual_seed(11);
    const attn::BaseSelfAttention m({.embed_dim = 16});
    const attn::Tensor x = attn::rand({2, 6, 16});
    const attn::BaseOutput out = m(x);
    REQUIRE(attn::shape_of(out.attention_output) == attn::Shape{2, 6, 16});
    REQUIRE(attn::shape_of(out.attention_weights) == attn::Shape{2, 6, 6});
    REQUIRE(attn::shape_of(out.key) == attn::Shape{2, 6, 16});
    CHECK(test::max_abs_diff(out.attention_output, reference_forward(m, x)) < 1e-6f);
    // Weights: zero above the diagonal, rows sum to 1.
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < 6; ++i) {
            float total = 0;
            for (std::size_t j = 0; j < 6; ++j) {
                if (j > i) CHECK(out.attention_weights(b, i, j) == 0.0f);
                total += out.attention_weights(b, i, j);
            }
            CHECK(total == Approx(1.0f).margin(1e-6));
        }
    // Right padding: no row is fully masked, so even torch.softmax gives no NaN.
    attn::LongTensor mask = {{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 1, 1}};
    const attn::BaseOutput masked = m(x, mask);
    CHECK(test::max_abs_diff(masked.attention_output, reference_forward(m, x, &mask)) < 1e-6f);
}

TEST_CASE("causal_mask(Sq, Sk) is the bottom-right [Sq, Sk] cut of the [Sk, Sk] lower triangle") {
    const attn::Tensor m = attn::causal_mask(3, 5);
    REQUIRE(attn::shape_of(m) == attn::Shape{3, 5});
    // Row i is row 2 + i of tril(ones(5, 5)): ones in columns 0..2 + i.
    const float expected[3][5] = {{1, 1, 1, 0, 0}, {1, 1, 1, 1, 0}, {1, 1, 1, 1, 1}};
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 5; ++j) CHECK(m(i, j) == expected[i][j]);
    const attn::Tensor one = attn::causal_mask(1, 5);
    CHECK(attn::shape_of(one) == attn::Shape{1, 5});
    CHECK(attn::sum(one)() == 5.0f);
    const attn::Tensor square = attn::causal_mask(4, 4);
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 4; ++j) CHECK(square(i, j) == (j <= i ? 1.0f : 0.0f));
    test::require_invalid([] { attn::causal_mask(6, 5); }, {"Sq <= Sk", "Sq = 6", "Sk = 5"});
}

TEST_CASE("the square causal mask of In [26] fails with a cache, with PyTorch's In [36] message") {
    attn::manual_seed(36);
    const attn::BaseSelfAttention m({.embed_dim = 16});
    const attn::Tensor query = attn::rand({2, 1, 16});
    const attn::Tensor key = attn::rand({2, 5, 16});
    attn::Tensor logits = m.calculate_unmasked_attention_logits(query, key);
    REQUIRE(attn::shape_of(logits) == attn::Shape{2, 1, 5});
    std::string message;
    try {
        m.apply_causal_mask_square_(logits);
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        message = e.what();
    }
    // PyTorch raises RuntimeError with this text; the book block is "RuntimeError: <text>".
    CHECK("RuntimeError: " + message == test::the_book().at("000-In36").text);
    CHECK(message.find("[2, 1, 5]") != std::string::npos);
    CHECK(message.find("[2, 5, 5]") != std::string::npos);

    // Without a cache (Sq == Sk) the square mask is the right one.
    attn::Tensor square = m.calculate_unmasked_attention_logits(key, key);
    const attn::Tensor fixed = m.apply_causal_mask(square);
    m.apply_causal_mask_square_(square);
    for (std::size_t i = 0; i < square.size(); ++i)  // identical, -inf entries included
        CHECK((square.data()[i] == fixed.data()[i]));
}

TEST_CASE("masked_fill_ refuses to grow its tensor and names the shapes as PyTorch does") {
    attn::Tensor x = attn::zeros({2, 1, 5});
    attn::masked_fill_(x, attn::BoolTensor(xt::ones<bool>(attn::Shape{1, 5})), 3.0f);
    CHECK(x(1, 0, 4) == 3.0f);
    test::require_invalid([&] { attn::masked_fill_(x, xt::ones<bool>(attn::Shape{2, 5, 5}), 1.0f); },
                    {"output with shape [2, 1, 5] doesn't match the broadcast shape [2, 5, 5]"});
    test::require_invalid([&] { attn::masked_fill_(x, xt::ones<bool>(attn::Shape{2, 1, 4}), 1.0f); },
                    {"The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 2"});
}

TEST_CASE("cached == uncached at every one of 32 decoded steps") {
    attn::manual_seed(32);
    const attn::BaseSelfAttention m({.embed_dim = 16});
    const attn::Tensor prompt = attn::rand({2, 4, 16});
    const attn::Tensor tokens = attn::rand({2, 32, 16});
    const textbook::DecodeComparison c = textbook::compare_decoding(m, prompt, tokens, 1);
    REQUIRE(c.max_abs_diff.size() == 32);
    CHECK(c.cache_length == 36);
    for (std::size_t n = 0; n < 32; ++n) {
        INFO("step " << n);
        CHECK(c.max_abs_diff[n] <= 1e-5f);
    }
    // Both paths against the written-out forward over the whole 36-token sequence.
    const attn::Tensor full = reference_forward(m, attn::cat({prompt, tokens}, 1));
    const attn::Tensor expected = attn::slice(full, 1, 4, 36);
    CHECK(test::max_abs_diff(c.cached, expected) < 1e-5f);
    CHECK(test::max_abs_diff(c.recomputed, expected) < 1e-5f);
}

TEST_CASE("feeding chunks of Sq > 1 new tokens with the cache equals recomputation") {
    attn::manual_seed(5);
    const attn::BaseSelfAttention m({.embed_dim = 8});
    const attn::Tensor prompt = attn::rand({3, 2, 8});
    const attn::Tensor tokens = attn::rand({3, 11, 8});
    const attn::Tensor expected = attn::slice(reference_forward(m, attn::cat({prompt, tokens}, 1)), 1, 2, 13);
    for (std::size_t chunk : {1u, 2u, 3u, 5u, 11u, 20u}) {
        INFO("chunk " << chunk);
        const textbook::DecodeComparison c = textbook::compare_decoding(m, prompt, tokens, chunk);
        CHECK(attn::allclose(c.cached, c.recomputed, 0.0, 1e-5));
        CHECK(test::max_abs_diff(c.cached, expected) < 1e-5f);
    }
    // One chunk by hand: 3 new tokens after 2 cached ones use the [3, 5] cut of the triangle.
    const attn::BaseOutput first = m(prompt);
    const attn::KVCache cache(first.key, first.value);
    const attn::BaseOutput step = m(attn::slice(tokens, 1, 0, 3), std::nullopt, &cache);
    REQUIRE(attn::shape_of(step.attention_weights) == attn::Shape{3, 3, 5});
    CHECK(step.attention_weights(0, 0, 3) == 0.0f);  // token 2 does not see token 3
    CHECK(step.attention_weights(0, 0, 2) > 0.0f);   // but sees itself
    CHECK(step.attention_weights(0, 1, 4) == 0.0f);
    CHECK(step.attention_weights(0, 2, 4) > 0.0f);
    CHECK(attn::shape_of(step.key) == attn::Shape{3, 5, 8});
}

TEST_CASE("the cache works with an attention mask covering cached and new tokens") {
    attn::manual_seed(9);
    attn::BaseSelfAttention m({.embed_dim = 8});
    m.fully_masked_rows = attn::FullyMaskedRows::zero;  // the prompt is left padded
    const attn::Tensor x = attn::rand({2, 6, 8});
    const attn::LongTensor mask = {{0, 0, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}};
    const attn::BaseOutput full = m(x, mask);
    const attn::BaseOutput prompt = m(attn::slice(x, 1, 0, 5), attn::LongTensor(xt::view(mask, xt::all(), xt::range(0, 5))));
    const attn::KVCache cache(prompt.key, prompt.value);
    const attn::BaseOutput step = m(attn::slice(x, 1, 5, 6), mask, &cache);
    CHECK(test::max_abs_diff(step.attention_output, attn::slice(full.attention_output, 1, 5, 6)) < 1e-6f);
    CHECK(test::max_abs_diff(full.attention_output, reference_forward(m, x, &mask)) < 1e-6f);
}

TEST_CASE("bad shapes throw std::invalid_argument naming expected and actual shapes") {
    attn::manual_seed(1);
    const attn::BaseSelfAttention m({.embed_dim = 16});
    const attn::Tensor x = attn::rand({2, 1, 16});
    const attn::KVCache cache(attn::rand({2, 4, 16}), attn::rand({2, 4, 16}));
    // x of the wrong width
    test::require_invalid([&] { m(attn::rand({2, 1, 8})); }, {"[B, S, 16]", "[2, 1, 8]"});
    test::require_invalid([&] { m(attn::rand({2, 16})); }, {"[B, S, 16]", "[2, 16]"});
    // a cache whose batch size or width does not fit
    const attn::KVCache wrong_batch(attn::rand({3, 4, 16}), attn::rand({3, 4, 16}));
    test::require_invalid([&] { m(x, std::nullopt, &wrong_batch); }, {"[2, S_past, 16]", "[3, 4, 16]"});
    const attn::KVCache wrong_width(attn::rand({2, 4, 8}), attn::rand({2, 4, 8}));
    test::require_invalid([&] { m(x, std::nullopt, &wrong_width); }, {"[2, S_past, 16]", "[2, 4, 8]"});
    // a cache whose key and value differ
    test::require_invalid([&] { attn::KVCache(attn::rand({2, 4, 16}), attn::rand({2, 3, 16})); },
                    {"[2, 4, 16]", "[2, 3, 16]"});
    test::require_invalid([&] { attn::KVCache(attn::rand({16}), attn::rand({16})); }, {"at least 2-D", "[16]"});
    // a cache of another rank: fine for the one KVCache, not for this module's [B, S, E]
    const attn::KVCache flat(attn::rand({4, 16}), attn::rand({4, 16}));
    test::require_invalid([&] { m(x, std::nullopt, &flat); }, {"[2, S_past, 16]", "[4, 16]"});
    // an attention mask that covers only the new token, not the cached ones
    const attn::LongTensor short_mask = xt::ones<std::int64_t>(attn::Shape{2, 1});
    test::require_invalid([&] { m(x, short_mask, &cache); }, {"[2, 5]", "[2, 1]"});
    const attn::LongTensor three_rows = xt::ones<std::int64_t>(attn::Shape{3, 5});
    test::require_invalid([&] { m(x, three_rows, &cache); }, {"[2, 5]", "[3, 5]"});
    // the steps on their own
    test::require_invalid([&] { m.calculate_final_output(attn::rand({2, 1, 5}), attn::rand({2, 4, 16})); },
                    {"[2, 5, 16]", "[2, 4, 16]"});
    test::require_invalid([&] { m.apply_causal_mask(attn::rand({2, 5, 4})); }, {"Sq = 5", "Sk = 4"});
    // decoding helpers
    test::require_invalid([&] { attn::decode_with_cache(m, attn::rand({2, 4, 16}), attn::rand({3, 2, 16})); },
                    {"[2, N, 16]", "[3, 2, 16]"});
    CHECK_THROWS_AS(attn::decode_with_cache(m, attn::rand({2, 4, 16}), attn::rand({2, 2, 16}), 0),
                    std::invalid_argument);
}

TEST_CASE("kv_cache_bytes_per_token: 2 x layers x heads x head_dim x bytes") {
    CHECK(attn::kv_cache_bytes_per_token(1, 1, 16) == 128);             // 000: E = 16, float32
    CHECK(attn::kv_cache_bytes_per_token(12, 12, 64) == 73728);          // GPT-2 small, float32
    CHECK(attn::kv_cache_bytes_per_token(32, 8, 128, 2) == 131072);      // Mistral-7B, float16
    const attn::KVCache cache(attn::zeros({2, 4, 16}), attn::zeros({2, 4, 16}));
    CHECK(cache.bytes() == 2 * 4 * attn::kv_cache_bytes_per_token(1, 1, 16));
    CHECK(cache.batch_size() == 2);
    CHECK(cache.length() == 4);
    CHECK(cache.key.shape()[2] == 16);
}

TEST_CASE("relation:cached_equals_uncached") {
    // The book: In [39] (without the cache) and In [40] (with it) print the same numbers, as do
    // In [44] and In [45]; only the layout differs ([B, E] vs [B, 1, E]).
    for (const auto& [a, b] : {std::pair{"000-In39", "000-In40"}, std::pair{"000-In44", "000-In45"}}) {
        INFO(a << " vs " << b);
        const auto na = test::printed_numbers(a), nb = test::printed_numbers(b);
        REQUIRE(na.size() == 32);  // B = 2 rows of E = 16
        REQUIRE(nb.size() == 32);
        for (std::size_t i = 0; i < na.size(); ++i) CHECK(na[i].text == nb[i].text);
    }
    // The library on In [43]'s procedure: cached and uncached agree to float32 rounding.
    attn::manual_seed(43);
    const attn::Tensor z = attn::rand({2, 4, 16});
    const attn::BaseSelfAttention m({.embed_dim = 16});
    const attn::BaseOutput out = m(z);
    const attn::KVCache cache(out.key, out.value);
    const attn::Tensor new_token = attn::rand({2, 1, 16});
    const attn::BaseOutput uncached = m(attn::cat({z, new_token}, 1));
    const attn::BaseOutput cached = m(new_token, std::nullopt, &cache);
    CHECK(test::max_abs_diff(attn::slice(uncached.attention_output, 1, 4, 5), cached.attention_output) < 1e-6f);
    CHECK(attn::shape_of(cached.key) == attn::Shape{2, 5, 16});
    CHECK(test::max_abs_diff(cached.key, uncached.key) < 1e-6f);
}

TEST_CASE("relation:rounding_level_difference") {
    // In [46] = In [44] - In [45] in float32: every difference is at most a few float32 ulps of
    // the numbers summed to make that output. An output element is a sum (output_proj over the
    // context vector, plus bias) whose terms have the size of the row's outputs, and rounding
    // errors scale with the terms, not with the sum: -0.0030 (element 0) is a cancellation,
    // and its difference 1.49e-08 is 2^-26, one ulp at 0.25. So the scale is the largest |y| of
    // the row (the printed In [44] values, plus 5e-5 for their rounding), and the bound is 4 ulps
    // there: two float32 paths of a few roundings each. The notebook's worst is 1 ulp (2.98e-08
    // at 0.4956).
    const auto diff = test::printed_numbers("000-In46");
    const auto value = test::printed_numbers("000-In44");
    REQUIRE(diff.size() == 32);
    REQUIRE(value.size() == 32);
    std::size_t nonzero = 0;
    for (std::size_t row = 0; row < 2; ++row) {
        double scale = 0;
        for (std::size_t e = 0; e < 16; ++e) scale = std::max(scale, std::fabs(value[row * 16 + e].value) + 5e-5);
        for (std::size_t e = 0; e < 16; ++e) {
            const auto& d = diff[row * 16 + e];
            INFO("row " << row << " element " << e << ": " << d.text << ", row scale " << scale);
            CHECK(std::fabs(d.value) <= 4 * ulp_at(scale));
            // Far below the 4 printed decimals: In [44] and In [45] print identically.
            CHECK(std::fabs(d.value) < 5e-5);
            nonzero += d.value != 0.0;
        }
    }
    CHECK(nonzero > 0);  // not a copy: the two paths really round differently
    // The bound is tight enough to catch a real error: 1e-6 is about 30 ulps at 0.5.
    CHECK_FALSE(1e-6 <= 4 * ulp_at(0.5));

    // The library's own difference on In [43]'s procedure obeys the same bound.
    attn::manual_seed(43);
    const attn::Tensor z = attn::rand({2, 4, 16});
    const attn::BaseSelfAttention m({.embed_dim = 16});
    const attn::BaseOutput out = m(z);
    const attn::KVCache cache(out.key, out.value);
    const attn::Tensor new_token = attn::rand({2, 1, 16});
    const attn::Tensor uncached = attn::slice(m(attn::cat({z, new_token}, 1)).attention_output, 1, 4, 5);
    const attn::Tensor cached = m(new_token, std::nullopt, &cache).attention_output;
    for (std::size_t b = 0; b < 2; ++b) {
        double scale = 0;
        for (std::size_t e = 0; e < 16; ++e) scale = std::max(scale, double(std::fabs(uncached(b, 0, e))));
        for (std::size_t e = 0; e < 16; ++e) CHECK(std::fabs(uncached(b, 0, e) - cached(b, 0, e)) <= 4 * ulp_at(scale));
    }
}

}  // namespace test_kv_cache
