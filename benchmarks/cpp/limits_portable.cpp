// limits_impl.hpp for the portable kernels' width: 4 lanes (SSE2, any x86-64), 12 chains (of
// 16 registers), no fused multiply-add (SSE2 has none). Compiled with -ffp-contract=off.
#include <cstddef>

using V = float __attribute__((vector_size(16)));
constexpr std::size_t ACC = 12;
#define LIMITS_ISA "portable"
#define LIMITS_GETTER isa_portable

#include "limits_impl.hpp"
