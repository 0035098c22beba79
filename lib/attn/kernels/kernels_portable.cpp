// Portable kernels of attn::fast (see kernel_impl.hpp): 4-lane GCC vectors (SSE2 on x86-64),
// exp one element at a time with the scalar SLEEF function the step-by-step softmax calls.
// Compiled with -ffp-contract=off.
#include <algorithm>
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

// As expf_torch in functional.cpp: the FMA algorithm on CPUs that have FMA.
inline V vexp(V x) {
    static const bool has_fma = __builtin_cpu_supports("fma");
    V y;
    for (std::size_t l = 0; l < W; ++l)
        y[l] = has_fma ? Sleef_expf1_u10purecfma(x[l]) : Sleef_expf1_u10purec(x[l]);
    return y;
}

// One term of a product: a rounded product, then a rounded sum (-ffp-contract=off).
inline V madd(V c, float a, V b) { return c + a * b; }

#include "kernel_impl.hpp"

}  // namespace

const Kernels& kernels_portable() {
    static const Kernels k{"portable", false, MR, NR, &micro, &pack_a_panel, &pack_b_panel,
                           &transpose_n<W>, &softmax_block, &exp_n, W, &skinny_nt};
    return k;
}

}  // namespace attn::fast::detail
