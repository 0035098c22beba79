// Portable kernels of attn::fast in Arithmetic::fma (see kernel_impl.hpp): 4-lane GCC vectors,
// every term of a product one fmaf per lane (the C library's: the FMA instruction where the
// CPU has one, else a correctly rounded emulation: the same bits, slowly). For CPUs without
// AVX2 and for the tests, which check that every instruction set gives the same bits.
// Compiled with -ffp-contract=off.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "attn/kernels/kernels.hpp"

// sleef.h declares the FMA variant only when compiled with FMA enabled; the library exports it.
extern "C" float Sleef_expf1_u10purecfma(float);
extern "C" float Sleef_expf1_u10purec(float);

namespace attn::fast::detail {
namespace {

constexpr std::size_t W = 4;
constexpr std::size_t MR = 4;
constexpr std::size_t NV = 2;
using V = float __attribute__((vector_size(16)));

// One term of a product: c + a * b rounded once, lane by lane.
inline V madd(V c, float a, V b) {
    V y;
    for (std::size_t l = 0; l < W; ++l) y[l] = std::fma(a, b[l], c[l]);
    return y;
}

// As kernels_portable.cpp (and expf_torch in functional.cpp).
inline V vexp(V x) {
    static const bool has_fma = __builtin_cpu_supports("fma");
    V y;
    for (std::size_t l = 0; l < W; ++l)
        y[l] = has_fma ? Sleef_expf1_u10purecfma(x[l]) : Sleef_expf1_u10purec(x[l]);
    return y;
}

#include "kernel_impl.hpp"

}  // namespace

const Kernels& kernels_portable_fma() {
    static const Kernels k{"portable", true, MR, NR, &micro, &pack_a_panel, &pack_b_panel,
                           &transpose_n<W>, &softmax_block, &exp_n, W, &skinny_nt};
    return k;
}

}  // namespace attn::fast::detail
