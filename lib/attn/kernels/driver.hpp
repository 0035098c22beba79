// Internal: the pieces of attn::fast's gemm driver that fast_attention.cpp uses on operands
// it packs itself (gemm.cpp).
#pragma once

#include <cstddef>

#include "attn/kernels/arithmetic.hpp"
#include "attn/kernels/kernels.hpp"

namespace attn::fast::detail {

/// The kernels in use (see attn::fast::use_isa), in `arithmetic` (automatic: the calling
/// thread's choice, arithmetic.hpp).
const Kernels& active(Arithmetic arithmetic = Arithmetic::exact);

/// op(A) [m, k] into ceil(m / mr) panels of k rows of mr floats (zero-padded rows): panel q,
/// term p, row r at out[(q * k + p) * mr + r]. A prefix of the terms of every panel is the
/// packing of a prefix of the columns of op(A).
void pack_a_panels(const Kernels& kn, std::size_t m, std::size_t k, const float* A,
                   std::size_t lda, bool trans_a, float* out);

/// op(B) [k, n] into ceil(n / nr) panels of k rows of nr floats (zero-padded columns).
void pack_b_panels(const Kernels& kn, std::size_t k, std::size_t n, const float* B,
                   std::size_t ldb, bool trans_b, float* out);

/// C[m, n] = Ap[:, 0:k] @ Bp[0:k, :] with both operands packed (Ap with ka terms per panel,
/// Bp with kb), every element summed in term order from +0, as attn::fast::gemm (in the
/// arithmetic of `kn`).
void gemm_prepacked(const Kernels& kn, std::size_t m, std::size_t n, std::size_t k,
                    const float* Ap, std::size_t ka, const float* Bp, std::size_t kb, float* C,
                    std::size_t ldc);

}  // namespace attn::fast::detail
