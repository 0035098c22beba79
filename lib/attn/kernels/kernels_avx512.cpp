// AVX-512F kernels of attn::fast (see kernel_impl.hpp). Compiled with -mavx512f
// -ffp-contract=off; called only when the CPU has AVX-512F.
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

constexpr std::size_t W = 16;
constexpr std::size_t MR = 8;
constexpr std::size_t NV = 2;
using V = float __attribute__((vector_size(64)));
// One term of a product: a rounded product, then a rounded sum (-ffp-contract=off).
inline V madd(V c, float a, V b) { return c + a * b; }
inline V vexp(V x) { return (V)Sleef_expf16_u10avx512f((__m512)x); }

#include "kernel_impl.hpp"

}  // namespace

const Kernels& kernels_avx512() {
    static const Kernels k{"avx512f", false, MR, NR, &micro, &pack_a_panel, &pack_b_panel,
                           &transpose_n<W>, &softmax_block, &exp_n, W, &skinny_nt};
    return k;
}

}  // namespace attn::fast::detail
