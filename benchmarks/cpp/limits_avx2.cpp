// limits_impl.hpp for AVX2 with FMA: 8 lanes, 12 chains (of 16 registers). Compiled with
// -mavx2 -mfma -ffp-contract=off (the kernels' AVX2 file has no -mfma: it never fuses; the
// FMA loop measures what an FMA path could reach at this width).
#include <cstddef>

#include <immintrin.h>

#include "limits_isa.hpp"

namespace bench::limits {
namespace {

using V = float __attribute__((vector_size(32)));
constexpr std::size_t ACC = 12;
#define LIMITS_HAVE_FMA 1
inline V fused(V c, V m, V a) { return V(_mm256_fmadd_ps(__m256(c), __m256(m), __m256(a))); }

#include "limits_impl.hpp"

}  // namespace

const Isa& isa_avx2() {
    static const Isa isa{"avx2", LANES, ACC, &mul_add_loop, &fma_loop, &read_loop};
    return isa;
}

}  // namespace bench::limits
