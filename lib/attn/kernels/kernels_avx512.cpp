// AVX-512F kernels of attn::fast in both arithmetics (see kernel_impl.hpp); called only when
// the CPU has AVX-512F. Compiled with -mavx512f -ffp-contract=off: the exact kernels'
// `c + a * b` stays a rounded product and a rounded sum, and only the fused kernels' fmadd is
// a vfmadd.
//
// The fused register tile, MR x NV vectors of accumulators (each p step: NV loads of B, MR
// broadcasts of A, MR * NV fused multiply-adds): enough independent accumulators to cover the
// FMA's latency on two ports (4 cycles x 2 = 8 at least, on Intel's cores, where the FMA
// ports also run the adds and multiplies; AMD's Zen 4 runs a 512-bit FMA per cycle over two
// 256-bit pipes, 4 deep), few enough loads per FMA for the load ports, and NR = 32 columns as
// the exact kernels (the fused attention's blocks of 32 queries).
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include <immintrin.h>

#include "attn/kernels/kernels.hpp"

// SLEEF's AVX-512F expf_u10 (libsleef exports it; sleef.h declares it only for some flags).
extern "C" __m512 Sleef_expf16_u10avx512f(__m512);

namespace attn::fast::detail {
namespace {

constexpr const char* kIsa = "avx512f";
constexpr std::size_t W = 16;
using V = float __attribute__((vector_size(64)));
inline V vexp(V x) { return (V)Sleef_expf16_u10avx512f((__m512)x); }
// c + a * b rounded once.
inline V fmadd(V c, float a, V b) { return (V)_mm512_fmadd_ps(_mm512_set1_ps(a), (__m512)b, (__m512)c); }

constexpr std::size_t kExactMR = 8;
constexpr std::size_t kFusedMR = 12;
#include "kernel_isa.hpp"

}  // namespace

const IsaKernels& kernels_avx512() { return isa_kernels(); }

}  // namespace attn::fast::detail
