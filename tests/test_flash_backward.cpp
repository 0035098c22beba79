// Tests of FlashAttention-2's backward (chapter 20; kernels/tiled_attention_backward.cpp):
// the tiled backend's gradients against the step-by-step backward's, whose bits
// tests/test_backward.cpp checks against PyTorch's autograd.
//
// - random B, H (grouped key/value heads), T in 1..150 (also not a multiple of the tiles),
//   head widths, tile sizes, causal or not, padding masks (the last keys of a batch element
//   hidden), dropout: dQ, dK, dV within kUlpBound float32 spacings at the largest |gradient|
//   of the step backward (another order of the same sums, and exp(S - L) for exp(S - m) / l);
// - a control with a wrong D (rowsum(dO ⊙ O) from an output 1% off) that must fail.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"

namespace test_flash_backward {  // every test file is a namespace of its own (tests/meson.build)

namespace {

// Observed: 14.5 at worst over the 40 problems below (seed 20).
constexpr double kUlpBound = 32.0;

// max |a - b| in float32 spacings at the largest |b| (NaN where either is NaN counts as far).
double spacings(const attn::Tensor& a, const attn::Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    double largest = 0.0, worst = 0.0;
    for (std::size_t i = 0; i < b.size(); ++i) largest = std::max(largest, std::abs(double(b.data()[i])));
    const double spacing = largest > 0 ? std::nextafter(float(largest), INFINITY) - float(largest) : 1e-45;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a.data()[i]) - double(b.data()[i]));
        if (std::isnan(d)) return INFINITY;
        worst = std::max(worst, d / spacing);
    }
    return worst;
}

struct Problem {
    attn::Tensor q, k, v, grad_output;
    attn::BoolTensor padding;  // [B, 1, 1, Tk], true = a real token
    attn::SDPAOptions options;
    double dropout_p = 0.0;
};

Problem random_problem(std::mt19937& rng, attn::Generator& gen) {
    const auto pick = [&](std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng); };
    const std::size_t B = pick(1, 2), Hkv = pick(1, 2), H = Hkv * pick(1, 2), T = pick(1, 150);
    const std::size_t E = pick(1, 9), Ev = pick(1, 9);
    Problem p;
    p.q = attn::randn({B, H, T, E}, gen);
    p.k = attn::randn({B, Hkv, T, E}, gen);
    p.v = attn::randn({B, Hkv, T, Ev}, gen);
    p.grad_output = attn::randn({B, H, T, Ev}, gen);
    p.padding = xt::ones<bool>(attn::Shape{B, 1, 1, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = pick(1, T); j < T; ++j) p.padding(b, 0, 0, j) = false;  // >= 1 real token
    p.options.is_causal = pick(0, 1) == 1;
    if (pick(0, 1)) p.options.attn_mask = &p.padding;
    p.options.fully_masked_rows = attn::FullyMaskedRows::zero;
    p.options.block_q = pick(1, 70);
    p.options.block_k = pick(1, 70);
    p.options.dropout_p = pick(0, 2) == 0 ? 0.25 : 0.0;
    return p;
}

// dQ, dK, dV of the step backend and of the tiled backend (each from its own forward, drawing
// the same dropout mask), and the worst distance of the three in spacings. `skew` scales the
// output handed to the tiled backward (1: the forward's), which changes only its D.
double tiled_vs_step(Problem& p, float skew = 1.0f) {
    attn::SDPAOptions o = p.options;
    attn::Generator g_step(5), g_tiled(5);
    o.backend = attn::SDPABackend::step;
    o.generator = &g_step;
    const attn::SDPAForward f_step = attn::scaled_dot_product_attention_forward(p.q, p.k, p.v, o);
    const attn::SDPAGradients step = attn::scaled_dot_product_attention_backward(p.grad_output, p.q, p.k, p.v, f_step, o);
    o.backend = attn::SDPABackend::tiled;
    o.generator = &g_tiled;
    attn::SDPAForward f_tiled = attn::scaled_dot_product_attention_forward(p.q, p.k, p.v, o);
    for (std::size_t i = 0; i < f_tiled.output.size(); ++i) f_tiled.output.data()[i] *= skew;
    const attn::SDPAGradients tiled = attn::scaled_dot_product_attention_backward(p.grad_output, p.q, p.k, p.v, f_tiled, o);
    return std::max({spacings(tiled.grad_query, step.grad_query), spacings(tiled.grad_key, step.grad_key),
                     spacings(tiled.grad_value, step.grad_value)});
}

}  // namespace

TEST_CASE("the tiled backward equals the step backward within kUlpBound spacings") {
    std::mt19937 rng(20);
    attn::Generator gen(20);
    double worst = 0.0;
    for (int trial = 0; trial < 40; ++trial) {
        Problem p = random_problem(rng, gen);
        const std::string shape = attn::shape_str(attn::shape_of(p.q)) + " kv " + attn::shape_str(attn::shape_of(p.v)) +
                                  " causal " + std::to_string(p.options.is_causal) + " padding " +
                                  std::to_string(p.options.attn_mask != nullptr) + " tiles " +
                                  std::to_string(p.options.block_q) + "x" + std::to_string(p.options.block_k) +
                                  " dropout " + std::to_string(p.options.dropout_p);
        INFO(shape);
        const double d = tiled_vs_step(p);
        CHECK(d <= kUlpBound);
        worst = std::max(worst, d);
    }
    WARN("worst distance: " << worst << " spacings");
}

TEST_CASE("control: a wrong D (from an output 1% off) is caught", "[!shouldfail]") {
    std::mt19937 rng(21);
    attn::Generator gen(21);
    Problem p = random_problem(rng, gen);
    CHECK(tiled_vs_step(p, 1.01f) <= kUlpBound);
}

}  // namespace test_flash_backward
