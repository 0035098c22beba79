// AVX2 kernels of attn::fast in Arithmetic::fma (see kernel_impl.hpp): every term of a product
// one vfmadd (rounded once). Compiled with -mavx2 -mfma -ffp-contract=off; called only when the
// CPU has AVX2 and FMA.
//
// The register tile: MR x NV = 12 accumulators of 8 lanes and 2 vectors of B in 16 ymm
// registers, the broadcast of A folded into the FMA's memory operand; 12 independent chains
// cover a 4-cycle FMA on two ports.
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
constexpr std::size_t MR = 6;
constexpr std::size_t NV = 2;
using V = float __attribute__((vector_size(32)));
// One term of a product: c + a * b rounded once.
inline V madd(V c, float a, V b) { return (V)_mm256_fmadd_ps(_mm256_set1_ps(a), (__m256)b, (__m256)c); }
inline V vexp(V x) { return (V)Sleef_expf8_u10avx2((__m256)x); }

#include "kernel_impl.hpp"

}  // namespace

const Kernels& kernels_avx2_fma() {
    static const Kernels k{"avx2", true, MR, NR, &micro, &pack_a_panel, &pack_b_panel,
                           &transpose_n<W>, &softmax_block, &exp_n, W, &skinny_nt};
    return k;
}

}  // namespace attn::fast::detail
