// limits_impl.hpp for the portable kernels' width: 4 lanes (SSE2, any x86-64), 12 chains (of
// 16 registers), no fused multiply-add (SSE2 has none). Compiled with -ffp-contract=off.
#include <cstddef>

#include "limits_isa.hpp"

namespace bench::limits {
namespace {

using V = float __attribute__((vector_size(16)));
constexpr std::size_t ACC = 12;

#include "limits_impl.hpp"

}  // namespace

const Isa& isa_portable() {
    static const Isa isa{"portable", LANES, ACC, &mul_add_loop, nullptr, &read_loop};
    return isa;
}

}  // namespace bench::limits
