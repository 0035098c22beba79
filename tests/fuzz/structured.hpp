// The structured fuzzer's toolkit (issue 19): libFuzzer's FuzzedDataProvider turned into the
// inputs a user of the library can make -- sizes, shapes, tensors full of NaN and infinities,
// out-of-range enum values, mutated public fields -- and the one rule every call is held to:
// it returns, or it throws std::invalid_argument, std::length_error or std::out_of_range
// (PyTorch's kinds of error). Anything else -- a crash, a sanitizer report, a hang, another
// exception (std::bad_alloc included), or a broken invariant (`expect`) -- is a finding.
//
// A family is one function `void(FuzzedDataProvider&)` that builds its inputs and makes its
// calls; fuzz_structured.cpp lists the families, and the first byte of each input picks one.
// To fuzz a new part of the library (an attention module, a KV cache, a backend), write its
// family with the helpers below and add it to that list.
//
// Sizes come from a palette that keeps every accepted tensor small: dimensions are tiny
// (0..8) or huge (2^39 and up, whose products are refused by check_allocation on any
// machine), so that a run never allocates gigabytes legitimately and runs out of memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "attn/core/tensor.hpp"
#include "../message_check.hpp"

namespace fuzz {

/// A family: builds its inputs from the provider and calls the library.
struct Family {
    const char* name;
    void (*run)(FuzzedDataProvider&);
};

/// Stops the run with a message: a broken invariant is a finding, like a crash.
[[noreturn]] inline void finding(const std::string& what) {
    std::fprintf(stderr, "structured fuzzer finding: %s\n", what.c_str());
    std::abort();
}

/// Checks an invariant of a result (PyTorch's semantics), e.g. "NaN in, NaN out".
inline void expect(bool ok, const char* what) {
    if (!ok) finding(what);
}

/// Runs `call` and accepts only a return or PyTorch's kinds of error, whose message does not
/// say "expected X, got X" (message_check.hpp: it would name the wrong thing).
template <class F>
void clean(F&& call) {
    try {
        call();
    } catch (const std::invalid_argument& e) {
        if (message_check::expected_equals_got(e.what()))
            finding(std::string("a message names what it expected as what it got: ") + e.what());
    } catch (const std::length_error&) {
    } catch (const std::out_of_range&) {
    } catch (const std::bad_alloc&) {
        finding("std::bad_alloc: an allocation the library allowed failed");
    } catch (const std::exception& e) {
        finding(std::string("unexpected exception: ") + e.what());
    }
}

/// A dimension: mostly tiny, sometimes huge or at the edges of `std::size_t`.
inline std::size_t dim(FuzzedDataProvider& p) {
    static constexpr std::size_t huge[] = {
        std::size_t{1} << 39, (std::size_t{1} << 40) + 1, std::size_t{1} << 62,
        std::size_t{1} << 63, std::numeric_limits<std::size_t>::max() - 1,
        std::numeric_limits<std::size_t>::max()};
    if (p.ConsumeIntegralInRange<int>(0, 9) < 8) return p.ConsumeIntegralInRange<std::size_t>(0, 8);
    return huge[p.ConsumeIntegralInRange<std::size_t>(0, std::size(huge) - 1)];
}

/// A count for a signed parameter (`dim`, `index`, `start`, a `view` size): small, negative,
/// or at the edges of `long`.
inline long index(FuzzedDataProvider& p) {
    static constexpr long edges[] = {std::numeric_limits<long>::min(), -(1L << 40), 1L << 40,
                                     std::numeric_limits<long>::max()};
    if (p.ConsumeIntegralInRange<int>(0, 9) < 8) return p.ConsumeIntegralInRange<long>(-4, 8);
    return edges[p.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)];
}

/// A shape of rank 0..max_rank from `dim` (its product may overflow: the library must say so).
inline attn::Shape shape(FuzzedDataProvider& p, std::size_t max_rank = 4) {
    attn::Shape s(p.ConsumeIntegralInRange<std::size_t>(0, max_rank));
    for (auto& d : s) d = dim(p);
    return s;
}

/// A shape whose tensor is small enough to build (each dimension 0..4, rank 0..max_rank).
inline attn::Shape small_shape(FuzzedDataProvider& p, std::size_t max_rank = 3) {
    attn::Shape s(p.ConsumeIntegralInRange<std::size_t>(0, max_rank));
    for (auto& d : s) d = p.ConsumeIntegralInRange<std::size_t>(0, 4);
    return s;
}

/// A float32 value: ordinary, or NaN, an infinity, a signed zero, a subnormal, the largest.
inline float value(FuzzedDataProvider& p) {
    constexpr float special[] = {std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(), -0.0f, 0.0f,
                                 std::numeric_limits<float>::denorm_min(),
                                 std::numeric_limits<float>::max(),
                                 -std::numeric_limits<float>::max(), 1e-30f, 1e30f};
    if (p.ConsumeBool()) return special[p.ConsumeIntegralInRange<std::size_t>(0, std::size(special) - 1)];
    return p.ConsumeFloatingPointInRange<float>(-8.0f, 8.0f);
}

/// A float32 tensor of `s` (at most 4096 elements) filled with `value`s.
inline attn::Tensor tensor(FuzzedDataProvider& p, const attn::Shape& s) {
    attn::check_allocation("fuzz::tensor", s);
    if (attn::numel(s) > 4096) throw std::length_error("fuzz::tensor: too large to fuzz");
    attn::Tensor t = xt::zeros<float>(s);
    for (auto& v : t) v = value(p);
    return t;
}

/// A small float32 tensor of a `small_shape`.
inline attn::Tensor tensor(FuzzedDataProvider& p) { return tensor(p, small_shape(p)); }

}  // namespace fuzz
