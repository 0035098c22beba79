// Internal: one instruction set's kernels in both arithmetics, included inside an anonymous
// namespace by kernels_<isa>.cpp after it defined what kernel_impl.hpp takes of the instruction
// set (kIsa, W, V, vexp, fmadd) and the rows of its two register tiles, kExactMR and kFusedMR:
// kernel_impl.hpp compiled once per arithmetic, each in its own namespace, and the table of
// both. Every tile holds NV = 2 vectors of B per row.

namespace exact {
constexpr bool kFused = false;
constexpr std::size_t MR = kExactMR;
constexpr std::size_t NV = 2;
#include "kernel_impl.hpp"
}  // namespace exact

namespace fused {
constexpr bool kFused = true;
constexpr std::size_t MR = kFusedMR;
constexpr std::size_t NV = 2;
#include "kernel_impl.hpp"
}  // namespace fused

// The instruction set's kernels in both arithmetics, as gemm.cpp chooses among them.
const IsaKernels& isa_kernels() {
    static const IsaKernels k{exact::kernels(), fused::kernels()};
    return k;
}
