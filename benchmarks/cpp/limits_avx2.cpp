// limits_impl.hpp for AVX2 with FMA: 8 lanes, 12 chains (of 16 registers). Compiled with
// -mavx2 -mfma -ffp-contract=off (the kernels' AVX2 file has no -mfma: it never fuses; the
// FMA loop measures what an FMA path could reach at this width).
#include <immintrin.h>

using V = float __attribute__((vector_size(32)));
constexpr std::size_t ACC = 12;
#define LIMITS_ISA "avx2"
#define LIMITS_GETTER isa_avx2
#define LIMITS_HAVE_FMA 1
inline V fused(V c, V m, V a) { return V(_mm256_fmadd_ps(__m256(c), __m256(m), __m256(a))); }

#include "limits_impl.hpp"
