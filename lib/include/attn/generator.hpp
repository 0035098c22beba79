/// @file generator.hpp
/// @brief A CPU random generator that draws the same numbers as PyTorch's default generator.
///
/// PyTorch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded by `init_genrand`;
/// every distribution is built from its 32-bit draws (or 64-bit draws made of two 32-bit
/// ones) in a fixed way. Reproducing those constructions draw for draw is what lets the
/// seeded tensors of the book come out identical. The facts are collected in
/// `../shared/notes/pytorch-cpu-rng.md` and checked against recorded oracle streams
/// (`data/oracle/`, written by `tools/oracle/`).
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "attn/tensor.hpp"

namespace attn {

/// PyTorch's `CPUGeneratorImpl`: MT19937 plus the cached second Box-Muller sample.
///
/// Source: aten/src/ATen/CPUGeneratorImpl.cpp (`random`, `random64`,
/// `next_double_normal_sample`).
class Generator {
public:
    /// PyTorch's default seed when nobody calls `manual_seed` (`default_rng_seed_val`).
    static constexpr std::uint64_t default_seed = 67280421310721ULL;

    /// A generator seeded with `seed` (only its low 32 bits reach MT19937, as in PyTorch).
    explicit Generator(std::uint64_t seed = default_seed);

    /// `torch.manual_seed(seed)`: re-seeds MT19937 and forgets the cached normal sample.
    void manual_seed(std::uint64_t seed);

    /// One 32-bit draw: one MT19937 output.
    std::uint32_t random();

    /// One 64-bit draw: two 32-bit draws `a`, then `b`, as `(a << 32) | b`.
    std::uint64_t random64();

    /// A double in [0, 1) from one 64-bit draw: `(d & (2^53 - 1)) * 2^-53`
    /// (`at::uniform_real_distribution<double>(0, 1)`).
    double uniform_double();

    /// A float in [0, 1) from one 32-bit draw: `(r & (2^24 - 1)) * 2^-24`.
    float uniform_float();

    /// The second Box-Muller sample cached by the scalar `normal_` path, if any.
    std::optional<double> next_double_normal_sample;

    /// How many 32-bit draws this generator has made since it was last seeded: a reader can
    /// see why, for example, notebook 004 In [51] is "the fourth dropout after the seed".
    std::uint64_t draws_since_seed() const { return draws_; }

private:
    std::mt19937 engine_;
    std::uint64_t draws_ = 0;
};

/// The process-wide default generator, as `torch.default_generator`.
Generator& default_generator();

/// `torch.manual_seed(seed)` on the default generator.
void manual_seed(std::uint64_t seed);

/// `torch.rand(*size)`: float32 uniforms in [0, 1), one 32-bit draw per element, row-major.
Tensor rand(const Shape& size, Generator& gen = default_generator());

/// `tensor.uniform_(from, to)`: per element one 32-bit draw `r`,
/// `x = (r & 0xFFFFFF) * 2^-24`, result `x * (to - from) + from` as PyTorch computes it.
/// @throws std::invalid_argument when `from > to`.
Tensor& uniform_(Tensor& t, double from, double to, Generator& gen = default_generator());

/// `torch.randint(low, high, size)`: per element one 32-bit draw `r`, `low + r % (high - low)`
/// (the path PyTorch takes when `high - low < 2^32`).
/// @throws std::invalid_argument when `low >= high` or `high - low >= 2^32`.
LongTensor randint(std::int64_t low, std::int64_t high, const Shape& size,
                   Generator& gen = default_generator());

/// `torch.randint(high, size)`: `randint(0, high, size)`.
LongTensor randint(std::int64_t high, const Shape& size, Generator& gen = default_generator());

/// `torch.randn(*size)`: standard normal float32 samples, `normal_(0, 1)`.
Tensor randn(const Shape& size, Generator& gen = default_generator());

/// `tensor.normal_(mean, std)`, both of PyTorch's CPU paths:
/// - fewer than 16 elements (or a tensor PyTorch would not treat as contiguous): per element
///   a double Box-Muller sample, the second sample cached in the generator;
/// - 16 or more: all elements first filled with float uniforms, then transformed in blocks of
///   16 (`normal_fill_16`); a ragged tail redraws the last 16 elements and transforms them
///   again. PyTorch's AVX2 build vectorises this block transform, which can change the last
///   bit: compare with a tolerance of a few ulp.
/// @throws std::invalid_argument when `std < 0`.
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0,
                Generator& gen = default_generator());

}  // namespace attn
