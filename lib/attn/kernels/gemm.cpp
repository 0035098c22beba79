// attn::fast::gemm and friends (gemm.hpp): packing, cache blocking, threads and the choice of
// kernel. The arithmetic itself is in kernel_impl.hpp.
//
// Loop order (for each block of MC rows of C, which one thread owns):
//   for each block of KC terms, in order          (partial sums stored in C between blocks)
//     pack the MC x KC block of op(A)              (MR-row panels, zero-padded)
//     for each NR-column panel of the packed B     (KC x NR, stays in L1)
//       for each MR-row panel of the packed A      (the kernel: an MR x NR tile in registers)
// Every element of C is computed by one kernel call per KC block, in block order, so the
// order of its terms is 0, 1, ..., k-1 whatever the blocking or the thread count.
#include "attn/kernels/gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <omp.h>

#include "attn/kernels/kernels.hpp"

namespace attn::fast {

namespace {

using detail::Kernels;

constexpr std::size_t KC = 256;  // terms per block: a KC x NR panel of B is 32 KiB (AVX-512)
constexpr std::size_t MC = 128;  // rows per block: a MC x KC block of A is 128 KiB (L2)

const Kernels& choose_kernels() {
    const char* want = std::getenv("ATTN_FAST_ISA");
    const std::string w = want ? want : "";
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (w == "portable") return detail::kernels_portable();
    if (w == "avx2" && avx2) return detail::kernels_avx2();
    if (avx512) return detail::kernels_avx512();
    if (avx2) return detail::kernels_avx2();
    return detail::kernels_portable();
}

std::atomic<const Kernels*>& current() {
    static std::atomic<const Kernels*> k{&choose_kernels()};
    return k;
}

const Kernels& kernels() { return *current().load(std::memory_order_relaxed); }

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// The first 64-byte aligned float at or after p (buffers are allocated 16 floats larger).
float* align64(float* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<float*>((a + 63) & ~std::uintptr_t{63});
}
const float* align64(const float* p) { return align64(const_cast<float*>(p)); }

void check_ld(const char* where, const char* name, std::size_t ld, std::size_t need) {
    if (ld < need) {
        throw std::invalid_argument(std::string(where) + ": expected " + name + " >= " +
                                    std::to_string(need) + " (the length of a stored row), got " +
                                    std::to_string(ld));
    }
}

// Packs rows [i0, i0 + mc) and terms [p0, p0 + kc) of op(A) into MR-row panels:
// panel q holds, for p = 0..kc-1, the MR values op(A)[i0 + q*MR + r, p0 + p] (0 past m).
void pack_a(const float* A, std::size_t lda, bool trans_a, std::size_t m, std::size_t i0,
            std::size_t mc, std::size_t p0, std::size_t kc, std::size_t mr, float* out) {
    for (std::size_t q = 0; q * mr < mc; ++q) {
        float* dst = out + q * kc * mr;
        for (std::size_t r = 0; r < mr; ++r) {
            const std::size_t i = i0 + q * mr + r;
            if (i >= m || q * mr + r >= mc) {
                for (std::size_t p = 0; p < kc; ++p) dst[p * mr + r] = 0.0f;
            } else if (!trans_a) {
                const float* src = A + i * lda + p0;
                for (std::size_t p = 0; p < kc; ++p) dst[p * mr + r] = src[p];
            } else {
                const float* src = A + p0 * lda + i;
                for (std::size_t p = 0; p < kc; ++p) dst[p * mr + r] = src[p * lda];
            }
        }
    }
}

// Scratch for packed A blocks, one per thread, kept between calls.
float* a_scratch(std::size_t floats) {
    thread_local std::vector<float> buf;
    if (buf.size() < floats + 16) buf.resize(floats + 16);
    return align64(buf.data());
}

// C rows [i0, i0 + mc) of op(A) @ Bp, Bp packed with `kb` rows per panel (of which the first
// k are used) and n columns.
void gemm_rows(const Kernels& kn, std::size_t m, std::size_t n, std::size_t k,
               const float* A, std::size_t lda, bool trans_a, const float* Bp, std::size_t kb,
               float* C, std::size_t ldc, std::size_t i0, std::size_t mc) {
    const std::size_t mr = kn.mr, nr = kn.nr;
    float* Ap = a_scratch(round_up(mc, mr) * std::min(k, KC));
    for (std::size_t p0 = 0; p0 < k; p0 += KC) {
        const std::size_t kc = std::min(KC, k - p0);
        pack_a(A, lda, trans_a, m, i0, mc, p0, kc, mr, Ap);
        for (std::size_t j0 = 0; j0 < n; j0 += nr) {
            const float* Bpanel = Bp + (j0 / nr) * kb * nr + p0 * nr;
            const std::size_t cols = std::min(nr, n - j0);
            for (std::size_t r0 = 0; r0 < mc; r0 += mr) {
                const std::size_t rows = std::min(mr, mc - r0);
                kn.micro(kc, Ap + (r0 / mr) * kc * mr, Bpanel, C + (i0 + r0) * ldc + j0, ldc,
                         rows, cols, p0 > 0);
            }
        }
    }
}

void zero_rows(float* C, std::size_t ldc, std::size_t m, std::size_t n) {
    for (std::size_t i = 0; i < m; ++i) std::fill_n(C + i * ldc, n, 0.0f);
}

}  // namespace

namespace detail {

const Kernels& active() { return kernels(); }

void pack_a_panels(const Kernels& kn, std::size_t m, std::size_t k, const float* A,
                   std::size_t lda, bool trans_a, float* out) {
    pack_a(A, lda, trans_a, m, 0, m, 0, k, kn.mr, out);
}

void pack_b_panels(const Kernels& kn, std::size_t k, std::size_t n, const float* B,
                   std::size_t ldb, bool trans_b, float* out) {
    const std::size_t nr = kn.nr;
    for (std::size_t q = 0; q * nr < n; ++q) {
        float* dst = out + q * k * nr;
        const std::size_t j0 = q * nr, cols = std::min(nr, n - j0);
        for (std::size_t c = 0; c < nr; ++c) {
            if (c >= cols) {
                for (std::size_t p = 0; p < k; ++p) dst[p * nr + c] = 0.0f;
            } else if (trans_b) {
                const float* src = B + (j0 + c) * ldb;
                for (std::size_t p = 0; p < k; ++p) dst[p * nr + c] = src[p];
            } else {
                for (std::size_t p = 0; p < k; ++p) dst[p * nr + c] = B[p * ldb + j0 + c];
            }
        }
    }
}

void gemm_prepacked(const Kernels& kn, std::size_t m, std::size_t n, std::size_t k,
                    const float* Ap, std::size_t ka, const float* Bp, std::size_t kb, float* C,
                    std::size_t ldc) {
    const std::size_t mr = kn.mr, nr = kn.nr;
    if (k == 0) return zero_rows(C, ldc, m, n);
    for (std::size_t j0 = 0; j0 < n; j0 += nr) {
        const std::size_t cols = std::min(nr, n - j0);
        for (std::size_t p0 = 0; p0 < k; p0 += KC) {
            const std::size_t kc = std::min(KC, k - p0);
            for (std::size_t r0 = 0; r0 < m; r0 += mr)
                kn.micro(kc, Ap + (r0 / mr) * ka * mr + p0 * mr, Bp + (j0 / nr) * kb * nr + p0 * nr,
                         C + r0 * ldc + j0, ldc, std::min(mr, m - r0), cols, p0 > 0);
        }
    }
}

}  // namespace detail

std::string isa_name() { return kernels().name; }

std::vector<std::string> available_isas() {
    __builtin_cpu_init();
    std::vector<std::string> names;
    if (__builtin_cpu_supports("avx512f")) names.push_back("avx512f");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) names.push_back("avx2");
    names.push_back("portable");
    return names;
}

void use_isa(const std::string& name) {
    const auto names = available_isas();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument("fast::use_isa: expected one of " + list + ", got \"" +
                                    name + "\"");
    }
    const Kernels& k = name == "avx512f" ? detail::kernels_avx512()
                       : name == "avx2"  ? detail::kernels_avx2()
                                         : detail::kernels_portable();
    current().store(&k);
}

void pack_b(std::size_t k, std::size_t n, const float* B, std::size_t ldb, bool trans_b,
            PackedB& out) {
    check_ld("fast::pack_b", "ldb", ldb, trans_b ? k : n);
    const std::size_t nr = kernels().nr;
    const std::size_t panels = (n + nr - 1) / nr;
    out.k = k;
    out.n = n;
    out.nr = nr;
    if (out.data.size() < panels * k * nr + 16) out.data.resize(panels * k * nr + 16);
    float* base = align64(out.data.data());
    for (std::size_t q = 0; q < panels; ++q) {
        float* dst = base + q * k * nr;
        const std::size_t j0 = q * nr, cols = std::min(nr, n - j0);
        if (!trans_b) {
            for (std::size_t p = 0; p < k; ++p) {
                std::copy_n(B + p * ldb + j0, cols, dst + p * nr);
                std::fill(dst + p * nr + cols, dst + (p + 1) * nr, 0.0f);
            }
        } else {
            for (std::size_t c = 0; c < nr; ++c) {
                if (c < cols) {
                    const float* src = B + (j0 + c) * ldb;
                    for (std::size_t p = 0; p < k; ++p) dst[p * nr + c] = src[p];
                } else {
                    for (std::size_t p = 0; p < k; ++p) dst[p * nr + c] = 0.0f;
                }
            }
        }
    }
}

void gemm_packed(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda,
                 bool trans_a, const PackedB& B, float* C, std::size_t ldc) {
    const Kernels& kn = kernels();
    if (B.nr != kn.nr)
        throw std::invalid_argument("fast::gemm_packed: B was packed for panels of " +
                                    std::to_string(B.nr) + " columns, expected " +
                                    std::to_string(kn.nr));
    if (k > B.k || n > B.n)
        throw std::invalid_argument("fast::gemm_packed: expected op(B) of at most [" +
                                    std::to_string(B.k) + ", " + std::to_string(B.n) +
                                    "], got [" + std::to_string(k) + ", " + std::to_string(n) +
                                    "]");
    // The fields are public: the storage must hold what they describe before it is read.
    const std::size_t panels = (B.n + B.nr - 1) / std::max<std::size_t>(B.nr, 1);
    std::size_t need = 0;
    if (__builtin_mul_overflow(panels, B.k, &need) || __builtin_mul_overflow(need, B.nr, &need) ||
        B.data.size() < need + 16)
        throw std::invalid_argument("fast::gemm_packed: B holds " + std::to_string(B.data.size()) +
                                    " floats, fewer than its k = " + std::to_string(B.k) + ", n = " +
                                    std::to_string(B.n) + " need (its fields were changed)");
    check_ld("fast::gemm_packed", "lda", lda, trans_a ? m : k);
    check_ld("fast::gemm_packed", "ldc", ldc, n);
    if (m == 0 || n == 0) return;
    if (k == 0) return zero_rows(C, ldc, m, n);
    const float* Bp = align64(B.data.data());
    for (std::size_t i0 = 0; i0 < m; i0 += MC)
        gemm_rows(kn, m, n, k, A, lda, trans_a, Bp, B.k, C, ldc, i0, std::min(MC, m - i0));
}

void gemm(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda,
          bool trans_a, const float* B, std::size_t ldb, bool trans_b, float* C,
          std::size_t ldc, int threads) {
    check_ld("fast::gemm", "lda", lda, trans_a ? m : k);
    check_ld("fast::gemm", "ldb", ldb, trans_b ? k : n);
    check_ld("fast::gemm", "ldc", ldc, n);
    if (m == 0 || n == 0) return;
    if (k == 0) return zero_rows(C, ldc, m, n);
    const Kernels& kn = kernels();
    thread_local PackedB packed;
    pack_b(k, n, B, ldb, trans_b, packed);
    const float* Bp = align64(packed.data.data());
    const std::size_t blocks = (m + MC - 1) / MC;
    // Threads only pay off for large products (waking them costs microseconds, and on a
    // busy machine much more), unless the caller asks for a number.
    const bool large = 2.0 * double(m) * double(n) * double(k) >= 8e6;
    const int nthreads = omp_in_parallel()  ? 1
                         : threads > 0      ? threads
                         : large            ? omp_get_max_threads()
                                            : 1;
    // Row blocks of C to threads; each element is still one thread's in-order sum.
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) if (nthreads > 1 && blocks > 1)
    for (std::size_t b = 0; b < blocks; ++b)
        gemm_rows(kn, m, n, k, A, lda, trans_a, Bp, k, C, ldc, b * MC,
                  std::min(MC, m - b * MC));
}

}  // namespace attn::fast
