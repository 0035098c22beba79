/// @file generator.hpp
/// @brief A CPU random generator that draws the same numbers as PyTorch's default generator.
///
/// PyTorch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded by `init_genrand`;
/// every distribution is built from its 32-bit draws (or 64-bit draws made of two 32-bit
/// ones) in a fixed way. Reproducing those constructions draw for draw is what lets the
/// seeded tensors of the book come out identical. The facts are collected in
/// `data/sources/notes/pytorch-cpu-rng.md` and checked bit for bit against streams recorded
/// from PyTorch 1.13.1 (`data/oracle/generator/`, written by
/// `tools/oracle/generator_streams.py`; tested in `tests/test_generator.cpp`).
///
/// The last bit of a float result also depends on how PyTorch's kernels were compiled: its
/// x86 kernels are built with `-mavx2 -mfma` and GCC fuses `a * b + c` into one fused
/// multiply-add. The library reproduces those fusions explicitly (`std::fma`), so its results
/// are the same whatever compiler flags this project uses.
#pragma once

#include <cstdint>
#include <optional>
#include <array>

#include "attn/core/tensor.hpp"

namespace attn {

/// PyTorch's `CPUGeneratorImpl`: MT19937 plus the cached second Box-Muller sample.
///
/// Source: aten/src/ATen/CPUGeneratorImpl.cpp (`random`, `random64`, `set_current_seed`,
/// `next_double_normal_sample`) and aten/src/ATen/core/MT19937RNGEngine.h (the engine, which
/// is the reference MT19937, i.e. `std::mt19937`; written here with 32-bit words and a
/// vectorisable twist: the same numbers, several times faster in bulk).
class Generator {
public:
    /// PyTorch's default seed when nobody calls `manual_seed` (`default_rng_seed_val`).
    static constexpr std::uint64_t default_seed = 67280421310721ULL;

    /// A generator seeded with `seed` (only its low 32 bits reach MT19937, as in PyTorch).
    explicit Generator(std::uint64_t seed = default_seed);

    /// `torch.manual_seed(seed)`: re-seeds MT19937 with the low 32 bits of `seed`, forgets the
    /// cached normal sample and resets `draws_since_seed()` to 0.
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

    /// The second Box-Muller sample cached by the scalar `normal_` path, if any: the raw
    /// `r * sin(theta)` of the last pair, before any mean/std is applied (the next scalar
    /// sample, whatever its mean and std, is `cached * std + mean`). Only the scalar path
    /// reads or writes it; the >= 16-element path leaves it alone.
    std::optional<double> next_double_normal_sample;

    /// `n` 32-bit draws into `out`: the same numbers as `n` calls of `random()`, tempered a
    /// block of the state at a time (how `rand` and `normal_` fill a tensor).
    void random_n(std::uint32_t* out, std::size_t n);

    /// How many 32-bit draws this generator has made since it was last seeded: a reader can
    /// see why, for example, notebook 004 In [51] is "the fourth dropout after the seed".
    std::uint64_t draws_since_seed() const { return draws_; }

private:
    // MT19937 (Matsumoto and Nishimura 1998; what std::mt19937 computes), its words 32 bits
    // wide: the state, and the next word to temper (624: twist first).
    static constexpr std::size_t kStateWords = 624;
    std::array<std::uint32_t, kStateWords> state_{};
    std::size_t next_ = kStateWords;
    std::uint64_t draws_ = 0;
};

/// The process-wide default generator, as `torch.default_generator`.
Generator& default_generator();

/// `torch.manual_seed(seed)` on the default generator.
void manual_seed(std::uint64_t seed);

/// `torch.rand(*size)`: float32 uniforms in [0, 1), one 32-bit draw per element, row-major
/// (`uniform_(0, 1)`). Returns a tensor of shape `size`.
/// @throws std::length_error (nothing drawn) when a tensor of `size` cannot be allocated
/// (`check_allocation`).
Tensor rand(const Shape& size, Generator& gen = default_generator());

/// `tensor.uniform_(from, to)`, in place, any shape, row-major: per element one 32-bit draw
/// `r`, `x = (r & 0xFFFFFF) * 2^-24`, result `fma(x, float(to) - float(from), float(from))`
/// in float32. `from` and `to` are cast to float first (`uniform_kernel`), the arithmetic is
/// float (`dist_acctype<float>` is float) and PyTorch's compiled kernel fuses the
/// multiply-add: with separate rounding a third to a half of the values of a bound such as
/// `1/sqrt(768)` would be 1 ulp off. Sources: native/cpu/DistributionTemplates.h
/// (`uniform_kernel`), core/TransformationHelper.h (`uniform_real`).
/// @throws std::invalid_argument when `from` or `to` is NaN or outside the float32 range,
///         when `from > to`, or when `to - from` exceeds the float32 range (`uniform_impl_`);
///         nothing is drawn then.
Tensor& uniform_(Tensor& t, double from, double to, Generator& gen = default_generator());

/// `torch.randint(low, high, size)`: an int64 tensor of shape `size`, per element
/// `low + r % (high - low)` where `r` is one 32-bit draw when `high - low < 2^32` and one
/// 64-bit draw otherwise (`uniform_int_from_to_distribution`, core/DistributionsHelper.h;
/// the modulo keeps PyTorch's slight bias towards small values).
/// @throws std::invalid_argument when `low >= high` (nothing is drawn then);
/// std::length_error when a tensor of `size` cannot be allocated (`check_allocation`).
LongTensor randint(std::int64_t low, std::int64_t high, const Shape& size,
                   Generator& gen = default_generator());

/// `torch.randint(high, size)`: `randint(0, high, size)`.
/// @throws std::invalid_argument when `high <= 0`.
LongTensor randint(std::int64_t high, const Shape& size, Generator& gen = default_generator());

/// `torch.empty((), dtype=torch.int64).random_()`: one int64 in [0, 2^63) from one 64-bit
/// draw, `random64() % 2^63` (its top bit dropped). The draw a `DataLoader` makes for its
/// base seed at every `iter(loader)`, and its `RandomSampler` for the seed of its own
/// generator (torch/utils/data/dataloader.py `_BaseDataLoaderIter.__init__`, sampler.py
/// `RandomSampler.__iter__`). Source: native/cpu/DistributionTemplates.h (`random_kernel`),
/// core/DistributionsHelper.h (`uniform_int_distribution<int64_t>`: one `random64()`),
/// core/TransformationHelper.h (`uniform_int`: `val % (INT64_MAX + 1)`).
std::int64_t random_int64(Generator& gen = default_generator());

/// `torch.randperm(n, generator=gen)` on the CPU: the int64 tensor `[n]` holding 0..n-1 in
/// PyTorch's shuffled order. PyTorch 1.13's `randperm_cpu` (native/TensorFactories.cpp):
/// fill `r[i] = i`, then for `i` in 0..n-2 draw `z = random() % (n - i)` (one 32-bit draw)
/// and swap `r[i]` with `r[i + z]`: `n - 1` draws (none for n <= 1), the modulo's slight bias
/// kept. PyTorch 2.x does the same for n < (2^32 - 1) / 20 = 214,748,364 and shuffles larger n
/// otherwise (an inside-out Fisher-Yates on 64-bit draws); this is 1.13's order for every n.
/// @throws std::length_error (nothing drawn) when a tensor of `[n]` int64 cannot be allocated
/// (`check_allocation`).
LongTensor randperm(std::size_t n, Generator& gen = default_generator());

/// `torch.randn(*size)`: standard normal float32 samples of shape `size`, `normal_(0, 1)`.
/// @throws std::length_error (nothing drawn) when a tensor of `size` cannot be allocated.
Tensor randn(const Shape& size, Generator& gen = default_generator());

/// `tensor.normal_(mean, std)`, in place, any shape, row-major; both of PyTorch's CPU paths
/// (`normal_kernel`, aten/src/ATen/native/cpu/DistributionTemplates.h):
/// - fewer than 16 elements: per element `at::normal_distribution<double>`: if a sample is
///   cached, use it (and clear the cache); otherwise `u1`, `u2` = two doubles (two 64-bit
///   draws), `r = sqrt(-2 log(1 - u2))`, `theta = 2 pi u1`, cache `r sin theta`, use
///   `r cos theta`; the element is `float(sample * std + mean)` computed in double.
///   (PyTorch 1.13 writes `log(1 - u2)`; later versions `log1p(-u2)`, which changes the
///   cached doubles.)
/// - 16 or more: all elements first filled with float uniforms (one 32-bit draw each), then
///   transformed in blocks of 16: for j < 8, `u1 = 1 - x[j]` gives the radius
///   `sqrt(-2 log u1)` and `u2 = x[j + 8]` the angle `2 pi u2`; `x[j] = r cos * std + mean`,
///   `x[j + 8] = r sin * std + mean`, all in float. If the size is not a multiple of 16 the
///   last 16 elements are redrawn (16 more draws) and transformed again as one block. The
///   log, sin and cos are those of PyTorch's x86 AVX2 kernel (`normal_fill_16_AVX2`, Cephes
///   polynomials from avx_mathfun.h), replayed lane by lane with the same fused
///   multiply-adds: bit-exact against PyTorch whenever it dispatches to that kernel (x86
///   with "CPU capability usage: AVX2", as Debian's python3-torch). Where it dispatches to
///   another kernel (an AVX512 or default x86 kernel, ARM) PyTorch 1.13 runs the plain
///   `normal_fill_16` with libm `logf`/`cosf`/`sinf`, which differs from this by up to
///   ~1.6e-6 absolute (thousands of ulp near zero); those prints match only to ~5 decimals.
/// @throws std::invalid_argument when `std` is negative or NaN (nothing is drawn then).
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0,
                Generator& gen = default_generator());

/// One sample of `at::exponential_distribution<double>(lambd)` (core/DistributionsHelper.h,
/// core/TransformationHelper.h `exponential`, PyTorch 1.13): one 64-bit draw `u` =
/// `uniform_double()`, the sample `-1.0 / lambd * std::log(1.0 - u)` in double, in that order
/// of operations (PyTorch 1.13 writes `log(1 - u)`; `log1p(-u)` or float arithmetic give other
/// last bits). What `exponential_` computes per element, and the whole of a float64 tensor's
/// `exponential_`. No argument check (see `exponential_`): `lambd = 0` gives `inf`.
double exponential_double(double lambd, Generator& gen = default_generator());

/// `tensor.exponential_(lambd)`, in place, any shape, row-major, float32: per element one 64-bit
/// draw, `float(exponential_double(lambd))` (the default CPU `exponential_kernel` of
/// native/cpu/DistributionTemplates.h, PyTorch 1.13 built without MKL, as Debian's: computed in
/// double, then cast). Checked bit for bit against Debian's torch 1.13
/// (data/oracle/decoding.json). `torch.multinomial` draws its exponentials so.
/// @throws std::invalid_argument when `lambd` is negative or NaN (`exponential_ expects lambda
/// >= 0.0`); nothing is drawn then.
Tensor& exponential_(Tensor& t, double lambd = 1.0, Generator& gen = default_generator());

}  // namespace attn
