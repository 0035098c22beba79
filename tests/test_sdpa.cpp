// Tests of the attention core (attention/sdpa.hpp): its three backends on random problems.
//
// - fast == step bit for bit (with the reference BLAS; within a stated bound with OpenBLAS,
//   whose products sum in another order): random batch, heads, grouped key/value heads, query
//   and key lengths, widths, is_causal, windows, positions (a cache's offset), boolean masks of
//   every broadcast shape, additive masks, both scalings, both fully-masked-row rules, dropout
//   (the same draws), every kernel this CPU runs, 1 and 2 threads; a decode step's one query
//   against up to 700 keys, nothing masked (the softmax of a row), scores of zero or large;
// - tiled == step within kUlpBound float32 spacings at max |v| (a different order of the same
//   sums; rows that are NaN on one are NaN on the other);
// - NaN in, NaN out, on every backend: a NaN query row, a NaN value behind a hidden key;
// - the backward against central differences of the forward, and grouped key/value heads
//   summing their query heads' gradients;
// - options and shapes that cannot work, named; a control that must fail.
// Expected values are the step path's, whose every operation chapters 4-9 check against the
// books and the oracle; nothing here measures time.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attn/attention/masks.hpp"
#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/kernels/gemm.hpp"

namespace test_sdpa {  // every test file is a namespace of its own (tests/meson.build)

namespace {

constexpr double kUlpBound = 16.0;
constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();

// Bit-for-bit equality, NaN equal to NaN (the backends may not agree on a NaN's payload).
long first_bit_difference(const attn::Tensor& a, const attn::Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) && std::isnan(y)) continue;
        if (std::memcmp(&x, &y, sizeof x) != 0) return long(i);
    }
    return -1;
}

// The step path's bits with the reference BLAS; with OpenBLAS the products sum in another
// order: within 1e-5 of the largest value.
void check_same(const attn::Tensor& fast, const attn::Tensor& step) {
#if ATTN_BLAS_REFERENCE
    CHECK(first_bit_difference(fast, step) == -1);
#else
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) {
        if (std::isnan(fast.data()[i]) != std::isnan(step.data()[i])) worst = 1e30;
        if (std::isnan(step.data()[i])) continue;
        worst = std::max(worst, std::abs(double(fast.data()[i]) - step.data()[i]));
        scale = std::max(scale, std::abs(double(step.data()[i])));
    }
    CHECK(worst <= 1e-5 * std::max(scale, 1.0));
#endif
}

// max |a - b| in float32 spacings at `scale`, NaN in the same places or infinite.
double diff_in_ulps(const attn::Tensor& a, const attn::Tensor& b, float scale) {
    const double ulp = std::nextafter(scale, 2 * scale) - scale;
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return std::numeric_limits<double>::infinity();
            continue;
        }
        worst = std::max(worst, std::abs(double(x) - double(y)) / ulp);
    }
    return worst;
}

float max_abs(const attn::Tensor& x) {
    float m = 0;
    for (float v : x) m = std::max(m, std::abs(v));
    return m;
}

// One random problem and its options (the masks live here, the options point at them).
struct Problem {
    attn::Tensor q, k, v;
    attn::BoolTensor allow;
    attn::Tensor bias;
    attn::SDPAOptions options;
    std::string text;

    // `most_queries`: the largest Tq drawn (4: a decode step's few queries, which the fast
    // kernels compute without packing).
    Problem(std::mt19937& rng, attn::Generator& gen, std::size_t most_queries = 70) {
        auto pick = [&](std::size_t lo, std::size_t hi) { return lo + rng() % (hi - lo + 1); };
        const std::size_t B = pick(1, 3), Hkv = pick(1, 3), H = Hkv * pick(1, 3);
        const std::size_t Tq = pick(1, most_queries), Tk = pick(1, 90), E = pick(1, 40), Ev = pick(1, 70);
        q = attn::randn({B, H, Tq, E}, gen);
        k = attn::randn({B, Hkv, Tk, E}, gen);
        v = attn::randn({B, Hkv, Tk, Ev}, gen);
        options.is_causal = rng() % 2;
        options.window = rng() % 3 == 0 ? pick(1, 20) : 0;
        if (rng() % 2) {  // a cache: the queries are the last Tq of the positions
            options.query_start = Tk > Tq ? Tk - Tq : 0;
            options.key_start = rng() % 4 == 0 ? pick(0, 5) : 0;
        }
        const int mask = int(rng() % 5);  // none, [Tq, Tk], [B, 1, 1, Tk], [B, H, Tq, Tk], [1, H, 1, Tk]
        const attn::Shape shapes[] = {{}, {Tq, Tk}, {B, 1, 1, Tk}, {B, H, Tq, Tk}, {1, H, 1, Tk}};
        if (mask) {
            allow = xt::empty<bool>(shapes[mask]);
            for (auto& a : allow) a = rng() % 5 != 0;
            options.attn_mask = &allow;
        }
        if (rng() % 3 == 0) {
            bias = attn::randn({Tq, Tk}, gen);
            options.attn_bias = &bias;
        }
        if (rng() % 2) options.scale = attn::ScoreScale::divide_by(std::sqrt(float(E)));
        options.fully_masked_rows = rng() % 2 ? attn::FullyMaskedRows::zero : attn::FullyMaskedRows::nan;
        options.dropout_p = rng() % 3 == 0 ? 0.3 : 0.0;
        options.block_q = pick(1, 40);
        options.block_k = pick(1, 40);
        text = "B=" + std::to_string(B) + " H=" + std::to_string(H) + " Hkv=" + std::to_string(Hkv) +
               " Tq=" + std::to_string(Tq) + " Tk=" + std::to_string(Tk) + " E=" + std::to_string(E) +
               " Ev=" + std::to_string(Ev) + " causal=" + std::to_string(options.is_causal) +
               " window=" + std::to_string(options.window) + " q0=" + std::to_string(options.query_start) +
               " k0=" + std::to_string(options.key_start) + " mask=" + std::to_string(mask) +
               " bias=" + std::to_string(options.attn_bias != nullptr) +
               " zero_rows=" + std::to_string(options.fully_masked_rows == attn::FullyMaskedRows::zero) +
               " dropout=" + std::to_string(options.dropout_p);
    }

    // The core on `backend`, its dropout drawn from a generator seeded 42.
    attn::Tensor run(attn::SDPABackend backend) const {
        attn::Generator gen(42);
        attn::SDPAOptions o = options;
        o.backend = backend;
        o.generator = &gen;
        return attn::scaled_dot_product_attention(q, k, v, o);
    }
};

// `p` on the fast backend with every kernel this CPU runs (1 thread) equals the step path.
void check_fast_on_every_kernel(const Problem& p) {
    const attn::Tensor step = p.run(attn::SDPABackend::step);
    for (const std::string& isa : attn::fast::available_isas()) {
        INFO(isa);
        attn::fast::use_isa(isa);
        check_same(p.run(attn::SDPABackend::fast), step);
    }
    attn::fast::use_isa(attn::fast::available_isas().front());
}

}  // namespace

TEST_CASE("fast == step bit for bit on random problems, every kernel and thread count") {
    std::mt19937 rng(2026);
    attn::Generator gen(1);
    for (int i = 0; i < 60; ++i) {
        const Problem p(rng, gen);
        INFO(p.text);
        const attn::Tensor step = p.run(attn::SDPABackend::step);
        for (const std::string& isa : attn::fast::available_isas()) {
            attn::fast::use_isa(isa);
            for (const int threads : {1, 2}) {
                INFO(isa << ", " << threads << " threads");
                omp_set_num_threads(threads);
                check_same(p.run(attn::SDPABackend::fast), step);
            }
        }
        attn::fast::use_isa(attn::fast::available_isas().front());
        omp_set_num_threads(1);
    }
}

TEST_CASE("a decode step's few queries (1 to 4, read without packing): fast == step bit for bit, every kernel") {
    std::mt19937 rng(45);
    attn::Generator gen(45);
    for (int i = 0; i < 80; ++i) {
        const Problem p(rng, gen, 4);
        INFO(p.text);
        check_fast_on_every_kernel(p);
    }
}

TEST_CASE("one query seeing every key unmasked (its softmax in a row): fast == step bit for bit, every kernel") {
    std::mt19937 rng(46);
    attn::Generator gen(46);
    for (int i = 0; i < 60; ++i) {
        Problem p(rng, gen, 1);
        // Longer rows than the random problems' (every lane of the sum, the vectors' tails),
        // nothing masked: no boolean or additive mask, no window, a causal query at the end.
        const attn::Shape qs = attn::shape_of(p.q), ks = attn::shape_of(p.k), vs = attn::shape_of(p.v);
        const std::size_t Tk = 1 + rng() % 700;
        p.k = attn::randn({ks[0], ks[1], Tk, ks[3]}, gen);
        p.v = attn::randn({vs[0], vs[1], Tk, vs[3]}, gen);
        if (i % 4 == 0) p.q = attn::Tensor(p.q * 0.0f);  // every score 0: a maximum of zero
        if (i % 4 == 1) p.q = attn::Tensor(p.q * 40.0f);  // weights near one-hot
        p.options.attn_mask = nullptr;
        p.options.attn_bias = nullptr;
        p.options.window = 0;
        p.options.query_start = Tk - 1;
        p.options.key_start = 0;
        INFO(p.text << " -> Tk=" << Tk << " E=" << qs[3]);
        check_fast_on_every_kernel(p);
    }
}

TEST_CASE("tiled == step within the ulp bound on random problems, NaN rows in the same places") {
    std::mt19937 rng(77);
    attn::Generator gen(2);
    double worst = 0;
    for (int i = 0; i < 60; ++i) {
        const Problem p(rng, gen);
        INFO(p.text);
        const double ulps = diff_in_ulps(p.run(attn::SDPABackend::tiled), p.run(attn::SDPABackend::step),
                                         std::max(max_abs(p.v), 1e-3f) /
                                             float(1.0 - p.options.dropout_p));  // outputs are averages of v
        CHECK(ulps <= kUlpBound);
        worst = std::max(worst, ulps);
    }
    WARN("largest difference: " << worst << " ulp");
}

TEST_CASE("control: fast against a step path that divides where it should multiply", "[!shouldfail]") {
    attn::Generator gen(3);
    const attn::Tensor q = attn::randn({1, 2, 9, 8}, gen), k = attn::randn({1, 2, 9, 8}, gen),
                       v = attn::randn({1, 2, 9, 8}, gen);
    const attn::Tensor fast = attn::scaled_dot_product_attention(
        q, k, v, {.is_causal = true, .scale = attn::ScoreScale::multiply_by(0.5f), .backend = attn::SDPABackend::fast});
    const attn::Tensor step = attn::scaled_dot_product_attention(
        q, k, v, {.is_causal = true, .scale = attn::ScoreScale::divide_by(0.5f), .backend = attn::SDPABackend::step});
    CHECK(first_bit_difference(fast, step) == -1);
}

TEST_CASE("NaN in, NaN out, on every backend") {
    attn::Generator gen(4);
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        INFO(attn::backend_name(backend));
        for (const auto rows : {attn::FullyMaskedRows::nan, attn::FullyMaskedRows::zero}) {
            attn::Tensor q = attn::randn({1, 1, 6, 4}, gen);
            const attn::Tensor k = attn::randn({1, 1, 6, 4}, gen);
            attn::Tensor v = attn::randn({1, 1, 6, 4}, gen);
            const attn::SDPAOptions causal{.is_causal = true, .fully_masked_rows = rows, .backend = backend,
                                           .block_q = 2, .block_k = 2};
            // A NaN query row: that row is NaN, the others are not.
            q(0, 0, 2, 1) = nan_f;
            const attn::Tensor out = attn::scaled_dot_product_attention(q, k, v, causal);
            for (std::size_t t = 0; t < 6; ++t)
                for (std::size_t e = 0; e < 4; ++e) CHECK(std::isnan(out(0, 0, t, e)) == (t == 2));
            // A NaN value behind a key hidden from query 0: 0 * NaN is NaN (PyTorch's math path).
            q(0, 0, 2, 1) = 0.5f;
            v(0, 0, 5, 3) = nan_f;
            const attn::Tensor behind = attn::scaled_dot_product_attention(q, k, v, causal);
            CHECK(std::isnan(behind(0, 0, 0, 3)));
            CHECK_FALSE(std::isnan(behind(0, 0, 0, 0)));
            // A row that sees no key: NaN (torch.softmax) or zeros (masked_softmax).
            attn::BoolTensor none = xt::ones<bool>(attn::Shape{6, 6});
            for (std::size_t j = 0; j < 6; ++j) none(1, j) = false;
            v(0, 0, 5, 3) = 1.0f;
            attn::SDPAOptions masked = causal;
            masked.attn_mask = &none;
            const attn::Tensor blind = attn::scaled_dot_product_attention(q, k, v, masked);
            CHECK(std::isnan(blind(0, 0, 1, 0)) == (rows == attn::FullyMaskedRows::nan));
            if (rows == attn::FullyMaskedRows::zero) CHECK(blind(0, 0, 1, 0) == 0.0f);
        }
    }
}

// The fast backend skips the keys a whole block of queries may not see (their terms are exact
// zeros) unless an input is not finite: then a hidden key's 0 * inf is NaN in the step path,
// and must be in the fast one. With 72 tokens, every block width (8, 16, 32 queries) has blocks
// that would skip key 70.
TEST_CASE("an infinite value or key behind what a block of queries sees: the fast backend skips no key") {
    attn::Generator gen(9);
    const attn::Tensor q = attn::randn({1, 1, 72, 4}, gen), k0 = attn::randn({1, 1, 72, 4}, gen),
                       v0 = attn::randn({1, 1, 72, 4}, gen), grad = attn::randn({1, 1, 72, 4}, gen);
    for (const bool in_value : {true, false}) {
        INFO((in_value ? "value" : "key") << " 70 infinite");
        attn::Tensor k = k0, v = v0;
        (in_value ? v : k)(0, 0, 70, 1) = std::numeric_limits<float>::infinity();
        attn::SDPAOptions o{.is_causal = true, .backend = attn::SDPABackend::step};
        const attn::SDPAForward f_step = attn::scaled_dot_product_attention_forward(q, k, v, o);
        const attn::SDPAGradients g_step = attn::scaled_dot_product_attention_backward(grad, q, k, v, f_step, o);
        o.backend = attn::SDPABackend::fast;
        const attn::SDPAForward f_fast = attn::scaled_dot_product_attention_forward(q, k, v, o);
        const attn::SDPAGradients g_fast = attn::scaled_dot_product_attention_backward(grad, q, k, v, f_fast, o);
        // The step path's NaN reach the first queries (which do not see key 70).
        CHECK(std::isnan((in_value ? f_step.output : g_step.grad_query)(0, 0, 0, 1)));
        check_same(f_fast.output, f_step.output);
        check_same(g_fast.grad_query, g_step.grad_query);
        check_same(g_fast.grad_key, g_step.grad_key);
        check_same(g_fast.grad_value, g_step.grad_value);
    }
}

TEST_CASE("grouped key/value heads are repeat_interleave'd keys and values, on every backend") {
    attn::Generator gen(5);
    const attn::Tensor q = attn::randn({2, 6, 11, 8}, gen), k = attn::randn({2, 2, 11, 8}, gen),
                       v = attn::randn({2, 2, 11, 5}, gen);
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        const attn::SDPAOptions o{.is_causal = true, .backend = backend};
        const attn::Tensor grouped = attn::scaled_dot_product_attention(q, k, v, o);
        const attn::Tensor repeated = attn::scaled_dot_product_attention(
            q, attn::repeat_interleave(k, 3, 1), attn::repeat_interleave(v, 3, 1), o);
        CHECK(first_bit_difference(grouped, repeated) == -1);
    }
}

TEST_CASE("attend writes the heads merged, as transpose(1, 2).contiguous().view(B, T, H * dv)") {
    attn::Generator gen(6);
    const attn::Tensor x = attn::randn({2, 7, 12}, gen);  // [B, T, 3 heads of 4]
    const attn::HeadsView heads = attn::HeadsView::split(x, 3, 4);
    const attn::Tensor bhtd = heads.contiguous();
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        const attn::SDPAOptions o{.is_causal = true, .backend = backend};
        const attn::Tensor merged = attn::attend(heads, heads, heads, o);
        const attn::Tensor expected =
            attn::view(attn::transpose(attn::scaled_dot_product_attention(bhtd, bhtd, bhtd, o), 1, 2), {2, 7, 12});
        CHECK(first_bit_difference(merged, expected) == -1);
    }
}

TEST_CASE("the backward equals central differences of the forward") {
    attn::Generator gen(7);
    const attn::Tensor q = attn::randn({1, 4, 5, 3}, gen), k = attn::randn({1, 2, 6, 3}, gen),
                       v = attn::randn({1, 2, 6, 2}, gen), g = attn::randn({1, 4, 5, 2}, gen);
    attn::BoolTensor allow = xt::ones<bool>(attn::Shape{5, 6});
    allow(0, 1) = false;
    const attn::SDPAOptions o{.attn_mask = &allow, .is_causal = true, .query_start = 1,
                              .scale = attn::ScoreScale::divide_by(std::sqrt(3.0f))};
    const attn::SDPAForward f = attn::scaled_dot_product_attention_forward(q, k, v, o);
    const attn::SDPAGradients grads = attn::scaled_dot_product_attention_backward(g, q, k, v, f, o);
    // L = sum(g * out); dL/dx by central differences in float32, step 1e-2.
    auto loss = [&](const attn::Tensor& qq, const attn::Tensor& kk, const attn::Tensor& vv) {
        const attn::Tensor out = attn::scaled_dot_product_attention(qq, kk, vv, o);
        double s = 0;
        for (std::size_t i = 0; i < out.size(); ++i) s += double(out.data()[i]) * g.data()[i];
        return s;
    };
    auto check = [&](int which, const attn::Tensor& grad) {
        const attn::Tensor& x0 = which == 0 ? q : which == 1 ? k : v;
        for (std::size_t i = 0; i < x0.size(); ++i) {
            attn::Tensor up = x0, down = x0;
            up.data()[i] += 1e-2f;
            down.data()[i] -= 1e-2f;
            const double lp = which == 0 ? loss(up, k, v) : which == 1 ? loss(q, up, v) : loss(q, k, up);
            const double lm = which == 0 ? loss(down, k, v) : which == 1 ? loss(q, down, v) : loss(q, k, down);
            const double numeric = (lp - lm) / (double(up.data()[i]) - double(down.data()[i]));
            CHECK(grad.data()[i] == Approx(numeric).epsilon(2e-2).margin(2e-3));
        }
    };
    check(0, grads.grad_query);
    check(1, grads.grad_key);  // summed over the two query heads each key/value head serves
    check(2, grads.grad_value);
}

TEST_CASE("dropout: every backend draws the step path's mask and the backward reuses it") {
    attn::Generator gen(8);
    const attn::Tensor q = attn::randn({2, 2, 7, 4}, gen), k = attn::randn({2, 2, 7, 4}, gen),
                       v = attn::randn({2, 2, 7, 4}, gen);
    attn::SDPAOptions o{.is_causal = true, .dropout_p = 0.4};
    attn::Generator g_step(9), g_fast(9);
    o.generator = &g_step;
    o.backend = attn::SDPABackend::step;
    const attn::SDPAForward step = attn::scaled_dot_product_attention_forward(q, k, v, o);
    o.generator = &g_fast;
    o.backend = attn::SDPABackend::fast;
    const attn::SDPAForward fast = attn::scaled_dot_product_attention_forward(q, k, v, o);
    check_same(fast.output, step.output);
    CHECK(g_fast.draws_since_seed() == g_step.draws_since_seed());
    CHECK(g_step.draws_since_seed() == 2 * (2 * 2 * 7 * 7));  // portable: a 64-bit draw per weight
    CHECK(first_bit_difference(fast.dropout_noise, step.dropout_noise) == -1);
    // The backward with the saved mask draws nothing.
    const attn::Tensor g = attn::randn({2, 2, 7, 4}, gen);
    const std::uint64_t before = g_fast.draws_since_seed();
    const attn::SDPAGradients grads = attn::scaled_dot_product_attention_backward(g, q, k, v, fast, o);
    CHECK(g_fast.draws_since_seed() == before);
    CHECK(attn::shape_of(grads.grad_value) == attn::Shape{2, 2, 7, 4});
}

TEST_CASE("options and shapes that cannot work are named") {
    const attn::Tensor q = attn::zeros({1, 4, 3, 2}), k = attn::zeros({1, 2, 5, 2});
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, k, {.dropout_p = 1.5}),
                      Catch::Contains("dropout_p in [0, 1]"));
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, k, {.block_q = 0}),
                      Catch::Contains("block_q and block_k > 0"));
    CHECK_THROWS_WITH(
        attn::scaled_dot_product_attention(q, k, k, {.scale = attn::ScoreScale::multiply_by(nan_f)}),
        Catch::Contains("expected a finite multiplier (scale = multiply_by(s)), got nan"));
    CHECK_THROWS_WITH(
        attn::scaled_dot_product_attention(q, k, k, {.backend = static_cast<attn::SDPABackend>(9)}),
        Catch::Contains("backend holds 9"));
    CHECK_THROWS_WITH(
        attn::scaled_dot_product_attention(q, k, k, {.fully_masked_rows = static_cast<attn::FullyMaskedRows>(5)}),
        Catch::Contains("fully_masked_rows holds 5"));
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, attn::zeros({1, 3, 5, 2}), attn::zeros({1, 3, 5, 2})),
                      Catch::Contains("(key)") && Catch::Contains("H_kv dividing 4") &&
                      Catch::Contains("[1, 3, 5, 2]"));
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, attn::zeros({1, 2, 4, 2})),
                      Catch::Contains("(value)") && Catch::Contains("[1, 2, 5, Ev]"));
    const attn::BoolTensor m = xt::ones<bool>(attn::Shape{3, 4});
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, k, {.attn_mask = &m}),
                      Catch::Contains("(attn_mask)") && Catch::Contains("[1, 4, 3, 5]") && Catch::Contains("[3, 4]"));
    CHECK_THROWS_WITH(attn::set_default_sdpa_backend(attn::SDPABackend::automatic),
                      Catch::Contains("expected step, tiled or fast"));
    CHECK_THROWS_WITH(attn::HeadsView::split(attn::zeros({1, 2, 6}), 2, 4),
                      Catch::Contains("C >= column + num_heads * head_dim"));
}

TEST_CASE("extreme windows and positions: a window beyond every reach hides nothing") {
    attn::Generator gen(10);
    const attn::Tensor q = attn::randn({1, 2, 9, 4}, gen), k = attn::randn({1, 2, 9, 4}, gen);
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        const attn::Tensor causal = attn::scaled_dot_product_attention(q, k, k, {.is_causal = true, .backend = backend});
        for (const std::size_t w : {std::size_t{10}, std::size_t{1} << 40, std::size_t{1} << 63, ~std::size_t{0}})
            CHECK(first_bit_difference(attn::scaled_dot_product_attention(
                                           q, k, k, {.is_causal = true, .window = w, .backend = backend}),
                                       causal) == -1);
    }
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, k, {.query_start = std::size_t{1} << 63}),
                      Catch::Contains("query_start and key_start < 2^62"));
}

TEST_CASE("scale as PyTorch's: 0 makes every score 0, a negative one multiplies, the default is 1/sqrt(E)") {
    attn::Generator gen(6);
    const attn::Tensor q = attn::randn({1, 2, 5, 4}, gen), k = attn::randn({1, 2, 5, 4}, gen),
                       v = attn::randn({1, 2, 5, 3}, gen);
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
        INFO(attn::backend_name(backend));
        // scale=0.0: uniform weights over the visible keys, so each output row is the mean of
        // the values its query sees (PyTorch 1.13's F.scaled_dot_product_attention(..., scale=0.0)
        // in torch 2: every score 0).
        const attn::Tensor zero = attn::scaled_dot_product_attention(
            q, k, v, {.is_causal = true, .scale = attn::ScoreScale::multiply_by(0.0f), .backend = backend});
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < 5; ++i)
                for (std::size_t e = 0; e < 3; ++e) {
                    double mean = 0;
                    for (std::size_t j = 0; j <= i; ++j) mean += v(0, h, j, e);
                    CHECK(zero(0, h, i, e) == Approx(mean / double(i + 1)).margin(1e-6));
                }
        // A negative scale is the positive one applied to -q.
        const attn::Tensor negative = attn::scaled_dot_product_attention(
            q, k, v, {.scale = attn::ScoreScale::multiply_by(-0.5f), .backend = backend});
        const attn::Tensor flipped = attn::scaled_dot_product_attention(
            attn::Tensor(-q), k, v, {.scale = attn::ScoreScale::multiply_by(0.5f), .backend = backend});
        CHECK(first_bit_difference(negative, flipped) == -1);
        // The default, its own state, is a multiplication by 1/sqrt(E).
        CHECK(first_bit_difference(
                  attn::scaled_dot_product_attention(q, k, v, {.backend = backend}),
                  attn::scaled_dot_product_attention(
                      q, k, v, {.scale = attn::ScoreScale::multiply_by(1.0f / std::sqrt(4.0f)), .backend = backend})) == -1);
    }
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(q, k, v, {.scale = attn::ScoreScale::divide_by(0.0f)}),
                      Catch::Contains("expected a finite divisor other than 0 (scale = divide_by(d)), got 0"));
}

TEST_CASE("the backend guard restores the default") {
    CHECK(attn::default_sdpa_backend() == attn::SDPABackend::fast);
    {
        const attn::SDPABackendGuard step(attn::SDPABackend::step);
        CHECK(attn::default_sdpa_backend() == attn::SDPABackend::step);
    }
    CHECK(attn::default_sdpa_backend() == attn::SDPABackend::fast);
}

TEST_CASE("a backend guard is the choice of its own thread only") {
    // Two threads each hold a guard of their own while the other runs: each runs its backend
    // (the tiled backend's last bits differ from the step path's on this problem), and neither
    // sees the other's choice.
    attn::Generator gen(5);
    const attn::Tensor q = attn::randn({1, 2, 40, 16}, gen), k = attn::randn({1, 2, 40, 16}, gen);
    const attn::SDPAOptions o{.is_causal = true, .block_q = 8, .block_k = 8};
    const attn::Tensor step = attn::scaled_dot_product_attention(q, k, k, {.is_causal = true, .backend = attn::SDPABackend::step});
    const attn::Tensor tiled = attn::scaled_dot_product_attention(q, k, k, {.is_causal = true, .backend = attn::SDPABackend::tiled, .block_q = 8, .block_k = 8});
    REQUIRE(first_bit_difference(step, tiled) != -1);  // the two are told apart
    std::atomic<int> ready{0};
    attn::SDPABackend seen_a{}, seen_b{};
    attn::Tensor out_a, out_b;
    const auto run = [&](attn::SDPABackend backend, attn::SDPABackend& seen, attn::Tensor& out) {
        const attn::SDPABackendGuard guard(backend);
        ++ready;
        while (ready < 2) std::this_thread::yield();  // both guards held at once
        seen = attn::default_sdpa_backend();
        out = attn::scaled_dot_product_attention(q, k, k, o);
        ++ready;
        while (ready < 4) std::this_thread::yield();
    };
    std::thread a(run, attn::SDPABackend::step, std::ref(seen_a), std::ref(out_a));
    std::thread b(run, attn::SDPABackend::tiled, std::ref(seen_b), std::ref(out_b));
    a.join();
    b.join();
    CHECK(seen_a == attn::SDPABackend::step);
    CHECK(seen_b == attn::SDPABackend::tiled);
    CHECK(first_bit_difference(out_a, step) == -1);
    CHECK(first_bit_difference(out_b, tiled) == -1);
    CHECK(attn::default_sdpa_backend() == attn::SDPABackend::fast);  // this thread: untouched
}

}  // namespace test_sdpa
