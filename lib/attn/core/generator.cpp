/// @file generator.cpp
/// @brief PyTorch 1.13's CPU random generator, draw for draw and bit for bit.
///
/// Every formula below is taken from the PyTorch 1.13.1 sources (as shipped in Debian's
/// libtorch-dev 1.13.1+dfsg-4) and checked against the streams recorded from Debian's
/// python3-torch by tools/oracle/generator_streams.py (data/oracle/generator/):
/// - aten/src/ATen/core/MT19937RNGEngine.h: MT19937 with `init_genrand` seeding of
///   `seed & 0xffffffff` and the reference tempering, i.e. exactly `std::mt19937`;
/// - aten/src/ATen/CPUGeneratorImpl.cpp: `random()`, `random64()` (`(a << 32) | b`),
///   `set_current_seed` (which also drops the cached normal samples);
/// - aten/src/ATen/core/TransformationHelper.h: `uniform_real`, `uniform_int_from_to`,
///   `normal` (`val * std + mean`), `exponential` (`-1 / lambda * log(1 - u)` in double),
///   `DistAccumType<float> = float`;
/// - aten/src/ATen/core/DistributionsHelper.h: `uniform_real_distribution`,
///   `uniform_int_from_to_distribution`, `normal_distribution` (Box-Muller with the cached
///   second sample, `log(1 - u2)` in 1.13 -- later versions switched to `log1p(-u2)`);
/// - aten/src/ATen/native/DistributionTemplates.h: the argument checks of `uniform_`,
///   `normal_` and `random_(from, to)`;
/// - aten/src/ATen/native/cpu/DistributionTemplates.h: `uniform_kernel`,
///   `random_from_to_kernel`, `normal_kernel`, `normal_fill`, `normal_fill_AVX2`,
///   `exponential_kernel` (its default path: Debian's build has no MKL);
/// - aten/src/ATen/native/cpu/avx_mathfun.h: `log256_ps` and `sincos256_ps` (Cephes).
///
/// Two things are not visible in the sources but decide the last bit, and were settled
/// against the oracle: PyTorch's kernels in aten/src/ATen/native/cpu/ are compiled once per
/// CPU capability with `-mavx2 -mfma` in GNU C++ mode, where GCC contracts `a * b + c` into a
/// fused multiply-add (`-ffp-contract=fast`). So `uniform_` computes
/// `fma(x, to - from, from)` in float, and the vectorised normal transform contains the fused
/// multiply-adds listed in `log_avx2` / `sincos_avx2`. This file spells every such fusion out
/// with `std::fma`, so its results do not depend on how this project itself is compiled.
#include "attn/core/generator.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <immintrin.h>

// The generator's bulk loops are also compiled for CPUs with AVX2 (chosen when the program
// starts): the twist and the tempering run 8 words at a time there.
#define ATTN_MT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))

namespace attn {

namespace {

/// `c10::pi<double>` (c10/util/MathConstants.h).
constexpr double pi = 3.141592653589793238462643383279502;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

// ------------------------------------------------------------------------------------------
// The vectorised normal transform of PyTorch's AVX2 build, one lane at a time.
//
// `normal_fill_16_AVX2` (native/cpu/DistributionTemplates.h) uses Cephes-style `log256_ps`
// and `sincos256_ps` from avx_mathfun.h, not libm: replaying the same float operations, with
// the fused multiply-adds GCC forms from them, reproduces every recorded value exactly.
// The plain C++ `normal_fill_16` (std::log/std::cos/std::sin on floats, used by builds
// without the AVX2 kernel) differs from it by up to ~1.6e-6 absolute on the same uniforms.
// ------------------------------------------------------------------------------------------

// The transforms below spell PyTorch's fusions with std::fma, which is exact whatever the
// hardware: compiled for x86-64 without FMA, each is a call into libm. `normal_fill_16` and
// `uniform_fill` are therefore also compiled for CPUs with FMA (target_clones, chosen when the
// program starts), where the same std::fma is one instruction: the same bits, 10 times faster
// (a GPT-2 model draws 163 million numbers). The helpers are inlined into each clone.
#define ATTN_FMA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define ATTN_INLINE inline __attribute__((always_inline))

/// `log256_ps` for one lane: natural log of `x > 0` (NaN for `x <= 0`), float32.
ATTN_INLINE float log_avx2(float x_in) {
    constexpr float sqrthf = static_cast<float>(0.707106781186547524);
    constexpr float p[9] = {
        static_cast<float>(7.0376836292E-2),  static_cast<float>(-1.1514610310E-1),
        static_cast<float>(1.1676998740E-1),  static_cast<float>(-1.2420140846E-1),
        static_cast<float>(1.4249322787E-1),  static_cast<float>(-1.6668057665E-1),
        static_cast<float>(2.0000714765E-1),  static_cast<float>(-2.4999993993E-1),
        static_cast<float>(3.3333331174E-1)};
    constexpr float q1 = static_cast<float>(-2.12194440e-4);
    constexpr float q2 = static_cast<float>(0.693359375);

    // Split x = m * 2^e with m in [0.5, 1) (denormals are first raised to FLT_MIN).
    float x = std::fmax(x_in, from_bits(0x00800000u));
    const auto exponent = static_cast<std::int32_t>(bits(x) >> 23) - 0x7f;
    x = from_bits((bits(x) & ~0x7f800000u) | bits(0.5f));
    float e = static_cast<float>(exponent) + 1.0f;

    // if (x < SQRTHF) { e -= 1; x = x + x - 1; } else { x = x - 1; }
    const bool below = x < sqrthf;
    const float tmp = below ? x : 0.0f;
    x = x - 1.0f;
    e = e - (below ? 1.0f : 0.0f);
    x = x + tmp;

    const float z = x * x;
    float y = p[0];
    for (int i = 1; i < 9; ++i) y = std::fma(y, x, p[i]);  // y = y * x + p[i], fused
    y = y * x;
    // `y = y * z; tmp = e * q1; y = y + tmp`: GCC fuses the first product (y * z) into the
    // add; the second is rounded on its own.
    y = std::fma(y, z, e * q1);
    y = std::fma(-z, 0.5f, y);  // y - z * 0.5 (exact product, fused or not)
    x = x + y;
    x = std::fma(e, q2, x);     // x + e * q2, fused
    return x_in <= 0.0f ? std::numeric_limits<float>::quiet_NaN() : x;
}

/// `sincos256_ps` for one lane: sine and cosine of `x`, float32 (Cephes sinf/cosf).
ATTN_INLINE void sincos_avx2(float x_in, float& sin_out, float& cos_out) {
    constexpr float fopi = static_cast<float>(1.27323954473516);  // 4 / pi
    constexpr float dp1 = -0.78515625f;
    constexpr float dp2 = static_cast<float>(-2.4187564849853515625e-4);
    constexpr float dp3 = static_cast<float>(-3.77489497744594108e-8);
    constexpr float coscof[3] = {static_cast<float>(2.443315711809948E-005),
                                 static_cast<float>(-1.388731625493765E-003),
                                 static_cast<float>(4.166664568298827E-002)};
    constexpr float sincof[3] = {static_cast<float>(-1.9515295891E-4),
                                 static_cast<float>(8.3321608736E-3),
                                 static_cast<float>(-1.6666654611E-1)};

    std::uint32_t sign_sin = bits(x_in) & 0x80000000u;
    float x = std::fabs(x_in);

    // Octant j = (int(x * 4/pi) + 1) & ~1 and the signs / polynomial it selects.
    std::int32_t j = static_cast<std::int32_t>(x * fopi);  // truncation, as cvttps
    j = (j + 1) & ~1;
    const float y_j = static_cast<float>(j);
    const std::uint32_t swap_sign_sin = static_cast<std::uint32_t>(j & 4) << 29;
    const bool sin_poly = (j & 2) == 0;
    const std::uint32_t sign_cos = static_cast<std::uint32_t>(~(j - 2) & 4) << 29;
    sign_sin ^= swap_sign_sin;

    // Extended-precision reduction x = ((x - j*DP1) - j*DP2) - j*DP3, each step fused.
    x = std::fma(y_j, dp1, x);
    x = std::fma(y_j, dp2, x);
    x = std::fma(y_j, dp3, x);

    const float z = x * x;
    // Cosine polynomial on [0, pi/4]: 1 - z/2 + z^2 * P(z).
    float yc = std::fma(coscof[0], z, coscof[1]);
    yc = std::fma(yc, z, coscof[2]);
    yc = yc * z;
    yc = std::fma(yc, z, -(z * 0.5f));  // `y = y * z; y = y - z * 0.5`, first product fused
    yc = yc + 1.0f;
    // Sine polynomial on [0, pi/4]: x + x^3 * Q(z).
    float ys = std::fma(sincof[0], z, sincof[1]);
    ys = std::fma(ys, z, sincof[2]);
    ys = ys * z;
    ys = std::fma(ys, x, x);

    // Select (with the same adds/subtracts of zeros as the vector code).
    const float ysin2 = sin_poly ? ys : 0.0f;
    const float ysin1 = sin_poly ? 0.0f : yc;
    ys = ys - ysin2;
    yc = yc - ysin1;
    sin_out = from_bits(bits(ysin1 + ysin2) ^ sign_sin);
    cos_out = from_bits(bits(yc + ys) ^ sign_cos);
}

/// `normal_fill_16_AVX2`: turns 16 uniforms in [0, 1) into 16 normal samples, in place.
/// Pairs element j (u1 = 1 - x[j], the radius) with element j + 8 (u2, the angle).
ATTN_FMA_CLONES void normal_fill_16(float* data, float mean, float std) {
    const auto two_pi = static_cast<float>(2.0f * pi);  // _mm256_set1_ps(2.0f * pi<double>)
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - data[j];  // [0, 1) -> (0, 1] for the log
        const float u2 = data[j + 8];
        const float radius = std::sqrt(-2.0f * log_avx2(u1));
        const float theta = two_pi * u2;
        float s = 0.0f;
        float c = 0.0f;
        sincos_avx2(theta, s, c);
        data[j] = std::fma(radius * c, std, mean);  // _mm256_fmadd_ps(n1, std, mean)
        data[j + 8] = std::fma(radius * s, std, mean);
    }
}

/// `normal_fill_16` of `blocks` consecutive blocks of 16, 8 lanes at a time with AVX2 and FMA:
/// PyTorch's own vector code (`normal_fill_16_AVX2`), the scalar lanes above operation for
/// operation (each `std::fma` a `_mm256_fmadd_ps`, every other product and sum rounded on its
/// own: no contraction in this function), so the same bits.
__attribute__((target("avx2,fma"), optimize("fp-contract=off")))
void normal_fill_blocks_avx2(float* data, std::size_t blocks, float mean, float std) {
    const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
    const __m256i sign_bit = _mm256_set1_epi32(static_cast<int>(0x80000000u));
    const float p[9] = {static_cast<float>(7.0376836292E-2),  static_cast<float>(-1.1514610310E-1),
                        static_cast<float>(1.1676998740E-1),  static_cast<float>(-1.2420140846E-1),
                        static_cast<float>(1.4249322787E-1),  static_cast<float>(-1.6668057665E-1),
                        static_cast<float>(2.0000714765E-1),  static_cast<float>(-2.4999993993E-1),
                        static_cast<float>(3.3333331174E-1)};
    for (std::size_t b = 0; b < blocks; ++b, data += 16) {
        const __m256 u1 = _mm256_sub_ps(one, _mm256_loadu_ps(data));
        const __m256 u2 = _mm256_loadu_ps(data + 8);
        // log_avx2(u1)
        __m256 x = _mm256_max_ps(u1, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000)));
        const __m256i xi = _mm256_castps_si256(x);
        const __m256i exponent = _mm256_sub_epi32(_mm256_srli_epi32(xi, 23), _mm256_set1_epi32(0x7f));
        x = _mm256_castsi256_ps(_mm256_or_si256(_mm256_andnot_si256(_mm256_set1_epi32(0x7f800000), xi),
                                                _mm256_castps_si256(half)));
        __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(exponent), one);
        const __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps(static_cast<float>(0.707106781186547524)), _CMP_LT_OQ);
        const __m256 tmp = _mm256_and_ps(x, below);
        x = _mm256_sub_ps(x, one);
        e = _mm256_sub_ps(e, _mm256_and_ps(one, below));
        x = _mm256_add_ps(x, tmp);
        __m256 z = _mm256_mul_ps(x, x);
        __m256 y = _mm256_set1_ps(p[0]);
        for (int i = 1; i < 9; ++i) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(p[i]));
        y = _mm256_mul_ps(y, x);
        y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps(static_cast<float>(-2.12194440e-4))));
        y = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_setzero_ps(), z), half, y);
        x = _mm256_add_ps(x, y);
        x = _mm256_fmadd_ps(e, _mm256_set1_ps(static_cast<float>(0.693359375)), x);
        const __m256 log_u1 = _mm256_blendv_ps(x, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()),
                                               _mm256_cmp_ps(u1, _mm256_setzero_ps(), _CMP_LE_OQ));
        const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), log_u1));
        const __m256 theta = _mm256_mul_ps(_mm256_set1_ps(static_cast<float>(2.0f * pi)), u2);
        // sincos_avx2(theta)
        __m256i sign_sin = _mm256_and_si256(_mm256_castps_si256(theta), sign_bit);
        x = _mm256_castsi256_ps(_mm256_andnot_si256(sign_bit, _mm256_castps_si256(theta)));
        __m256i j = _mm256_cvttps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(static_cast<float>(1.27323954473516))));
        j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
        const __m256 y_j = _mm256_cvtepi32_ps(j);
        const __m256i swap_sign_sin = _mm256_slli_epi32(_mm256_and_si256(j, _mm256_set1_epi32(4)), 29);
        const __m256 sin_poly = _mm256_castsi256_ps(
            _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
        const __m256i sign_cos = _mm256_slli_epi32(
            _mm256_andnot_si256(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), _mm256_set1_epi32(4)), 29);
        sign_sin = _mm256_xor_si256(sign_sin, swap_sign_sin);
        x = _mm256_fmadd_ps(y_j, _mm256_set1_ps(-0.78515625f), x);
        x = _mm256_fmadd_ps(y_j, _mm256_set1_ps(static_cast<float>(-2.4187564849853515625e-4)), x);
        x = _mm256_fmadd_ps(y_j, _mm256_set1_ps(static_cast<float>(-3.77489497744594108e-8)), x);
        z = _mm256_mul_ps(x, x);
        __m256 yc = _mm256_fmadd_ps(_mm256_set1_ps(static_cast<float>(2.443315711809948E-005)), z,
                                    _mm256_set1_ps(static_cast<float>(-1.388731625493765E-003)));
        yc = _mm256_fmadd_ps(yc, z, _mm256_set1_ps(static_cast<float>(4.166664568298827E-002)));
        yc = _mm256_mul_ps(yc, z);
        yc = _mm256_fmadd_ps(yc, z, _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, half)));
        yc = _mm256_add_ps(yc, one);
        __m256 ys = _mm256_fmadd_ps(_mm256_set1_ps(static_cast<float>(-1.9515295891E-4)), z,
                                    _mm256_set1_ps(static_cast<float>(8.3321608736E-3)));
        ys = _mm256_fmadd_ps(ys, z, _mm256_set1_ps(static_cast<float>(-1.6666654611E-1)));
        ys = _mm256_mul_ps(ys, z);
        ys = _mm256_fmadd_ps(ys, x, x);
        const __m256 ysin2 = _mm256_and_ps(ys, sin_poly);
        const __m256 ysin1 = _mm256_andnot_ps(sin_poly, yc);
        ys = _mm256_sub_ps(ys, ysin2);
        yc = _mm256_sub_ps(yc, ysin1);
        const __m256 s = _mm256_xor_ps(_mm256_add_ps(ysin1, ysin2), _mm256_castsi256_ps(sign_sin));
        const __m256 c = _mm256_xor_ps(_mm256_add_ps(yc, ys), _mm256_castsi256_ps(sign_cos));
        const __m256 sd = _mm256_set1_ps(std), mn = _mm256_set1_ps(mean);
        _mm256_storeu_ps(data, _mm256_fmadd_ps(_mm256_mul_ps(radius, c), sd, mn));
        _mm256_storeu_ps(data + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, s), sd, mn));
    }
}

const bool generator_has_avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

/// `normal_fill_16` of `blocks` consecutive blocks, 8 lanes at a time where the CPU can.
void normal_fill_blocks(float* data, std::size_t blocks, float mean, float std) {
    if (generator_has_avx2_fma) return normal_fill_blocks_avx2(data, blocks, mean, std);
    for (std::size_t b = 0; b < blocks; ++b) normal_fill_16(data + 16 * b, mean, std);
}

/// `x[i] = gen.uniform_float()` for n floats, the draws made in bulk.
void uniform_floats(Generator& gen, float* x, std::size_t n) {
    std::uint32_t buf[1024];
    for (std::size_t i = 0; i < n; i += 1024) {
        const std::size_t take = std::min<std::size_t>(1024, n - i);
        gen.random_n(buf, take);
        for (std::size_t j = 0; j < take; ++j) x[i + j] = static_cast<float>(buf[j] & ((1U << 24) - 1)) * 0x1p-24f;
    }
}

/// `normal_fill_AVX2`: the path of contiguous float tensors with at least 16 elements.
void normal_fill(float* data, std::size_t size, float mean, float std, Generator& gen) {
    uniform_floats(gen, data, size);
    normal_fill_blocks(data, size / 16, mean, std);
    if (size % 16 != 0) {
        // PyTorch redraws the last 16 values (16 fresh uniforms) and transforms them as one
        // block, overwriting part of the last full block too.
        float* tail = data + size - 16;
        for (std::size_t i = 0; i < 16; ++i) tail[i] = gen.uniform_float();
        normal_fill_blocks(tail, 1, mean, std);
    }
}

/// `x[i] = fma(x[i], range, from)` for n floats: `uniform_real<float>` on uniforms in [0, 1).
ATTN_FMA_CLONES void uniform_fill(float* x, std::size_t n, float range, float from) {
    for (std::size_t i = 0; i < n; ++i) x[i] = std::fma(x[i], range, from);
}

/// `at::normal_distribution<double>(mean, std)(gen)`: the scalar path, in double.
double normal_double(double mean, double std, Generator& gen) {
    // `transformation::normal(ret, mean, std)` is `ret * std + mean`, fused by GCC in the
    // AVX2 kernel build (only visible when std != 1 or mean != 0, and then rarely after the
    // cast to float).
    if (gen.next_double_normal_sample) {
        const double cached = *gen.next_double_normal_sample;
        gen.next_double_normal_sample.reset();
        return std::fma(cached, std, mean);
    }
    const double u1 = gen.uniform_double();  // the angle
    const double u2 = gen.uniform_double();  // the radius
    // PyTorch 1.13 writes log(1 - u2); 2.x writes log1p(-u2), which differs in the last bits.
    const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
    const double theta = 2.0 * pi * u1;
    gen.next_double_normal_sample = r * std::sin(theta);
    return std::fma(r * std::cos(theta), std, mean);
}

#undef ATTN_FMA_CLONES
#undef ATTN_INLINE

}  // namespace

// ------------------------------------------------------------------------------------------
// Generator
// ------------------------------------------------------------------------------------------

namespace {

// MT19937's tempering of one word.
inline std::uint32_t mt_temper(std::uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

// The twist: all 624 words anew from the old ones (genrand_int32's loop, in three parts so that
// each is a loop without a dependence between neighbouring words: vectorised).
ATTN_MT_CLONES void mt_twist(std::uint32_t* x) {
    constexpr std::size_t n = 624, m = 397;
    constexpr std::uint32_t upper = 0x80000000u, lower = 0x7fffffffu, a = 0x9908b0dfu;
    for (std::size_t k = 0; k < n - m; ++k) {
        const std::uint32_t y = (x[k] & upper) | (x[k + 1] & lower);
        x[k] = x[k + m] ^ (y >> 1) ^ ((y & 1u) ? a : 0u);
    }
    for (std::size_t k = n - m; k < n - 1; ++k) {
        const std::uint32_t y = (x[k] & upper) | (x[k + 1] & lower);
        x[k] = x[k + m - n] ^ (y >> 1) ^ ((y & 1u) ? a : 0u);
    }
    const std::uint32_t y = (x[n - 1] & upper) | (x[0] & lower);
    x[n - 1] = x[m - 1] ^ (y >> 1) ^ ((y & 1u) ? a : 0u);
}

ATTN_MT_CLONES void mt_temper_n(const std::uint32_t* x, std::size_t n, std::uint32_t* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = mt_temper(x[i]);
}

}  // namespace

Generator::Generator(std::uint64_t seed) { manual_seed(seed); }

void Generator::manual_seed(std::uint64_t seed) {
    // at::mt19937(seed) keeps `seed & 0xffffffff` (init_genrand), as std::mt19937 does.
    state_[0] = static_cast<std::uint32_t>(seed);
    for (std::size_t i = 1; i < kStateWords; ++i)
        state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
    next_ = kStateWords;
    // CPUGeneratorImpl::set_current_seed also forgets both cached normal samples.
    next_double_normal_sample.reset();
    draws_ = 0;
}

std::uint32_t Generator::random() {
    ++draws_;
    if (next_ >= kStateWords) {
        mt_twist(state_.data());
        next_ = 0;
    }
    return mt_temper(state_[next_++]);
}

void Generator::random_n(std::uint32_t* out, std::size_t n) {
    draws_ += n;
    while (n > 0) {
        if (next_ >= kStateWords) {
            mt_twist(state_.data());
            next_ = 0;
        }
        const std::size_t take = std::min(n, kStateWords - next_);
        mt_temper_n(state_.data() + next_, take, out);
        next_ += take;
        out += take;
        n -= take;
    }
}

std::uint64_t Generator::random64() {
    const std::uint64_t a = random();  // high half first
    const std::uint64_t b = random();
    return (a << 32) | b;
}

#undef ATTN_MT_CLONES

double Generator::uniform_double() {
    return static_cast<double>(random64() & ((1ULL << 53) - 1)) * 0x1p-53;
}

float Generator::uniform_float() {
    return static_cast<float>(random() & ((1U << 24) - 1)) * 0x1p-24f;
}

Generator& default_generator() {
    static Generator gen;
    return gen;
}

void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

// ------------------------------------------------------------------------------------------
// Distributions
// ------------------------------------------------------------------------------------------

Tensor rand(const Shape& size, Generator& gen) {
    check_allocation("rand", size);
    Tensor t = xt::empty<float>(size);
    return uniform_(t, 0.0, 1.0, gen);
}

Tensor& uniform_(Tensor& t, double from, double to, Generator& gen) {
    shape_of(t);  // refuses a shape that does not match the storage
    // uniform_impl_ (native/DistributionTemplates.h); written so that NaN fails every check.
    constexpr double lowest = std::numeric_limits<float>::lowest();
    constexpr double highest = std::numeric_limits<float>::max();
    if (!(from >= lowest && from <= highest))
        throw std::invalid_argument("uniform_: from=" + std::to_string(from) +
                                    " is out of bounds for float32");
    if (!(to >= lowest && to <= highest))
        throw std::invalid_argument("uniform_: to=" + std::to_string(to) +
                                    " is out of bounds for float32");
    if (!(from <= to))
        throw std::invalid_argument("uniform_: expected from <= to, got from=" +
                                    std::to_string(from) + " > to=" + std::to_string(to));
    if (!(to - from <= highest))
        throw std::invalid_argument("uniform_: to - from exceeds the float32 range");

    // uniform_kernel: from and to are cast to float first; uniform_real<float> then computes
    // x * (to - from) + from in float (dist_acctype<float> is float), fused into one fma.
    const auto f = static_cast<float>(from);
    const float range = static_cast<float>(to) - f;
    float* x = t.data();
    uniform_floats(gen, x, t.size());
    uniform_fill(x, t.size(), range, f);
    return t;
}

LongTensor randint(std::int64_t low, std::int64_t high, const Shape& size, Generator& gen) {
    if (low >= high)
        throw std::invalid_argument("randint: expected low < high, got low=" +
                                    std::to_string(low) + " >= high=" + std::to_string(high));
    // random_from_to_impl: range = (uint64)to - (uint64)from; uniform_int_from_to_distribution
    // takes one 32-bit draw below 2^32 and a 64-bit draw from 2^32 up (int64 tensors);
    // uniform_int_from_to returns (int64)(val % range + base) in uint64 arithmetic.
    const std::uint64_t range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
    const bool wide = range >= (1ULL << 32);
    check_allocation("randint", size, sizeof(std::int64_t));
    LongTensor t = xt::empty<std::int64_t>(size);
    for (auto& x : t) {
        const std::uint64_t r = wide ? gen.random64() : gen.random();
        x = static_cast<std::int64_t>(r % range + static_cast<std::uint64_t>(low));
    }
    return t;
}

LongTensor randint(std::int64_t high, const Shape& size, Generator& gen) {
    return randint(0, high, size, gen);
}

std::int64_t random_int64(Generator& gen) {
    // uniform_int<int64_t>: val % (uint64(INT64_MAX) + 1), i.e. the low 63 bits.
    return static_cast<std::int64_t>(gen.random64() & 0x7fffffffffffffffULL);
}

LongTensor randperm(std::size_t n, Generator& gen) {
    check_allocation("randperm", Shape{n}, sizeof(std::int64_t));
    LongTensor r = xt::empty<std::int64_t>(Shape{n});
    std::int64_t* p = r.data();
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::int64_t>(i);
    // randperm_cpu: one 32-bit draw per position but the last, `random() % (n - i)` taken in
    // int64 (a uint32 draw widened, so never negative).
    for (std::size_t i = 0; i + 1 < n; ++i) {
        const std::size_t z = static_cast<std::size_t>(gen.random()) % (n - i);
        std::swap(p[i], p[i + z]);
    }
    return r;
}

Tensor randn(const Shape& size, Generator& gen) {
    check_allocation("randn", size);
    Tensor t = xt::empty<float>(size);
    return normal_(t, 0.0, 1.0, gen);
}

Tensor& normal_(Tensor& t, double mean, double std, Generator& gen) {
    shape_of(t);  // refuses a shape that does not match the storage
    // CHECK_NORMAL_STD (native/DistributionTemplates.h); NaN fails it too.
    if (!(std >= 0.0))
        throw std::invalid_argument("normal_: expected std >= 0.0, got std=" +
                                    std::to_string(std));
    // normal_kernel: float, >= 16 elements, contiguous (an xarray always is) -> normal_fill
    // with float mean and std; otherwise one double sample per element, cast to float.
    if (t.size() >= 16) {
        normal_fill(t.data(), t.size(), static_cast<float>(mean), static_cast<float>(std), gen);
    } else {
        for (auto& x : t) x = static_cast<float>(normal_double(mean, std, gen));
    }
    return t;
}

double exponential_double(double lambd, Generator& gen) {
    // transformation::exponential: static_cast<T>(-1.0) / lambda * at::log(static_cast<T>(1.0) - val)
    const double u = gen.uniform_double();
    return -1.0 / lambd * std::log(1.0 - u);
}

Tensor& exponential_(Tensor& t, double lambd, Generator& gen) {
    shape_of(t);  // refuses a shape that does not match the storage
    // exponential_impl_ (native/DistributionTemplates.h); NaN fails it too.
    if (!(lambd >= 0.0))
        throw std::invalid_argument("exponential_: expected lambd >= 0.0, got lambd=" + std::to_string(lambd));
    for (auto& x : t) x = static_cast<float>(exponential_double(lambd, gen));
    return t;
}

}  // namespace attn
