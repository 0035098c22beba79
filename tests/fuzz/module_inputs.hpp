// What the attention modules' fuzz families share (fuzz_modules.cpp, fuzz_module_edges.cpp):
// the palettes of sizes, positions and probabilities a caller could pass, and bitwise equality.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "attn/core/tensor.hpp"
#include "structured.hpp"

namespace fuzz::modules {

using attn::Shape;
using attn::Tensor;

// A small size, or (rarely) an extreme one: every accepted tensor stays tiny.
inline std::size_t size(FuzzedDataProvider& p, std::size_t max = 6) {
    switch (p.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return std::size_t{1} << 40;
        case 1: return SIZE_MAX;
        default: return p.ConsumeIntegralInRange<std::size_t>(0, max);
    }
}

// A position or a window: small, near 2^62, or past it.
inline std::size_t position(FuzzedDataProvider& p) {
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: return (std::size_t{1} << 62) - 1;
        case 1: return std::size_t{1} << 63;
        case 2: return SIZE_MAX;
        default: return p.ConsumeIntegralInRange<std::size_t>(0, 12);
    }
}

inline double probability(FuzzedDataProvider& p) {
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0: return std::nan("");
        case 1: return -0.5;
        case 2: return 1.5;
        case 3: return 1.0;
        default: return p.ConsumeBool() ? 0.0 : 0.25;
    }
}

// An enum value a caller could pass by a cast, valid or not.
template <class E>
E any_enum(FuzzedDataProvider& p, int valid) {
    return static_cast<E>(p.ConsumeIntegralInRange<int>(-1, valid));
}

// Two tensors equal bit for bit, NaN where the other has NaN.
inline bool same_bits(const Tensor& a, const Tensor& b) {
    if (attn::shape_of(a) != attn::shape_of(b)) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return false;
        } else if (std::memcmp(&x, &y, sizeof x) != 0) {
            return false;
        }
    }
    return true;
}

// The families of empty, zero and half-changed inputs (fuzz_module_edges.cpp).
void empty(FuzzedDataProvider& p);
void backward(FuzzedDataProvider& p);
void changed(FuzzedDataProvider& p);
void layouts(FuzzedDataProvider& p);
void torch_mha(FuzzedDataProvider& p);

}  // namespace fuzz::modules
