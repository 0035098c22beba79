// Portable kernels of attn::fast in both arithmetics (see kernel_impl.hpp): 4-lane GCC vectors
// (SSE2 on x86-64), exp one element at a time with the scalar SLEEF function the step-by-step
// softmax calls. The fused kernels add every term of a product by one fmaf per lane (the C
// library's: the FMA instruction where the CPU has one, else a correctly rounded emulation:
// the same bits, slowly), for CPUs without AVX2 and for the tests, which check that every
// instruction set gives the same bits. Compiled with -ffp-contract=off.
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

constexpr const char* kIsa = "portable";
constexpr std::size_t W = 4;
using V = float __attribute__((vector_size(16)));

// As attn::exp_torch (core/elementwise.hpp, a floor above): the FMA algorithm on CPUs that
// have FMA.
inline V vexp(V x) {
    static const bool has_fma = __builtin_cpu_supports("fma");
    V y;
    for (std::size_t l = 0; l < W; ++l)
        y[l] = has_fma ? Sleef_expf1_u10purecfma(x[l]) : Sleef_expf1_u10purec(x[l]);
    return y;
}

// c + a * b rounded once, lane by lane.
inline V fmadd(V c, float a, V b) {
    V y;
    for (std::size_t l = 0; l < W; ++l) y[l] = std::fma(a, b[l], c[l]);
    return y;
}

constexpr std::size_t kExactMR = 4;
constexpr std::size_t kFusedMR = 4;
#include "kernel_isa.hpp"

}  // namespace

const IsaKernels& kernels_portable() { return isa_kernels(); }

}  // namespace attn::fast::detail
