// Internal: the per-instruction-set kernels behind attn::fast (gemm.hpp), in two arithmetics
// (arithmetic.hpp). Each kernels_<isa>.cpp compiles kernel_impl.hpp twice (kernel_isa.hpp),
// exact and with fused multiply-adds, each with its own register tile, under the instruction
// set's -m flags and -ffp-contract=off; gemm.cpp picks the instruction set at run time and a
// call picks the arithmetic.
#pragma once

#include <cstddef>

#include "attn/kernels/fused_attention.hpp"

namespace attn::fast::detail {

/// One instruction set's kernels in one arithmetic.
struct Kernels {
    const char* name;  ///< "avx512f", "avx2", "portable"
    bool fused;        ///< the products' terms by fused multiply-adds (Arithmetic::fma)
    std::size_t mr;    ///< rows of the register tile (rows of a packed A panel)
    std::size_t nr;    ///< columns of the register tile (width of a packed B panel)
    /// C[rows, cols] (rows <= mr, cols <= nr, row stride ldc) = (accumulate ? C : +0) plus,
    /// for p = 0..k-1 in order, Ap[p * mr + i] * Bp[p * nr + j], each product and sum rounded
    /// separately (or, when `fused`, each term added by one fused multiply-add); then, when
    /// `bias` is not null, + bias[j] (rounded once more, as a separate addition after the
    /// product would be).
    void (*micro)(std::size_t k, const float* Ap, const float* Bp, float* C, std::size_t ldc,
                  std::size_t rows, std::size_t cols, bool accumulate, const float* bias);
    /// One panel of op(A): rows [0, rows) (rows <= mr) and terms [0, kc) into
    /// out[p * mr + r], rows past `rows` zero. `A` points at op(A)[0, 0]: op(A)[r, p] is
    /// A[r * lda + p], or A[p * lda + r] when trans_a.
    void (*pack_a)(std::size_t rows, std::size_t kc, const float* A, std::size_t lda,
                   bool trans_a, float* out);
    /// One panel of op(B): terms [0, kc) and columns [0, cols) (cols <= nr) into
    /// out[p * nr + c], columns past `cols` zero. op(B)[p, c] is B[p * ldb + c], or
    /// B[c * ldb + p] when trans_b.
    void (*pack_b)(std::size_t kc, std::size_t cols, const float* B, std::size_t ldb,
                   bool trans_b, float* out);
    /// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (a copy, no arithmetic).
    void (*transpose)(std::size_t rows, std::size_t cols, const float* src, std::size_t lds,
                      float* dst, std::size_t ldd);
    /// The softmax of one block in place (see SoftmaxBlock): scale, bias, mask, then
    /// PyTorch's softmax per query, every float operation as the step-by-step path.
    void (*softmax_block)(float* St, const SoftmaxBlock& block);
    /// One query's softmax in place, its `block.rows` scores in a row (`x[r]` against key
    /// `block.j0 + r`), when no key of the block is hidden (no `allow`, no `bias`, no band
    /// within it): the bits of `softmax_block`'s lane 0, `row_max` and `row_sum` one float each.
    void (*softmax_row)(float* x, const SoftmaxBlock& block);
    /// Sleef_expf_u10 of x[0..n) in place.
    void (*exp)(float* x, std::size_t n);
    /// Lanes of one vector.
    std::size_t w;
    /// C[i, c] (i < rows <= kSkinnyRows, c < cols <= w, row stride ldc) = (+0 plus, for
    /// p = 0..k-1 in order, A[i * lda + p] * B[c * ldb + p], each product and sum rounded
    /// separately), then + bias[c] when `bias` is not null: rows of x @ W^T for a weight
    /// B [n, k] read in place, w columns at a time (transposed in registers).
    void (*skinny_nt)(std::size_t rows, std::size_t cols, std::size_t k, const float* A,
                      std::size_t lda, const float* B, std::size_t ldb, float* C, std::size_t ldc,
                      const float* bias);
    /// C[i, d] (i < rows <= kSkinnyRows, d < cols, row stride ldc) = +0 plus, for p = 0..k-1 in
    /// order, A[p * lda + i] * B[p * ldb + d], each term by the arithmetic's multiply-add (the
    /// bits of `micro` on the same terms): a few queries' attention weights (one key per row of
    /// A, as a softmax block holds them) times the values B [k, cols], read in place.
    void (*skinny_nn)(std::size_t rows, std::size_t cols, std::size_t k, const float* A,
                      std::size_t lda, const float* B, std::size_t ldb, float* C, std::size_t ldc);
};

/// The most rows one `skinny_nt` call computes.
constexpr std::size_t kSkinnyRows = 4;

/// One instruction set's kernels in both arithmetics (arithmetic.hpp).
struct IsaKernels {
    const Kernels& exact;  ///< Arithmetic::exact
    const Kernels& fused;  ///< Arithmetic::fma
};

const IsaKernels& kernels_avx512();    ///< needs AVX-512F
const IsaKernels& kernels_avx2();      ///< needs AVX2 and FMA (SLEEF's avx2 exp uses FMA)
const IsaKernels& kernels_portable();  ///< any x86-64 (the fused kernels: fmaf per lane, slow)

}  // namespace attn::fast::detail
