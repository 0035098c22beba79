/// @file gemm.hpp
/// @brief A fast matrix product that gives the reference BLAS's bits: `attn::fast::gemm`.
///
/// Debian's reference BLAS (netlib `sgemm.f`, the default BLAS of this project) computes
/// every element of `C = op(A) @ op(B)` (alpha = 1, beta = 0) as
/// `c = 0; for p in 0..k-1: c = c + a[i, p] * b[p, j]`, each product and each sum rounded to
/// float32 separately, no fused multiply-add. That order is why notebook 004's printed last
/// bits match. `fast::gemm` keeps exactly that order for every element, and gets its speed
/// from computing many elements at once: SIMD lanes hold different output elements (a tile
/// of `MR` rows by `NR` columns lives in registers), never different terms of one sum. The
/// operands are packed into contiguous panels, the `k` dimension is cut into blocks whose
/// partial sums are stored to `C` and loaded again (a float32 store and load is exact), and
/// the kernels are compiled with `-ffp-contract=off`, so the compiler does not fuse the
/// multiply and the add. The kernel is chosen at run time: AVX-512F, AVX2, or portable C++.
///
/// Equal to the reference BLAS bit for bit for finite inputs (tests/test_fast_path.cpp checks
/// it against the linked `sgemm`).
///
/// Each function also computes in `Arithmetic::fma` when asked (kernels/arithmetic.hpp): the
/// same order of terms, each added by one fused multiply-add, `c = std::fma(a, b, c)`; the
/// same bits at any thread count and with every instruction set's kernels
/// (tests/test_fma.cpp checks them against that loop). The default is `exact`. With infinities or NaNs in the operands the results may
/// differ where the reference skips a zero `b[p, j]` (`IF (B(L,J).NE.ZERO)` in older
/// versions) or in the sign of NaN payloads.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/kernels/arithmetic.hpp"

namespace attn::fast {

/// The name of the kernels in use: `"avx512f"`, `"avx2"` or `"portable"`. By default the
/// best this CPU runs; the environment variable `ATTN_FAST_ISA` (`avx2` or `portable`) can
/// ask for a lesser one at start-up, `use_isa` at any time.
std::string isa_name();

/// The kernels this CPU can run, best first: some of `"avx512f"`, `"avx2"` (AVX2 and FMA),
/// and always `"portable"`.
std::vector<std::string> available_isas();

/// Switches every later call to the named kernels (for tests and benchmarks: all of them
/// give the same bits). Not to be called while another thread runs a fast function; a
/// `PackedB` packed before the switch may no longer fit (`gemm_packed` then throws).
/// @throws std::invalid_argument naming the available kernels when `name` is not one.
void use_isa(const std::string& name);

/// Row-major `C[m, n] = op(A)[m, k] @ op(B)[k, n]`, each element summed over `p = 0..k-1` in
/// order, starting from `+0`, products and sums rounded separately (the reference BLAS's
/// bits, see the file comment). No `alpha`/`beta`: `C` is overwritten.
///
/// - `op(A)[i, p]` is `A[i * lda + p]`, or `A[p * lda + i]` when `trans_a`;
/// - `op(B)[p, j]` is `B[p * ldb + j]`, or `B[j * ldb + p]` when `trans_b` (a `Linear`
///   weight `[n, k]` passed as `W^T`, as PyTorch's `addmm(b, x, W.t())` does);
/// - `C[i, j]` is `C[i * ldc + j]`.
///
/// `k == 0` gives zeros. With `threads > 1` the rows of `C` are split among OpenMP threads
/// (each element is still computed by one thread, in the same order, so the bits do not
/// depend on the thread count); `threads == 0` uses OpenMP's default (`OMP_NUM_THREADS`)
/// for products of at least 8 million flops (`2 m n k`) and one thread below; inside a
/// parallel region it runs on the calling thread alone. `arithmetic`: `exact` (the default),
/// `fma`, or `automatic` (the calling thread's `ArithmeticGuard`, resolved before any worker
/// starts). A product of at most 16 rows (a decode step's `x @ W^T`) is bound by reading `B`
/// once: it is streamed, without packing all of it first, a panel of columns per thread (at
/// most 4 rows with `trans_b`: straight from the weight, its blocks transposed in registers),
/// and `threads == 0` then uses OpenMP's default when `B` holds at least 1 MB or the product
/// has 8 million flops. So is a larger product whose columns of all `k` terms fit the L2 cache
/// and whose `op(A)` fits the last-level cache (`k <= 4096`, `m k <= 2^21`): each element of
/// `C` is then summed in one pass, without blocks of terms.
/// @throws std::invalid_argument when a leading dimension is smaller than the row it holds
/// (`lda < k` without `trans_a`, `lda < m` with it; likewise `ldb`, and `ldc < n`), naming
/// the expected and actual values.
void gemm(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda,
          bool trans_a, const float* B, std::size_t ldb, bool trans_b, float* C,
          std::size_t ldc, int threads = 0, Arithmetic arithmetic = Arithmetic::exact);

/// One right operand of `gemm_multi` and where its product goes: `C[m, n] = op(A) @ op(B)`
/// (`op(B)[p, j]` is `B[p * ldb + j]`, or `B[j * ldb + p]` when `trans_b`), then, when `bias` is
/// not null, `C[i, j] + bias[j]` (a separate addition after the finished sum, as
/// `nn::Linear`'s `x @ W^T + b` makes it). float32, row-major, `C[i, j]` at `C[i * ldc + j]`.
struct GemmRight {
    const float* B = nullptr;     ///< the right operand
    std::size_t ldb = 0;          ///< its row stride
    bool trans_b = false;         ///< `B` holds `op(B)^T` (a `Linear` weight `[n, k]`)
    std::size_t n = 0;            ///< columns of `op(B)` and of `C`
    float* C = nullptr;           ///< the result `[m, n]`
    std::size_t ldc = 0;          ///< its row stride
    const float* bias = nullptr;  ///< `[n]`, or null
};

/// Several products with one left operand, `C_r = op(A) @ op(B_r) (+ bias_r)` for
/// `r < count`, each element as `gemm` computes it (the reference BLAS's bits). The blocks of
/// `op(A)` are packed once for all the right operands (the queries, keys and values of an
/// attention layer all project the same `x`), and one team of threads packs the right operands
/// and computes every product; `threads` and `arithmetic` as in `gemm`, counting the flops of
/// all products.
/// @throws std::invalid_argument as `gemm` does for `lda`, and for a right operand whose `ldb`
/// or `ldc` is too small.
void gemm_multi(std::size_t m, std::size_t k, const float* A, std::size_t lda, bool trans_a,
                const GemmRight* rights, std::size_t count, int threads = 0,
                Arithmetic arithmetic = Arithmetic::exact);

/// `op(B)` `[k, n]` packed once for several products with the same right operand (the
/// keys or values of one head): column panels of the kernel's width `NR`, each `k` rows of
/// `NR` floats, the last panel padded with zeros. Made by `pack_b`, used by `gemm_packed`;
/// a prefix of the rows (`k' <= k`) is a valid operand too.
struct PackedB {
    std::vector<float> data;  ///< `ceil(n / NR)` panels of `k * NR` floats
    std::size_t k = 0;        ///< rows of `op(B)`
    std::size_t n = 0;        ///< columns of `op(B)`
    std::size_t nr = 0;       ///< panel width of the kernel it was packed for
};

/// Packs `op(B)` (`[k, n]`, as in `gemm`) into `out`, reusing its storage.
/// @throws std::invalid_argument as `gemm` does for `ldb`.
void pack_b(std::size_t k, std::size_t n, const float* B, std::size_t ldb, bool trans_b,
            PackedB& out);

/// `C[m, n'] = op(A)[m, k'] @ B[0:k', 0:n']` with a packed `B`, `k' <= B.k`, `n' <= B.n`,
/// in the same order as `gemm` (so the same bits as the reference BLAS on those
/// sub-matrices, or, with `arithmetic` fma, as `gemm` in fma). Runs on the calling thread.
/// @throws std::invalid_argument when `k' > B.k`, `n' > B.n`, `B` was packed for another
/// kernel, or a leading dimension is too small.
void gemm_packed(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda,
                 bool trans_a, const PackedB& B, float* C, std::size_t ldc,
                 Arithmetic arithmetic = Arithmetic::exact);

}  // namespace attn::fast
