// Tests of the fused multiply-add arithmetic (kernels/arithmetic.hpp, Arithmetic::fma):
//
// - what it computes: fast::gemm in fma is, bit for bit, the in-order loop
//   `c = +0; for p: c = std::fma(a[i, p], b[p, j], c)` written here (std::fma: IEEE 754's
//   fusedMultiplyAdd), for every transpose flag, sizes that are not multiples of the tiles or of
//   the blocks of terms, 1, 2 and 3 threads and every kernel this CPU runs; the fast backend of
//   the attention core in fma is, bit for bit, the step-by-step path with those products
//   (scores and weights @ values by the loop, the same scaling, mask and attn::softmax);
//   nn::Linear's forward and backward under the guard are the loop (plus the bias after it);
// - determinism: the module's forward and its training backward under ArithmeticGuard(fma)
//   give the same bits at 1, 2 and 3 threads and with every kernel;
// - the distance from the exact path, in ulp of the largest output |y|max (the spacing of
//   float32 at |y|max), per size. Why a bound of the form c * sqrt(k) for k terms: the two
//   arithmetics differ only in the rounding of each product a * b, which the exact path rounds
//   once more (by at most half an ulp of the product, and the products here are no larger than
//   the outputs); every later sum rounds what it is given, so the k independent differences add
//   up like a random walk (the worst case, about k / 2 ulp, needs every rounding to go one
//   way). Both arithmetics give the same bits on every CPU, so the distances are fixed numbers
//   for the inputs here: a product alone 1.5, 2, 3, 5 ulp at k = 64, 256, 768, 3072 (bound
//   sqrt(k): 8, 16, 27.7, 55.4); the attention core at T = 70 (E = 16) at most 3 ulp (bound
//   sqrt(T) = 8.4); MultiHeadAttention at GPT-2's width (the largest link, k = 768) 6 ulp at
//   T = 40 and 256 (bound sqrt(768) = 27.7); a training step's gradients, summed over the
//   B T = 128 rows, at most 14 ulp (bound 2 sqrt(128) = 22.6). An arithmetic that lost a term
//   or summed out of order (hundreds of ulp and more) fails;
// - the exact path keeps its bits: the default, a guard's scope ended, an exact guard inside an
//   fma guard, and the step and tiled backends under an fma guard all give the exact bits;
// - the guard: thread-local, nested, restored; a call's own arithmetic wins over it; the step
//   and tiled backends refuse fma asked by name; values outside the enumeration are refused.
// Nothing here measures time.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "attn/kernels/gemm.hpp"
#include "attn/modules/multihead.hpp"

namespace test_fma {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::Arithmetic;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

std::vector<float> uniforms(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
}

bool same_bits(const float* a, const float* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (bits(a[i]) != bits(b[i])) {
            UNSCOPED_INFO("first difference at " << i << ": " << a[i] << " vs " << b[i]);
            return false;
        }
    return true;
}

bool same_bits(const attn::Tensor& a, const attn::Tensor& b) {
    return attn::shape_of(a) == attn::shape_of(b) && same_bits(a.data(), b.data(), a.size());
}

// max |a - b| in units of the spacing of float32 at max |b| (b: the exact result).
double ulps_of_largest(const float* a, const float* b, std::size_t n) {
    float largest = 0.0f;
    double worst = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        largest = std::max(largest, std::abs(b[i]));
        worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
    }
    const float spacing = std::nextafter(largest, INFINITY) - largest;
    return worst / double(spacing);
}

double ulps_of_largest(const attn::Tensor& a, const attn::Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    return ulps_of_largest(a.data(), b.data(), a.size());
}

// The in-order fused sum of one element: c = +0; c = fma(a_p, b_p, c) for p = 0..k-1.
float fma_dot(std::size_t k, const float* a, std::size_t sa, const float* b, std::size_t sb) {
    float c = 0.0f;
    for (std::size_t p = 0; p < k; ++p) c = std::fma(a[p * sa], b[p * sb], c);
    return c;
}

// C[m, n] = op(A) op(B) by fma_dot, as fast::gemm's arguments.
std::vector<float> fma_gemm(std::size_t m, std::size_t n, std::size_t k, const float* A, bool ta,
                            const float* B, bool tb) {
    std::vector<float> C(m * n);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j)
            C[i * n + j] = fma_dot(k, ta ? A + i : A + i * k, ta ? m : 1, tb ? B + j * k : B + j,
                                   tb ? 1 : n);
    return C;
}

// Causal attention by the fused loops, `q [B, H, Tq, E]`, `k [B, H, Tk, E]`, `v [B, H, Tk, Ev]`,
// queries at positions query_start.., keys at 0..: scores q . k by fma_dot, / sqrt(E)
// (Raschka's), -inf past each query's position, attn::softmax, then weights @ values by fma_dot.
attn::Tensor fused_causal_attention(const attn::Tensor& q, const attn::Tensor& k, const attn::Tensor& v,
                                    std::size_t query_start) {
    const std::size_t B = q.shape()[0], H = q.shape()[1], Tq = q.shape()[2], E = q.shape()[3];
    const std::size_t Tk = k.shape()[2], Ev = v.shape()[3];
    const float divisor = std::sqrt(float(E));
    attn::Tensor scores = attn::Tensor::from_shape({B, H, Tq, Tk});
    for (std::size_t bh = 0; bh < B * H; ++bh)
        for (std::size_t i = 0; i < Tq; ++i)
            for (std::size_t j = 0; j < Tk; ++j)
                scores.data()[(bh * Tq + i) * Tk + j] =
                    j > query_start + i ? -INFINITY
                                        : fma_dot(E, q.data() + (bh * Tq + i) * E, 1, k.data() + (bh * Tk + j) * E, 1) / divisor;
    const attn::Tensor w = attn::softmax(scores, -1);
    attn::Tensor out = attn::Tensor::from_shape({B, H, Tq, Ev});
    for (std::size_t bh = 0; bh < B * H; ++bh)
        for (std::size_t i = 0; i < Tq; ++i)
            for (std::size_t e = 0; e < Ev; ++e)
                out.data()[(bh * Tq + i) * Ev + e] =
                    fma_dot(Tk, w.data() + (bh * Tq + i) * Tk, 1, v.data() + bh * Tk * Ev + e, Ev);
    return out;
}

template <class F>
void for_each_isa(F body) {
    const std::string saved = attn::fast::isa_name();
    for (const auto& isa : attn::fast::available_isas()) {
        attn::fast::use_isa(isa);
        INFO("kernels: " << isa);
        body(isa);
    }
    attn::fast::use_isa(saved);
}

struct Threads {
    int saved = omp_get_max_threads();
    explicit Threads(int n) { omp_set_num_threads(n); }
    ~Threads() { omp_set_num_threads(saved); }
};

attn::MultiHeadAttention gpt2_like(std::size_t T, std::size_t d, std::size_t heads, bool bias) {
    attn::manual_seed(0);
    attn::MultiHeadAttention m({.d_in = d, .d_out = d, .context_length = T, .dropout = 0.0,
                                .num_heads = heads, .qkv_bias = bias, .out_bias = true});
    m.eval();
    return m;
}

}  // namespace

TEST_CASE("fast::gemm in Arithmetic::fma is the in-order fused sum, bit for bit") {
    std::mt19937 rng(7);
    struct Size { std::size_t m, n, k; };
    // 1x1x1; edges of every tile (MR 4..12, NR 8..32), among them edge tiles of every row
    // count the kernels compute differently (up to MR / 3, up to 2 MR / 3, more: 13, 50, 257
    // and 23 rows leave 1, 2, 5 and 11 rows to a tile of 12), and of a block of terms (KC 256);
    // a product split among threads in row blocks of 120.
    for (const Size s : {Size{1, 1, 1}, Size{13, 37, 5}, Size{50, 70, 300}, Size{257, 65, 513},
                         Size{23, 40, 64}}) {
        const auto A = uniforms(s.m * s.k, rng), B = uniforms(s.k * s.n, rng);
        for (const bool ta : {false, true})
            for (const bool tb : {false, true}) {
                INFO("m " << s.m << " n " << s.n << " k " << s.k << " trans_a " << ta << " trans_b " << tb);
                const auto want = fma_gemm(s.m, s.n, s.k, A.data(), ta, B.data(), tb);
                for_each_isa([&](const std::string&) {
                    for (const int threads : {1, 2, 3}) {
                        INFO("threads " << threads);
                        std::vector<float> C(s.m * s.n, -1.0f);
                        attn::fast::gemm(s.m, s.n, s.k, A.data(), ta ? s.m : s.k, ta, B.data(),
                                         tb ? s.k : s.n, tb, C.data(), s.n, threads, Arithmetic::fma);
                        CHECK(same_bits(C.data(), want.data(), C.size()));
                    }
                });
            }
    }
}

TEST_CASE("fast::gemm_multi with biases and fast::gemm_packed compute in fma as fast::gemm does") {
    std::mt19937 rng(8);
    const std::size_t m = 70, k = 300, n1 = 40, n2 = 33;
    const auto A = uniforms(m * k, rng), W1 = uniforms(n1 * k, rng), W2 = uniforms(n2 * k, rng),
               b1 = uniforms(n1, rng), b2 = uniforms(n2, rng);
    auto want1 = fma_gemm(m, n1, k, A.data(), false, W1.data(), true);
    auto want2 = fma_gemm(m, n2, k, A.data(), false, W2.data(), true);
    for (std::size_t i = 0; i < m; ++i) {  // the bias after the finished sum, as nn::Linear
        for (std::size_t j = 0; j < n1; ++j) want1[i * n1 + j] += b1[j];
        for (std::size_t j = 0; j < n2; ++j) want2[i * n2 + j] += b2[j];
    }
    for_each_isa([&](const std::string&) {
        std::vector<float> C1(m * n1), C2(m * n2);
        const attn::fast::GemmRight rights[] = {{W1.data(), k, true, n1, C1.data(), n1, b1.data()},
                                                {W2.data(), k, true, n2, C2.data(), n2, b2.data()}};
        attn::fast::gemm_multi(m, k, A.data(), k, false, rights, 2, 2, Arithmetic::fma);
        CHECK(same_bits(C1.data(), want1.data(), C1.size()));
        CHECK(same_bits(C2.data(), want2.data(), C2.size()));
        attn::fast::PackedB packed;
        attn::fast::pack_b(k, n1, W1.data(), k, true, packed);
        std::vector<float> C3(m * n1);
        attn::fast::gemm_packed(m, n1, k, A.data(), k, false, packed, C3.data(), n1, Arithmetic::fma);
        const auto plain = fma_gemm(m, n1, k, A.data(), false, W1.data(), true);
        CHECK(same_bits(C3.data(), plain.data(), C3.size()));
    });
}

TEST_CASE("Arithmetic::fma differs from exact (the comparisons above can fail), within sqrt(k) ulp") {
    std::mt19937 rng(9);
    // k: bound in ulp of the largest output (sqrt(k), see the file comment).
    for (const std::size_t k : {64u, 256u, 768u, 3072u}) {
        const std::size_t m = 64, n = 64;
        const auto A = uniforms(m * k, rng), B = uniforms(k * n, rng);
        std::vector<float> exact(m * n), fused(m * n);
        attn::fast::gemm(m, n, k, A.data(), k, false, B.data(), n, false, exact.data(), n, 1);
        attn::fast::gemm(m, n, k, A.data(), k, false, B.data(), n, false, fused.data(), n, 1, Arithmetic::fma);
        const double d = ulps_of_largest(fused.data(), exact.data(), m * n);
        INFO("k " << k << ": " << d << " ulp of the largest output");
        CHECK(!same_bits(fused.data(), exact.data(), m * n));
        CHECK(d <= std::sqrt(double(k)));
    }
}

TEST_CASE("nn::Linear under ArithmeticGuard(fma): forward and backward are the fused loops") {
    std::mt19937 rng(10);
    attn::manual_seed(3);
    attn::nn::Linear layer(48, 20, true);
    const std::size_t rows = 37;
    const auto x = uniforms(rows * 48, rng), dy = uniforms(rows * 20, rng);
    auto want = fma_gemm(rows, 20, 48, x.data(), false, layer.weight.data(), true);
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < 20; ++j) want[i * 20 + j] += layer.bias->data()[j];
    const auto want_dw = fma_gemm(20, 48, rows, dy.data(), true, x.data(), false);
    const auto want_dx = fma_gemm(rows, 48, 20, dy.data(), false, layer.weight.data(), false);
    std::vector<float> y(rows * 20), dx(rows * 48);
    {
        const attn::ArithmeticGuard guard(Arithmetic::fma);
        layer.forward_into(x.data(), rows, y.data());
        CHECK(same_bits(y.data(), want.data(), y.size()));
        layer.backward_into(x.data(), rows, dy.data(), dx.data());
        CHECK(same_bits(layer.weight_grad->data(), want_dw.data(), want_dw.size()));
        CHECK(same_bits(dx.data(), want_dx.data(), dx.size()));
    }
    // The guard gone, the exact bits again (the product as the reference BLAS sums it).
    std::vector<float> y2(rows * 20);
    layer.forward_into(x.data(), rows, y2.data());
    layer.forward_into(x.data(), rows, y.data(), Arithmetic::exact);
    CHECK(same_bits(y.data(), y2.data(), y.size()));
    CHECK(!same_bits(y.data(), want.data(), y.size()));
}

TEST_CASE("the fast backend in fma is the step path with fused products, bit for bit") {
    // [B, H, T, E]: fused_causal_attention, the queries at positions 0..
    const std::size_t B = 2, H = 3, Tq = 45, Tk = 45, E = 16;
    attn::Generator gen(11);
    const attn::Tensor q = attn::randn({B, H, Tq, E}, gen), k = attn::randn({B, H, Tk, E}, gen),
                       v = attn::randn({B, H, Tk, E}, gen);
    const float divisor = std::sqrt(float(E));
    const attn::Tensor want = fused_causal_attention(q, k, v, 0);
    const attn::SDPAOptions fma{.is_causal = true, .scale = attn::ScoreScale::divide_by(divisor),
                                .backend = attn::SDPABackend::fast, .arithmetic = Arithmetic::fma};
    for_each_isa([&](const std::string&) {
        for (const int threads : {1, 2, 3}) {
            INFO("threads " << threads);
            const Threads t(threads);
            CHECK(same_bits(attn::scaled_dot_product_attention(q, k, v, fma), want));
        }
    });
    // And under the guard with the default options' arithmetic (automatic).
    attn::SDPAOptions automatic = fma;
    automatic.arithmetic = Arithmetic::automatic;
    const attn::ArithmeticGuard guard(Arithmetic::fma);
    CHECK(same_bits(attn::scaled_dot_product_attention(q, k, v, automatic), want));
}

TEST_CASE("the attention core's fma backward: the same bits at 1, 2, 3 threads and every kernel") {
    const std::size_t B = 2, H = 4, Hkv = 2, T = 70, E = 16;
    attn::Generator gen(12);
    const attn::Tensor q = attn::randn({B, H, T, E}, gen), k = attn::randn({B, Hkv, T, E}, gen),
                       v = attn::randn({B, Hkv, T, E}, gen), dO = attn::randn({B, H, T, E}, gen);
    attn::SDPAOptions o{.is_causal = true, .backend = attn::SDPABackend::fast, .arithmetic = Arithmetic::fma};
    const attn::SDPAForward f0 = attn::scaled_dot_product_attention_forward(q, k, v, o);
    const attn::SDPAGradients g0 = attn::scaled_dot_product_attention_backward(dO, q, k, v, f0, o);
    for_each_isa([&](const std::string&) {
        for (const int threads : {1, 2, 3}) {
            INFO("threads " << threads);
            const Threads t(threads);
            const attn::SDPAForward f = attn::scaled_dot_product_attention_forward(q, k, v, o);
            const attn::SDPAGradients g = attn::scaled_dot_product_attention_backward(dO, q, k, v, f, o);
            CHECK(same_bits(f.output, f0.output));
            CHECK(same_bits(g.grad_query, g0.grad_query));
            CHECK(same_bits(g.grad_key, g0.grad_key));
            CHECK(same_bits(g.grad_value, g0.grad_value));
        }
    });
    // Within a few ulp of the exact backward's largest gradient (k = T or E terms per product,
    // then the softmax's Jacobian: sqrt(T) ulp).
    o.arithmetic = Arithmetic::exact;
    const attn::SDPAForward fe = attn::scaled_dot_product_attention_forward(q, k, v, o);
    const attn::SDPAGradients ge = attn::scaled_dot_product_attention_backward(dO, q, k, v, fe, o);
    const double bound = std::sqrt(double(T));
    CHECK(ulps_of_largest(f0.output, fe.output) <= bound);
    CHECK(ulps_of_largest(g0.grad_query, ge.grad_query) <= bound);
    CHECK(ulps_of_largest(g0.grad_key, ge.grad_key) <= bound);
    CHECK(ulps_of_largest(g0.grad_value, ge.grad_value) <= bound);
    CHECK(!same_bits(g0.grad_query, ge.grad_query));
}

TEST_CASE("MultiHeadAttention under ArithmeticGuard(fma): deterministic, within its bound of exact") {
    // GPT-2's width and heads at short lengths. The chain of products: the projections
    // (k = 768), q . k (k = 64), weights @ values (k <= T), out_proj (k = 768); the bound,
    // sqrt(768) ulp of the largest output, is the largest link's (the softmax's weights sum
    // to 1, so the scores' differences reach the output no larger than they are).
    for (const std::size_t T : {40u, 256u}) {
        INFO("T " << T);
        const auto m = gpt2_like(T, 768, 12, false);
        attn::Generator gen(13);
        const attn::Tensor x = attn::rand({1, T, 768}, gen);
        const attn::Tensor exact = m(x);
        attn::Tensor fused0;
        {
            const attn::ArithmeticGuard guard(Arithmetic::fma);
            fused0 = m(x);
            for_each_isa([&](const std::string&) {
                for (const int threads : {1, 2, 3}) {
                    INFO("threads " << threads);
                    const Threads t(threads);
                    CHECK(same_bits(m(x), fused0));
                }
            });
            // An exact guard inside the fma one: the exact bits.
            const attn::ArithmeticGuard inner(Arithmetic::exact);
            CHECK(same_bits(m(x), exact));
        }
        CHECK(same_bits(m(x), exact));  // the guard's scope ended
        CHECK(same_bits(m.forward_steps(x).context_vec, exact));  // the default is exact
        const double d = ulps_of_largest(fused0, exact);
        INFO(d << " ulp of the largest output");
        CHECK(!same_bits(fused0, exact));
        CHECK(d <= std::sqrt(768.0));
    }
}

TEST_CASE("a training step under ArithmeticGuard(fma): the same gradients at 1, 2, 3 threads") {
    const std::size_t T = 64;
    auto m = gpt2_like(T, 96, 4, true);
    attn::Generator gen(14);
    const attn::Tensor x = attn::rand({2, T, 96}, gen);
    // The output, dL/dx and every .grad but W_key.bias's, whose true value is 0 (adding one
    // number to every score of a row leaves its softmax unchanged): its two arithmetics' results
    // are both rounding noise, no distance applies.
    const auto step = [&] {
        attn::AttentionSaved saved;
        m.zero_grad(true);
        attn::Tensor out = m.forward(x, saved);
        attn::Tensor dx = m.backward(saved, out);
        std::vector<attn::Tensor> grads{out, dx};
        for (const auto& p : m.named_parameters())
            if (p.name != "W_key.bias") grads.push_back(**p.grad);
        return grads;
    };
    const auto exact = step();
    const attn::ArithmeticGuard guard(Arithmetic::fma);
    const auto fused = step();
    for_each_isa([&](const std::string&) {
        for (const int threads : {1, 2, 3}) {
            INFO("threads " << threads);
            const Threads t(threads);
            const auto again = step();
            for (std::size_t i = 0; i < fused.size(); ++i) CHECK(same_bits(again[i], fused[i]));
        }
    });
    for (std::size_t i = 0; i < fused.size(); ++i) {
        INFO("tensor " << i);
        CHECK(ulps_of_largest(fused[i], exact[i]) <= 2.0 * std::sqrt(double(2 * T)));
    }
    CHECK(!same_bits(fused[1], exact[1]));
}

TEST_CASE("ArithmeticGuard: thread-local, nested, restored; a call's own arithmetic wins") {
    CHECK(attn::default_arithmetic() == Arithmetic::exact);
    {
        const attn::ArithmeticGuard a(Arithmetic::fma);
        CHECK(attn::default_arithmetic() == Arithmetic::fma);
        CHECK(attn::resolve_arithmetic(Arithmetic::automatic) == Arithmetic::fma);
        CHECK(attn::resolve_arithmetic(Arithmetic::exact) == Arithmetic::exact);
        Arithmetic other = Arithmetic::automatic;
        std::thread([&] { other = attn::default_arithmetic(); }).join();
        CHECK(other == Arithmetic::exact);
        {
            const attn::ArithmeticGuard b(Arithmetic::exact);
            CHECK(attn::default_arithmetic() == Arithmetic::exact);
        }
        CHECK(attn::default_arithmetic() == Arithmetic::fma);
    }
    CHECK(attn::default_arithmetic() == Arithmetic::exact);
    attn::set_default_arithmetic(Arithmetic::fma);
    CHECK(attn::default_arithmetic() == Arithmetic::fma);
    attn::set_default_arithmetic(Arithmetic::exact);
    CHECK(std::string(attn::arithmetic_name(Arithmetic::fma)) == "fma");
    const auto bad = static_cast<Arithmetic>(7);
    test::require_invalid([] { attn::ArithmeticGuard g(Arithmetic::automatic); }, {"ArithmeticGuard", "automatic"});
    test::require_invalid([&] { attn::ArithmeticGuard g(bad); }, {"ArithmeticGuard", "7"});
    test::require_invalid([&] { attn::set_default_arithmetic(bad); }, {"set_default_arithmetic"});
    test::require_invalid([&] { attn::arithmetic_name(bad); }, {"arithmetic_name", "7"});
}

TEST_CASE("a decode step in fma (1 to 4 queries, read without packing): the fused loops, bit for bit") {
    // The last Tq of 45 positions, causal (fused_causal_attention); Ev = 70 takes the kernel past
    // its 64 columns at a time.
    const std::size_t B = 1, H = 2, Tk = 45, E = 16, Ev = 70;
    attn::Generator gen(12);
    for (const std::size_t Tq : {1, 2, 3, 4}) {
        INFO("Tq " << Tq);
        const attn::Tensor q = attn::randn({B, H, Tq, E}, gen), k = attn::randn({B, H, Tk, E}, gen),
                           v = attn::randn({B, H, Tk, Ev}, gen);
        const float divisor = std::sqrt(float(E));
        const attn::Tensor want = fused_causal_attention(q, k, v, Tk - Tq);
        const attn::SDPAOptions fma{.is_causal = true, .query_start = Tk - Tq,
                                    .scale = attn::ScoreScale::divide_by(divisor), .backend = attn::SDPABackend::fast,
                                    .arithmetic = Arithmetic::fma};
        for_each_isa([&](const std::string&) { CHECK(same_bits(attn::scaled_dot_product_attention(q, k, v, fma), want)); });
    }
}

TEST_CASE("the step and tiled backends: fma refused by name, exact under an fma guard") {
    attn::Generator gen(15);
    const attn::Tensor q = attn::randn({1, 2, 9, 8}, gen), k = attn::randn({1, 2, 9, 8}, gen),
                       v = attn::randn({1, 2, 9, 8}, gen);
    for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::tiled}) {
        INFO(attn::backend_name(backend));
        attn::SDPAOptions o{.is_causal = true, .backend = backend};
        const attn::Tensor exact = attn::scaled_dot_product_attention(q, k, v, o);
        {
            const attn::ArithmeticGuard guard(Arithmetic::fma);
            CHECK(same_bits(attn::scaled_dot_product_attention(q, k, v, o), exact));
        }
        o.arithmetic = Arithmetic::fma;
        test::require_invalid([&] { attn::scaled_dot_product_attention(q, k, v, o); },
                              {attn::backend_name(backend), "no fma arithmetic", "fast backend"});
    }
    attn::SDPAOptions o{.arithmetic = static_cast<Arithmetic>(9)};
    test::require_invalid([&] { attn::scaled_dot_product_attention(q, k, v, o); }, {"arithmetic", "9"});
}

}  // namespace test_fma
