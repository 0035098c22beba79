// Tests of the online softmax (chapter 12, attention/online_softmax.hpp) and of the attention
// core's tiled backend (sdpa.hpp, kernels/tiled_attention.hpp) against its step backend.
//
// Every expected value is a relation to another computation of the library that chapter 7 or
// chapter 9 already checks against the book or the oracle: attn::softmax, the naive
// attention on the whole [T, T] scores (matmul, masked_fill, masked_softmax, matmul), and
// MultiHeadAttention::forward. The bound: the tiled result differs from the naive one by at
// most kUlpBound float32 spacings at max |v| (the outputs are weighted averages of the
// values; both paths round each score identically, then sum the exponentials and the
// weighted values in a different order and normalise at a different moment).
#include <catch2/catch.hpp>

#include "support.hpp"

#include <cmath>
#include <optional>
#include <vector>

#include "attn/attention/masks.hpp"
#include "attn/attention/online_softmax.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/core/ulp.hpp"
#include "attn/modules/multihead.hpp"
#include "attn/attention/padding.hpp"
#include "attn/print/print.hpp"
#include "attn/core/ulp.hpp"

namespace test_flash {  // every test file is a namespace of its own (tests/meson.build)

namespace {

namespace flash = attn::flash;

constexpr double kUlpBound = 16.0;

float max_abs(const attn::Tensor& x) {
    float m = 0.0f;
    for (float v : x) m = std::max(m, std::abs(v));
    return m;
}

// A left-padding mask [B, T]: sequence b has `pad[b]` pad tokens in front.
attn::LongTensor left_padding(std::size_t T, const std::vector<std::size_t>& pad) {
    attn::LongTensor m = xt::ones<std::int64_t>(attn::Shape{pad.size(), T});
    for (std::size_t b = 0; b < pad.size(); ++b)
        for (std::size_t t = 0; t < std::min(T, pad[b]); ++t) m(b, t) = 0;
    return m;
}

// The core on one backend, chapter 12's way: scores / sqrt(d), fully masked rows give zeros.
attn::Tensor attention(const attn::Tensor& q, const attn::Tensor& k, const attn::Tensor& v,
                       attn::SDPABackend backend, bool causal,
                       const std::optional<attn::LongTensor>& mask = std::nullopt,
                       std::size_t block_q = 64, std::size_t block_k = 64) {
    attn::BoolTensor allow;
    if (mask) allow = attn::key_padding_mask(*mask);
    const float d = static_cast<float>(q.shape().back());
    return attn::scaled_dot_product_attention(
        q, k, v,
        {.attn_mask = mask ? &allow : nullptr, .is_causal = causal,
         .scale = attn::ScoreScale::divide_by(std::sqrt(d)),
         .fully_masked_rows = attn::FullyMaskedRows::zero, .backend = backend,
         .block_q = block_q, .block_k = block_k});
}

// MultiHeadAttention's forward with the tiled backend and the given tiles.
attn::Tensor tiled_forward(const attn::MultiHeadAttention& m, const attn::Tensor& x, std::size_t block) {
    const auto heads = [&](const attn::Tensor& y) { return attn::HeadsView::split(y, m.num_heads, m.head_dim); };
    return m.out_proj(attn::attend(heads(m.W_query(x)), heads(m.W_key(x)), heads(m.W_value(x)),
                                   {.is_causal = true,
                                    .scale = attn::ScoreScale::divide_by(std::sqrt(float(m.head_dim))),
                                    .backend = attn::SDPABackend::tiled, .block_q = block, .block_k = block}));
}

struct Case {
    std::size_t B, H, T, d, block_q, block_k;
    bool causal, padded;
};

double tiled_vs_naive_ulps(const Case& c, bool naive_causal, attn::Generator& gen) {
    const attn::Tensor q = attn::randn({c.B, c.H, c.T, c.d}, gen);
    const attn::Tensor k = attn::randn({c.B, c.H, c.T, c.d}, gen);
    const attn::Tensor v = attn::randn({c.B, c.H, c.T, c.d}, gen);
    std::optional<attn::LongTensor> mask;
    if (c.padded) {
        std::vector<std::size_t> pad;
        for (std::size_t b = 0; b < c.B; ++b) pad.push_back((b * 3) % (c.T + 1));
        mask = left_padding(c.T, pad);
    }
    const attn::Tensor tiled = attention(q, k, v, attn::SDPABackend::tiled, c.causal, mask, c.block_q, c.block_k);
    const attn::Tensor naive = attention(q, k, v, attn::SDPABackend::step, naive_causal, mask);
    REQUIRE(attn::count_nan(tiled) == 0);
    REQUIRE(attn::count_nan(naive) == 0);
    return attn::max_diff_in_ulps(tiled, naive, max_abs(v));
}

std::vector<Case> random_cases(attn::Generator& gen, int n) {
    std::vector<Case> cases;
    for (int i = 0; i < n; ++i) {
        const auto r = attn::randint(1, 1000, {8}, gen);
        cases.push_back({.B = std::size_t(1 + r(0) % 3), .H = std::size_t(1 + r(1) % 4),
                         .T = std::size_t(1 + r(2) % 150), .d = std::size_t(1 + r(3) % 40),
                         .block_q = std::size_t(1 + r(4) % 48), .block_k = std::size_t(1 + r(5) % 48),
                         .causal = r(6) % 2 == 0, .padded = r(7) % 2 == 0});
    }
    return cases;
}

}  // namespace

TEST_CASE("three-pass and online softmax agree with attn::softmax") {
    attn::Generator gen(7);
    const attn::Tensor x = attn::randn({5, 37}, gen) * 10.0f;
    const attn::Tensor ref = attn::softmax(x);
    CHECK(attn::max_ulp_distance(flash::softmax_three_pass(x), ref) <= 4);
    CHECK(attn::max_ulp_distance(flash::softmax_online(x), ref) <= 4);
    // The online normaliser's (m, l) are the three-pass maximum and sum.
    const attn::Tensor row = attn::select(x, 0);
    std::vector<flash::Normalizer> trace;
    const auto st = flash::online_normalizer(row.data(), row.size(), &trace);
    CHECK(st.m == xt::amax(row)());
    CHECK(trace.size() == row.size());
    float l = 0.0f;
    for (float v : row) l += std::exp(v - st.m);
    CHECK(st.l == Approx(l).epsilon(1e-5));
}

TEST_CASE("the fused row's last state is softmax(scores) @ values, for any block size") {
    attn::Generator gen(11);
    const attn::Tensor k = attn::randn({23, 5}, gen), v = attn::randn({23, 4}, gen);
    const attn::Tensor q = attn::randn({5}, gen);
    const attn::Tensor expected = attn::matmul(attn::softmax(attn::matmul(k, q)), v);
    for (std::size_t block : {1u, 2u, 5u, 23u, 64u}) {
        const auto trace = flash::fused_row_trace(q, k, v, block, 1.0f);
        REQUIRE(trace.size() == (23 + block - 1) / block);
        const auto& last = trace.back();
        CHECK(last.keys_seen == 23);
        for (std::size_t e = 0; e < 4; ++e)
            CHECK(last.O[e] / last.l == Approx(expected(e)).margin(1e-6));
    }
    attn::Tensor bad_v = attn::randn({22, 4}, gen);
    test::require_invalid([&] { flash::fused_row_trace(q, k, bad_v, 2); }, {"(v)", "[23, dv]"});
    test::require_invalid([&] { flash::fused_row_trace(q, k, v, 0); }, {"block_k", "0"});
}

TEST_CASE("tiled == naive within the ulp bound on random sizes, masks and block sizes") {
    attn::Generator gen(2024);
    double worst = 0.0;
    for (const Case& c : random_cases(gen, 40)) {
        INFO("B=" << c.B << " H=" << c.H << " T=" << c.T << " d=" << c.d << " Br=" << c.block_q
                  << " Bc=" << c.block_k << " causal=" << c.causal << " padded=" << c.padded);
        const double ulps = tiled_vs_naive_ulps(c, c.causal, gen);
        CHECK(ulps <= kUlpBound);
        worst = std::max(worst, ulps);
    }
    WARN("largest difference: " << worst << " ulp of max |v|");
}

TEST_CASE("T not a multiple of the block sizes, and blocks larger than T") {
    attn::Generator gen(5);
    for (std::size_t T : {1u, 7u, 64u, 65u, 130u})
        for (bool causal : {false, true})
            CHECK(tiled_vs_naive_ulps({2, 3, T, 16, 64, 32, causal, true}, causal, gen) <= kUlpBound);
}

TEST_CASE("control: the same check fails when the naive path drops the causal mask", "[!shouldfail]") {
    attn::Generator gen(3);
    CHECK(tiled_vs_naive_ulps({1, 2, 40, 8, 16, 16, true, false}, false, gen) <= kUlpBound);
}

TEST_CASE("fully masked rows give zeros, never NaN (left padding under the causal mask)") {
    attn::Generator gen(9);
    const attn::Tensor q = attn::randn({2, 2, 6, 4}, gen), k = attn::randn({2, 2, 6, 4}, gen),
                       v = attn::randn({2, 2, 6, 4}, gen);
    const attn::LongTensor mask = left_padding(6, {3, 0});
    const attn::Tensor out = attention(q, k, v, attn::SDPABackend::tiled, true, mask, 2, 2);
    CHECK(attn::count_nan(out) == 0);
    // Queries 0..2 of sequence 0 see only pad keys: their rows are zeros.
    for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t t = 0; t < 3; ++t)
            for (std::size_t e = 0; e < 4; ++e) CHECK(out(0, h, t, e) == 0.0f);
    CHECK(out(0, 0, 3, 0) == v(0, 0, 3, 0));  // query 3 sees only key 3: its value
    // torch.softmax would give NaN on those rows; the naive path uses masked_softmax.
    CHECK(attn::count_nan(attention(q, k, v, attn::SDPABackend::step, true, mask)) == 0);
    CHECK(attn::count_nan(attention(q, k, v, attn::SDPABackend::fast, true, mask)) == 0);
}

TEST_CASE("the book's MultiHeadAttention through the tiled kernel prints as chapter 7") {
    const attn::Tensor inputs = textbook::inputs();
    const attn::Tensor batch = attn::stack({inputs, inputs}, 0);
    attn::manual_seed(123);
    const attn::MultiHeadAttention mha({.d_in = 3, .d_out = 2, .context_length = 6, .num_heads = 2});
    for (std::size_t block : {1u, 2u, 4u, 64u}) {
        const attn::Tensor tiled = tiled_forward(mha, batch, block);
        CHECK(attn::repr(tiled) == attn::repr(mha(batch)));
        CHECK(test::max_abs_diff(tiled, mha(batch)) < 1e-6);
    }
}

TEST_CASE("the tiled backend on random modules equals MultiHeadAttention::forward") {
    attn::Generator gen(77);
    for (std::size_t T : {5u, 33u}) {
        const attn::MultiHeadAttention mha({.d_in = 12, .d_out = 16, .context_length = 40, .num_heads = 4}, gen);
        const attn::Tensor x = attn::randn({3, T, 12}, gen);
        CHECK(test::max_abs_diff(tiled_forward(mha, x, 8), mha(x)) < 1e-5);
        const attn::SDPABackendGuard tiled(attn::SDPABackend::tiled);  // the module's own call
        CHECK(test::max_abs_diff(mha(x), tiled_forward(mha, x, 64)) == 0.0);
    }
}

TEST_CASE("invalid configs and shapes name what is wrong") {
    attn::Generator gen(1);
    const attn::Tensor q = attn::randn({1, 2, 4, 3}, gen), k = attn::randn({1, 2, 5, 3}, gen);
    test::require_invalid([&] { attention(q, k, k, attn::SDPABackend::tiled, false, std::nullopt, 0, 4); },
                          {"block_q", "0"});
    test::require_invalid([&] { attention(q, q, k, attn::SDPABackend::tiled, false); }, {"(value)", "[1, 2, 4, Ev]"});
    test::require_invalid([&] { attention(q, k, k, attn::SDPABackend::tiled, false, left_padding(4, {0})); },
                          {"attn_mask", "[1, 2, 4, 5]"});
}

}  // namespace test_flash
