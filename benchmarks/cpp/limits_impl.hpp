// The loops of limits_benchmark.cpp for one instruction set. Each of limits_avx512.cpp,
// limits_avx2.cpp and limits_portable.cpp defines `V` (its vector type, GCC's vector
// extension), `ACC` (independent chains: enough to cover the latency of every port) and, when
// the ISA has fused multiply-adds, `fused(c, m, a)` = c * m + a rounded once, then includes
// this file inside its own namespace. Compiled with -ffp-contract=off, so that `c * m` then
// `+ a` stay a multiply and an add (the compiler may not fuse them): what the exact path of
// lib/attn/kernels/ does for every term of a product. benchmarks/README.md says how to check
// the instructions with objdump.

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

// `steps` times, in each of ACC chains: c = c * m, then c = c + a (two roundings). The chains
// are independent, so the multiplies and adds of different chains overlap; each chain depends
// on its last add, so no step can be dropped or hoisted. With m < 1, c stays bounded
// (c -> a / (1 - m)) and never becomes subnormal.
float mul_add_loop(std::size_t steps, float m_, float a_) {
    const V m = splat(m_), a = splat(a_);
    V c[ACC];
    for (std::size_t i = 0; i < ACC; ++i) c[i] = splat(1.0f + float(i) / 64);
    for (std::size_t s = 0; s < steps; ++s) {
#pragma GCC unroll 32
        for (std::size_t i = 0; i < ACC; ++i) {
            c[i] = c[i] * m;
            c[i] = c[i] + a;
        }
    }
    return total(c);
}

#ifdef LIMITS_HAVE_FMA
// The same chains with one fused multiply-add per step: c = fma(c, m, a).
float fma_loop(std::size_t steps, float m_, float a_) {
    const V m = splat(m_), a = splat(a_);
    V c[ACC];
    for (std::size_t i = 0; i < ACC; ++i) c[i] = splat(1.0f + float(i) / 64);
    for (std::size_t s = 0; s < steps; ++s) {
#pragma GCC unroll 32
        for (std::size_t i = 0; i < ACC; ++i) c[i] = fused(c[i], m, a);
    }
    return total(c);
}
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
