// Tests of the fast path (kernels/gemm.hpp, kernels/fused_attention.hpp): it must give the bits of
// the step-by-step path it replaces.
//
// - fast::gemm against the linked BLAS's sgemm (cblas_sgemm), all transpose flags, sizes
//   that are not multiples of the kernels' tiles or blocks, 1 and 2 threads, every kernel
//   this CPU runs. With the reference BLAS (the default build): bit for bit. With
//   -Dblas=openblas: within the classic bound for two float32 dot products of length k,
//   |fast - blas| <= 2 * gamma_k * sum_p |a_ip b_pj|, gamma_k = k u / (1 - k u),
//   u = 2^-24 (each is within gamma_k * sum |a b| of the exact value).
// - the vector SLEEF exp against the scalar one the step-by-step softmax calls: bit for bit
//   on a sample here; over all 2^32 inputs in the hidden test "[.exhaustive]" (about a
//   minute per kernel: `ATTN_EXHAUSTIVE=1 build/tests/unit_tests "[.exhaustive]"`).
// - the fused softmax of a block (queries by lanes, transposed, any band or dense mask) against
//   the step path's scale, bias, -inf and attn::softmax.
// - MultiHeadAttention's operator() (the core's fast backend) against forward_steps(...)
//   .context_vec on random sizes: T not a multiple of the row block, B > 1, 1..12 heads,
//   biases or not, evaluation mode and dropout in training mode (the same mask drawn), and a
//   changed mask buffer. Bit for bit with the reference BLAS; with OpenBLAS within a stated
//   relative bound.
// - a control: an in-order sum with fused multiply-adds differs from sgemm, so the
//   bit-for-bit comparisons here can fail.
// Nothing here measures time.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <cblas.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn/kernels/fused_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/kernels/gemm.hpp"
#include "attn/core/generator.hpp"
#include "attn/modules/multihead.hpp"

// sleef.h declares the FMA variant only with FMA enabled; the library exports both.
extern "C" float Sleef_expf1_u10purecfma(float);
extern "C" float Sleef_expf1_u10purec(float);

#ifndef ATTN_BLAS_REFERENCE
#define ATTN_BLAS_REFERENCE 1
#endif

namespace test_fast_path {  // every test file is a namespace of its own (tests/meson.build)

namespace {

constexpr bool reference_blas = ATTN_BLAS_REFERENCE != 0;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// The scalar exp of the step-by-step softmax (attn::exp_torch, core/elementwise.hpp).
float oracle_exp(float x) {
    static const bool has_fma = __builtin_cpu_supports("fma");
    return has_fma ? Sleef_expf1_u10purecfma(x) : Sleef_expf1_u10purec(x);
}

std::vector<float> uniforms(std::size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
}

// The first index where two float buffers differ in their bits, or -1.
long first_difference(const float* a, const float* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (bits(a[i]) != bits(b[i])) return static_cast<long>(i);
    return -1;
}

// Runs `body` with every kernel this CPU has, then restores the default.
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

// Sets the OpenMP thread count for a scope.
struct Threads {
    int saved = omp_get_max_threads();
    explicit Threads(int n) { omp_set_num_threads(n); }
    ~Threads() { omp_set_num_threads(saved); }
};

struct GemmCase {
    std::size_t m, n, k;
    bool ta, tb;
};

}  // namespace

TEST_CASE("fast::gemm equals the linked BLAS's sgemm") {
    std::mt19937 rng(12);
    std::vector<GemmCase> cases;
    const std::size_t sizes[][3] = {{1, 1, 1},   {6, 2, 3},     {7, 33, 5},    {8, 32, 16},
                                    {9, 31, 17}, {37, 29, 53},  {64, 64, 64},  {65, 97, 257},
                                    {130, 70, 300}, {129, 48, 513}, {3, 200, 0}, {0, 5, 4},
                                    // past the one-pass limits (k > 4096, m k > 2^21): blocks of terms
                                    {17, 33, 4100}, {530, 5, 4000}};
    for (const auto& s : sizes)
        for (int t = 0; t < 4; ++t) cases.push_back({s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0});
    for_each_isa([&](const std::string&) {
        for (const int threads : {1, 2}) {
            const Threads scope(threads);
            for (const auto& c : cases) {
                INFO("m=" << c.m << " n=" << c.n << " k=" << c.k << " trans_a=" << c.ta
                          << " trans_b=" << c.tb << " threads=" << threads);
                // Leading dimensions larger than needed, to exercise the strides.
                const std::size_t lda = (c.ta ? c.m : c.k) + 3, ldb = (c.tb ? c.k : c.n) + 2;
                const std::size_t ldc = c.n + 1;
                const auto A = uniforms((c.ta ? c.k : c.m) * lda + 1, rng);
                const auto B = uniforms((c.tb ? c.n : c.k) * ldb + 1, rng);
                std::vector<float> ours(c.m * ldc + 1, 7.0f), blas(c.m * ldc + 1, 7.0f);
                attn::fast::gemm(c.m, c.n, c.k, A.data(), lda, c.ta, B.data(), ldb, c.tb,
                                 ours.data(), ldc, threads);
                if (c.m && c.n)
                    cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans,
                                c.tb ? CblasTrans : CblasNoTrans, int(c.m), int(c.n), int(c.k),
                                1.0f, A.data(), int(lda), B.data(), int(ldb), 0.0f, blas.data(),
                                int(ldc));
                if (reference_blas) {
                    CHECK(first_difference(ours.data(), blas.data(), ours.size()) == -1);
                } else {
                    const double u = std::ldexp(1.0, -24);
                    const double gamma = c.k * u / (1 - c.k * u);
                    for (std::size_t i = 0; i < c.m; ++i)
                        for (std::size_t j = 0; j < c.n; ++j) {
                            double mag = 0;
                            for (std::size_t p = 0; p < c.k; ++p) {
                                const float a = c.ta ? A[p * lda + i] : A[i * lda + p];
                                const float b = c.tb ? B[j * ldb + p] : B[p * ldb + j];
                                mag += std::abs(double(a) * b);
                            }
                            CHECK(std::abs(double(ours[i * ldc + j]) - blas[i * ldc + j]) <=
                                  2 * gamma * mag);
                        }
                }
            }
        }
    });
}

TEST_CASE("fast::gemm_packed on prefixes of a packed operand equals fast::gemm") {
    std::mt19937 rng(5);
    for_each_isa([&](const std::string&) {
        const std::size_t k = 300, n = 70;
        const auto B = uniforms(k * n, rng);
        attn::fast::PackedB packed;
        attn::fast::pack_b(k, n, B.data(), n, false, packed);
        for (const auto& [m, n2, k2] : {std::array<std::size_t, 3>{5, 70, 300},
                                        {64, 33, 129}, {17, 1, 1}, {3, 64, 256}}) {
            const auto A = uniforms(m * k2, rng);
            std::vector<float> a(m * n2), b(m * n2);
            attn::fast::gemm_packed(m, n2, k2, A.data(), k2, false, packed, a.data(), n2);
            attn::fast::gemm(m, n2, k2, A.data(), k2, false, B.data(), n, false, b.data(), n2, 1);
            CHECK(first_difference(a.data(), b.data(), a.size()) == -1);
        }
        std::vector<float> c(10);
        CHECK_THROWS_WITH(attn::fast::gemm_packed(1, 71, 3, c.data(), 3, false, packed, c.data(), 71),
                          Catch::Contains("expected op(B) of at most [300, 70], got [3, 71]"));
    });
}

TEST_CASE("fast::gemm_multi equals fast::gemm per operand, then + bias") {
    // Several right operands sharing op(A), as a layer's queries, keys and values share x;
    // the bias, where given, is one addition after the finished sum (Linear's x @ W^T + b).
    std::mt19937 rng(24);
    for_each_isa([&](const std::string&) {
        for (const int threads : {1, 2}) {
            for (const auto& size : {std::array<std::size_t, 2>{1, 1}, {37, 53}, {130, 300},
                                     {257, 64}, {9, 0}}) {
                const std::size_t m = size[0], k = size[1];  // named: INFO captures them
                INFO("m=" << m << " k=" << k << " threads=" << threads);
                const std::size_t ns[] = {70, 1, 33};
                const auto A = uniforms(m * k + 1, rng);
                std::vector<std::vector<float>> B, bias, ours, want;
                std::vector<attn::fast::GemmRight> rights;
                for (std::size_t r = 0; r < 3; ++r) {
                    const std::size_t n = ns[r], ldc = n + r;  // r = 0: no padding
                    B.push_back(uniforms(n * (k + 2) + 1, rng));  // [n, k] with ldb = k + 2
                    bias.push_back(uniforms(n, rng));
                    ours.emplace_back(m * ldc + 1, 7.0f);
                    want.emplace_back(m * ldc + 1, 7.0f);
                    rights.push_back({B[r].data(), k + 2, true, n, ours[r].data(), ldc,
                                      r == 1 ? nullptr : bias[r].data()});
                }
                attn::fast::gemm_multi(m, k, A.data(), k, false, rights.data(), 3, threads);
                for (std::size_t r = 0; r < 3; ++r) {
                    const std::size_t n = ns[r], ldc = n + r;
                    attn::fast::gemm(m, n, k, A.data(), k, false, B[r].data(), k + 2, true,
                                     want[r].data(), ldc, 1);
                    if (r != 1)
                        for (std::size_t i = 0; i < m; ++i)
                            for (std::size_t j = 0; j < n; ++j) want[r][i * ldc + j] += bias[r][j];
                    CHECK(first_difference(ours[r].data(), want[r].data(), ours[r].size()) == -1);
                }
            }
        }
    });
    std::vector<float> x(100);
    const attn::fast::GemmRight bad{x.data(), 3, true, 5, x.data(), 5, nullptr};
    CHECK_THROWS_WITH(attn::fast::gemm_multi(2, 4, x.data(), 4, false, &bad, 1),
                      Catch::Contains("expected ldb >= 4") && Catch::Contains("got 3"));
}

TEST_CASE("fast::gemm_packed refuses a PackedB whose public fields were changed") {
    std::vector<float> b(8 * 40, 1.0f), a(3 * 8, 1.0f), c(3 * 40);
    attn::fast::PackedB packed;
    attn::fast::pack_b(8, 40, b.data(), 40, false, packed);
    packed.k = 1u << 20;  // larger than what data holds
    CHECK_THROWS_WITH(attn::fast::gemm_packed(3, 40, 8, a.data(), 8, false, packed, c.data(), 40),
                      Catch::Contains("fields were changed"));
}

TEST_CASE("fast::gemm names wrong leading dimensions") {
    std::vector<float> x(100);
    CHECK_THROWS_WITH(attn::fast::gemm(4, 5, 6, x.data(), 5, false, x.data(), 5, false, x.data(), 5),
                      Catch::Contains("expected lda >= 6") && Catch::Contains("got 5"));
    CHECK_THROWS_WITH(attn::fast::gemm(4, 5, 6, x.data(), 6, false, x.data(), 4, false, x.data(), 5),
                      Catch::Contains("expected ldb >= 5"));
    CHECK_THROWS_WITH(attn::fast::use_isa("neon"), Catch::Contains("portable"));
}

TEST_CASE("control: an in-order sum with fused multiply-adds is not sgemm's") {
    // The same order of terms, but each step c = fma(a, b, c) rounds once instead of twice.
    // If the bit-for-bit checks above could not see that, they would prove nothing.
    if (!reference_blas) return;  // OpenBLAS itself uses fused multiply-adds
    std::mt19937 rng(3);
    const std::size_t m = 16, n = 16, k = 64;
    const auto A = uniforms(m * k, rng), B = uniforms(k * n, rng);
    std::vector<float> fused(m * n), blas(m * n), ours(m * n);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            float c = 0.0f;
            for (std::size_t p = 0; p < k; ++p) c = std::fma(A[i * k + p], B[p * n + j], c);
            fused[i * n + j] = c;
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f,
                A.data(), int(k), B.data(), int(n), 0.0f, blas.data(), int(n));
    attn::fast::gemm(m, n, k, A.data(), k, false, B.data(), n, false, ours.data(), n);
    CHECK(first_difference(fused.data(), blas.data(), blas.size()) != -1);
    CHECK(first_difference(ours.data(), blas.data(), blas.size()) == -1);
}

TEST_CASE("the vector SLEEF exp equals the scalar one on a sample") {
    // Every 65537th bit pattern (all signs, exponents, NaNs), every 997th float in [-2^-20, 0]
    // near the top of the softmax's range, and the special values.
    std::vector<float> in;
    for (std::uint64_t u = 0; u < (1ull << 32); u += 65537) in.push_back(std::bit_cast<float>(std::uint32_t(u)));
    for (std::uint32_t u = bits(-0.0f); u <= bits(-std::ldexp(1.0f, -20)); u += 997) in.push_back(std::bit_cast<float>(u));
    for (float x : {0.0f, -0.0f, -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::infinity(), -87.33655f, -103.97208f, -104.0f,
                    88.72283f, 88.72284f, -1e-45f, std::numeric_limits<float>::quiet_NaN()})
        in.push_back(x);
    for_each_isa([&](const std::string&) {
        std::vector<float> out = in;
        attn::fast::exp_inplace(out.data(), out.size());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < in.size(); ++i) bad += bits(out[i]) != bits(oracle_exp(in[i]));
        CHECK(bad == 0);
    });
}

TEST_CASE("the vector SLEEF exp equals the scalar one on all 2^32 inputs") {
    // About a minute per kernel: only on request.
    if (!std::getenv("ATTN_EXHAUSTIVE")) return;
    for_each_isa([&](const std::string&) {
        std::vector<float> chunk(1 << 20), out(1 << 20);
        std::uint64_t bad = 0;
        for (std::uint64_t base = 0; base < (1ull << 32); base += chunk.size()) {
            for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = std::bit_cast<float>(std::uint32_t(base + i));
            out = chunk;
            attn::fast::exp_inplace(out.data(), out.size());
            for (std::size_t i = 0; i < chunk.size(); ++i) bad += bits(out[i]) != bits(oracle_exp(chunk[i]));
        }
        CHECK(bad == 0);
    });
}

TEST_CASE("softmax_block equals scale, bias, mask and softmax of the step path") {
    // Blocks of queries i0.. stored keys by queries, starting at any key j0 (the lanes of the
    // 8-lane sum follow the key's column), under every mask the core passes down.
    std::mt19937 rng(8);
    constexpr float inf = std::numeric_limits<float>::infinity();
    for_each_isa([&](const std::string&) {
        const std::size_t nr = attn::fast::softmax_block_width();
        for (const std::size_t T : {1, 2, 7, 8, 9, 17, 33, 100, 129}) {
            for (const int variant : {0, 1, 2, 3, 4}) {
                // 0: causal, divide; 1: causal window 5, multiply; 2: dense mask + bias;
                // 3: causal with offset 3 (a cache of 3), zero rows; 4: window 1, zero rows
                const bool divide = variant == 0 || variant == 3;
                const float scale = divide ? std::sqrt(64.0f) : 0.125f;
                const long offset = variant == 3 ? 3 : 0;
                const std::size_t window = variant == 1 ? 5 : variant == 4 ? 1 : 0;
                const bool causal = variant != 2, zero = variant >= 3;
                INFO("T=" << T << " variant=" << variant);
                const auto v = uniforms(T * T, rng, -30.0f, 30.0f);
                const auto b = uniforms(T * T, rng, -2.0f, 2.0f);
                std::vector<unsigned char> allow(T * T);
                for (auto& a : allow) a = rng() % 4 != 0;
                // The step path on each row: scale, bias, -inf where hidden, softmax.
                attn::Tensor masked = attn::zeros({T, T});
                for (std::size_t i = 0; i < T; ++i)
                    for (std::size_t j = 0; j < T; ++j) {
                        float x = divide ? v[i * T + j] / scale : v[i * T + j] * scale;
                        if (variant == 2) x = x + b[i * T + j];
                        const long lag = long(i) + offset - long(j);
                        const bool hidden = (causal && lag < 0) || (window && lag >= long(window)) ||
                                            (variant == 2 && !allow[i * T + j]);
                        masked(i, j) = hidden ? -inf : x;
                    }
                const attn::Tensor expected = zero ? attn::masked_softmax(masked) : attn::softmax(masked, -1);
                for (std::size_t i0 = 0; i0 < T; i0 += nr) {
                    const std::size_t q = std::min(nr, T - i0);
                    for (const std::size_t j0 : {std::size_t{0}, std::min<std::size_t>(3, T - 1)}) {
                        // Keys before j0 left out: only rows whose hidden keys they are stay exact,
                        // so a block starting at j0 > 0 is checked on the band variants where
                        // every key before j0 is hidden from the block (window 1, T > j0).
                        if (j0 > 0 && !(variant == 4 && i0 >= j0)) continue;
                        const std::size_t rows = T - j0;
                        std::vector<float> St(rows * nr, 0.0f), Bt(rows * nr, 0.0f);
                        std::vector<unsigned char> At(rows * nr, 1);
                        for (std::size_t r = 0; r < rows; ++r)
                            for (std::size_t c = 0; c < q; ++c) {
                                St[r * nr + c] = v[(i0 + c) * T + j0 + r];
                                Bt[r * nr + c] = b[(i0 + c) * T + j0 + r];
                                At[r * nr + c] = allow[(i0 + c) * T + j0 + r];
                            }
                        attn::fast::SoftmaxBlock blk{.rows = rows, .j0 = j0, .keys = T, .causal = causal, .window = window,
                                                     .diag = long(i0) + offset,
                                                     .allow = variant == 2 ? At.data() : nullptr,
                                                     .bias = variant == 2 ? Bt.data() : nullptr,
                                                     .divide = divide, .scale = scale, .zero_fully_masked = zero};
                        attn::fast::softmax_block(St.data(), blk);
                        std::size_t bad = 0;
                        for (std::size_t c = 0; c < q; ++c)
                            for (std::size_t r = 0; r < rows; ++r)
                                bad += bits(St[r * nr + c]) != bits(expected.data()[(i0 + c) * T + j0 + r]);
                        CHECK(bad == 0);
                    }
                }
            }
        }
    });
}

namespace {

struct MhaCase {
    std::size_t b, T, d_in, heads, head_dim, context;
    bool qkv_bias, out_bias;
};

// The largest |fast - steps| relative to the largest |steps|.
double relative_difference(const attn::Tensor& a, const attn::Tensor& b) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::abs(double(a.data()[i]) - b.data()[i]));
        scale = std::max(scale, std::abs(double(b.data()[i])));
    }
    return scale > 0 ? worst / scale : worst;
}

void check_same(const attn::Tensor& fast, const attn::Tensor& steps) {
    REQUIRE(attn::shape_of(fast) == attn::shape_of(steps));
    if (reference_blas)
        CHECK(first_difference(fast.data(), steps.data(), fast.size()) == -1);
    else
        CHECK(relative_difference(fast, steps) <= 1e-5);  // OpenBLAS: a few ulps of the largest
}

}  // namespace

TEST_CASE("MultiHeadAttention: operator() on the fast backend equals forward_steps") {
    const std::vector<MhaCase> cases = {
        {1, 6, 3, 2, 1, 6, false, true},     // chapter 7's sizes
        {2, 1, 5, 1, 4, 3, true, false},     // one token
        {1, 63, 16, 4, 4, 70, false, true},  // below, at and above the row block of 64
        {2, 64, 8, 3, 8, 64, true, true},
        {3, 65, 12, 12, 2, 80, false, false},
        {1, 130, 24, 6, 16, 130, true, true},
        {2, 97, 40, 5, 8, 100, false, true},
        {1, 200, 64, 2, 64, 256, true, false},  // GPT-2's head width
        {1, 9, 7, 7, 3, 9, false, true},
        {2, 150, 64, 4, 32, 150, true, true},  // large enough for threads (8 Mflop)
    };
    attn::Generator gen(20);
    for (const auto& c : cases) {
        const std::size_t d_out = c.heads * c.head_dim;
        attn::MultiHeadAttention m({.d_in = c.d_in, .d_out = d_out, .context_length = c.context,
                                    .dropout = 0.25, .num_heads = c.heads, .qkv_bias = c.qkv_bias,
                                    .out_bias = c.out_bias},
                                   gen);
        const attn::Tensor x = attn::Tensor(attn::rand({c.b, c.T, c.d_in}, gen) * 2.0f - 1.0f);
        for (const bool eval : {true, false}) {  // training mode: the same dropout mask drawn
            m.train(!eval);
            attn::Generator g_steps(5);
            const attn::Tensor steps = m.forward_steps(x, g_steps).context_vec;
            for_each_isa([&](const std::string&) {
                for (const int threads : {1, 2}) {
                    INFO("b=" << c.b << " T=" << c.T << " d_in=" << c.d_in << " heads=" << c.heads
                              << " head_dim=" << c.head_dim << " eval=" << eval
                              << " threads=" << threads);
                    const Threads scope(threads);
                    attn::Generator g_fast(5);
                    check_same(m(x, g_fast), steps);
                    CHECK(g_fast.draws_since_seed() == g_steps.draws_since_seed());
                }
            });
        }
    }
}

TEST_CASE("MultiHeadAttention: a changed mask buffer is honoured by the fast backend") {
    attn::Generator gen(7);
    attn::MultiHeadAttention m({.d_in = 6, .d_out = 8, .context_length = 10, .num_heads = 2}, gen);
    const attn::Tensor x = attn::rand({2, 10, 6}, gen);
    const attn::Tensor causal = m(x);
    m.mask.data()[1] = 0.0f;  // the first token may now see the second
    m.mask.data()[0] = 0.0f;
    const attn::Tensor changed = m(x);
    check_same(changed, m.forward_steps(x).context_vec);
    CHECK(first_difference(changed.data(), causal.data(), changed.size()) != -1);
}

TEST_CASE("MultiHeadAttention names wrong inputs and changed fields before computing") {
    attn::Generator gen(1);
    attn::MultiHeadAttention m({.d_in = 4, .d_out = 6, .context_length = 5, .num_heads = 3}, gen);
    CHECK_THROWS_WITH(m(attn::zeros({2, 3, 5})), Catch::Contains("expected [b, T, 4], got [2, 3, 5]"));
    CHECK_THROWS_WITH(m(attn::zeros({1, 6, 4})), Catch::Contains("got 6 tokens, but context_length is 5"));
    m.num_heads = 2;  // no longer num_heads * head_dim = d_out
    CHECK_THROWS_WITH(m(attn::zeros({1, 3, 4})), Catch::Contains("num_heads * head_dim = d_out = 6"));
    m.num_heads = 3;
    m.W_key = attn::nn::Linear(4, 8);
    CHECK_THROWS_WITH(m(attn::zeros({1, 3, 4})), Catch::Contains("(W_key.weight): expected [6, 4], got [8, 4]"));
}

}  // namespace test_fast_path
