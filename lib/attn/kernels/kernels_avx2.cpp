// AVX2 kernels of attn::fast (see kernel_impl.hpp). Compiled with -mavx2 -ffp-contract=off;
// called only when the CPU has AVX2 and FMA (SLEEF's AVX2 exp is an FMA algorithm).
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include <immintrin.h>

#include "attn/kernels/kernels.hpp"

// SLEEF's AVX2 expf_u10 (libsleef exports it; sleef.h declares it only for some flags).
extern "C" __m256 Sleef_expf8_u10avx2(__m256);

namespace attn::fast::detail {
namespace {

constexpr std::size_t W = 8;
constexpr std::size_t MR = 4;
constexpr std::size_t NV = 2;
using V = float __attribute__((vector_size(32)));
// One term of a product: a rounded product, then a rounded sum (-ffp-contract=off).
inline V madd(V c, float a, V b) { return c + a * b; }
inline V vexp(V x) { return (V)Sleef_expf8_u10avx2((__m256)x); }

#include "kernel_impl.hpp"

}  // namespace

const Kernels& kernels_avx2() {
    static const Kernels k{"avx2", false, MR, NR, &micro, &pack_a_panel, &pack_b_panel,
                           &transpose_n<W>, &softmax_block, &exp_n, W, &skinny_nt};
    return k;
}

}  // namespace attn::fast::detail
