// The loops of limits_benchmark.cpp for one instruction set. Each of limits_avx512.cpp,
// limits_avx2.cpp and limits_portable.cpp defines, then includes this file:
//   V                 its vector type (GCC's vector extension)
//   ACC               independent chains: enough to cover the latency of every port
//   LIMITS_ISA        the kernels' name of the instruction set ("avx512f", ...)
//   LIMITS_GETTER     the function of limits_isa.hpp that returns its table
//   fused(c, m, a)    c * m + a rounded once, when LIMITS_HAVE_FMA is defined
// Compiled with -ffp-contract=off, so that `c * m` then `+ a` stay a multiply and an add (the
// compiler may not fuse them): what the exact path of lib/attn/kernels/ does for every term
// of a product. benchmarks/README.md says how to check the instructions with objdump.
#include <cstddef>

#include "limits_isa.hpp"

namespace bench::limits {
namespace {

constexpr std::size_t LANES = sizeof(V) / sizeof(float);

inline V splat(float x) {
    V v;
    for (std::size_t l = 0; l < LANES; ++l) v[l] = x;
    return v;
}

// The chains' sum, so that no chain's result is unused.
inline float total(const V* c) {
    V s = c[0];
    for (std::size_t i = 1; i < ACC; ++i) s += c[i];
    float t = 0;
    for (std::size_t l = 0; l < LANES; ++l) t += s[l];
    return t;
}

// `steps` times, in each of ACC chains: c = c * m, then c = c + a (two roundings), or
// c = fused(c, m, a) when Fused. The chains are independent, so the operations of different
// chains overlap; each chain depends on its last step, so no step can be dropped or hoisted.
// With m < 1, c stays bounded (c -> a / (1 - m)) and never becomes subnormal.
template <bool Fused>
float chains(std::size_t steps, float m_, float a_) {
    const V m = splat(m_), a = splat(a_);
    V c[ACC];
    for (std::size_t i = 0; i < ACC; ++i) c[i] = splat(1.0f + float(i) / 64);
    for (std::size_t s = 0; s < steps; ++s) {
#pragma GCC unroll 32
        for (std::size_t i = 0; i < ACC; ++i) {
#ifdef LIMITS_HAVE_FMA
            if constexpr (Fused) {
                c[i] = fused(c[i], m, a);
                continue;
            }
#endif
            c[i] = c[i] * m;
            c[i] = c[i] + a;
        }
    }
    return total(c);
}

float mul_add_loop(std::size_t steps, float m, float a) { return chains<false>(steps, m, a); }
#ifdef LIMITS_HAVE_FMA
float fma_loop(std::size_t steps, float m, float a) { return chains<true>(steps, m, a); }
#endif

// The sum of x[0..n), n a multiple of LANES * ACC, x aligned to sizeof(V): every byte read
// once, one vector add per vector loaded.
float read_loop(const float* x, std::size_t n) {
    V c[ACC];
    for (std::size_t i = 0; i < ACC; ++i) c[i] = splat(0.0f);
    for (std::size_t p = 0; p < n; p += LANES * ACC) {
#pragma GCC unroll 32
        for (std::size_t i = 0; i < ACC; ++i)
            c[i] += *reinterpret_cast<const V*>(x + p + i * LANES);
    }
    return total(c);
}

}  // namespace

const Isa& LIMITS_GETTER() {
#ifdef LIMITS_HAVE_FMA
    static const Isa isa{LIMITS_ISA, LANES, ACC, &mul_add_loop, &fma_loop, &read_loop};
#else
    static const Isa isa{LIMITS_ISA, LANES, ACC, &mul_add_loop, nullptr, &read_loop};
#endif
    return isa;
}

}  // namespace bench::limits
