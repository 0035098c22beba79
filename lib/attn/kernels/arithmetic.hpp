/// @file arithmetic.hpp
/// @brief How the fast kernels add up a product: `exact` (every multiply and every add
/// rounded on its own, the reference BLAS's bits) or `fma` (one fused multiply-add per term).
/// The choice per call, a scoped choice of one thread (`ArithmeticGuard`) and the process
/// default.
///
/// Both arithmetics sum every element of a product over its terms in the same order
/// (`c = +0; for p in 0..k-1: c = c + a[p] * b[p]`), one thread per element, so both give the
/// same bits at any thread count, on every run and with every instruction set's kernels. They
/// differ in one rounding per term: `exact` rounds the product `a[p] * b[p]` to float32, then
/// the sum; `fma` computes `c + a[p] * b[p]` with the product unrounded and rounds once
/// (IEEE 754 fusedMultiplyAdd, `std::fma`). So an `fma` result is usually a few units in the last
/// place away from an `exact` one, and is the more accurate of the two, as two machines print
/// different last digits when one fuses and the other does not. Why have both: on a core whose
/// adds and multiplies share the two FMA ports (Intel's), a separate multiply and add take two
/// issue slots where a fused one takes one, so `exact` can reach only half of the machine's peak
/// (benchmarks/cpp/limits_benchmark.cpp measures both limits); on a core with separate add and
/// multiply pipes the two cost about the same. The book's chapters print `exact` bits.
#pragma once

#include "attn/kernels/scoped_choice.hpp"

namespace attn {

/// The arithmetic of a product's terms (see the file comment). `automatic` is the calling
/// thread's `ArithmeticGuard`, else the process default (`exact` unless changed), resolved on
/// the calling thread when a call starts: an OpenMP worker thread does not see the guard of the
/// thread that started it, so a function that hands products to workers resolves first.
enum class Arithmetic {
    automatic,  ///< the thread's `ArithmeticGuard`, else `default_arithmetic()`
    exact,      ///< a multiply, then an add, each rounded: the reference BLAS's bits
    fma,        ///< one fused multiply-add per term (`std::fma`), rounded once
};

/// `"automatic"`, `"exact"` or `"fma"`.
/// @throws std::invalid_argument for a value outside the enumeration.
const char* arithmetic_name(Arithmetic arithmetic);

/// What `Arithmetic::automatic` means on the calling thread: its innermost `ArithmeticGuard`,
/// else the process default (`exact` unless `set_default_arithmetic` changed it).
Arithmetic default_arithmetic();

/// `arithmetic` itself, or for `automatic` the calling thread's `default_arithmetic()`:
/// `exact` or `fma`.
/// @throws std::invalid_argument for a value outside the enumeration.
Arithmetic resolve_arithmetic(Arithmetic arithmetic);

/// Sets the process default of `Arithmetic::automatic` (for a program that runs everything in
/// one arithmetic; set once at its start). Threads under an `ArithmeticGuard` keep theirs.
/// @throws std::invalid_argument for `automatic` or a value outside the enumeration.
void set_default_arithmetic(Arithmetic arithmetic);

/// Runs every `automatic` product of the calling thread in `arithmetic` while it lives, then
/// restores the thread's previous choice: the projections of `nn::Linear` (forward and
/// backward, and the modules' projections built on them) and the attention core's products
/// (`SDPAOptions::arithmetic`, forward and backward). In the spirit of PyTorch's
/// `torch.set_float32_matmul_precision`, but scoped and thread-local: other threads are not
/// affected. A backend without an `fma` form (the step and tiled backends of the attention
/// core) computes `exact` under the guard; asked for `fma` by name in a call's options, it
/// refuses.
class ArithmeticGuard : detail::ThreadChoiceGuard<Arithmetic> {
public:
    /// @throws std::invalid_argument for `automatic` or a value outside the enumeration.
    explicit ArithmeticGuard(Arithmetic arithmetic);
};

}  // namespace attn
