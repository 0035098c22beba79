// limits_impl.hpp for AVX-512F: 16 lanes, 24 chains (of 32 registers). Compiled with
// -mavx512f -ffp-contract=off.
#include <immintrin.h>

using V = float __attribute__((vector_size(64)));
constexpr std::size_t ACC = 24;
#define LIMITS_ISA "avx512f"
#define LIMITS_GETTER isa_avx512
#define LIMITS_HAVE_FMA 1
inline V fused(V c, V m, V a) { return V(_mm512_fmadd_ps(__m512(c), __m512(m), __m512(a))); }

#include "limits_impl.hpp"
