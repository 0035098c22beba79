// AVX2 kernels of attn::fast in both arithmetics (see kernel_impl.hpp); called only when the CPU
// has AVX2 and FMA (SLEEF's AVX2 exp is an FMA algorithm). Compiled with -mavx2 -mfma
// -ffp-contract=off: the exact kernels' `c + a * b` stays a rounded product and a rounded sum
// (nothing is contracted), and only the fused kernels' fmadd is a vfmadd.
//
// The fused register tile: MR x NV = 12 accumulators of 8 lanes and 2 vectors of B in 16 ymm
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

constexpr const char* kIsa = "avx2";
constexpr std::size_t W = 8;
using V = float __attribute__((vector_size(32)));
inline V vexp(V x) { return (V)Sleef_expf8_u10avx2((__m256)x); }
// c + a * b rounded once.
inline V fmadd(V c, float a, V b) { return (V)_mm256_fmadd_ps(_mm256_set1_ps(a), (__m256)b, (__m256)c); }

constexpr std::size_t kExactMR = 4;
constexpr std::size_t kFusedMR = 6;
#include "kernel_isa.hpp"

}  // namespace

const IsaKernels& kernels_avx2() { return isa_kernels(); }

}  // namespace attn::fast::detail
