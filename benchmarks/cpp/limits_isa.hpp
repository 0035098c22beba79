// One instruction set's loops for limits_benchmark.cpp (limits_impl.hpp, compiled once per
// instruction set with its own -m flags and -ffp-contract=off).
#pragma once

#include <cstddef>

namespace bench::limits {

struct Isa {
    const char* name;          ///< as attn::fast::isa_name(): "avx512f", "avx2", "portable"
    std::size_t lanes;         ///< floats per vector
    std::size_t accumulators;  ///< independent chains (and vector accumulators of `read`)
    /// `steps` steps of `accumulators` chains of c = c * m then c = c + a, every lane; returns
    /// the chains' sum. 2 flops per lane, chain and step.
    float (*mul_add)(std::size_t steps, float m, float a);
    /// The same with one fused multiply-add per step; null when the ISA has none.
    float (*fma)(std::size_t steps, float m, float a);
    /// The sum of x[0..n) (n a multiple of lanes * accumulators, x aligned to 64 bytes).
    float (*read)(const float* x, std::size_t n);
};

const Isa& isa_avx512();    ///< needs AVX-512F
const Isa& isa_avx2();      ///< needs AVX2 and FMA
const Isa& isa_portable();  ///< 4-lane SSE2 vectors, any x86-64 (the portable kernels' width)

}  // namespace bench::limits
