// attn::fast::gemm and friends (gemm.hpp): packing, cache blocking, threads and the choice of
// kernel. The arithmetic itself is in kernel_impl.hpp.
//
// Products whose op(A) fits the last-level cache and whose panels of all k terms fit L2 (most
// of a GPT's, up to 512 tokens) go through gemm_stream below: op(A) packed once, then each
// thread packs one NR-column panel of all k terms at a time and computes every row against it.
// The others, blocked:
// For each block of at most KC terms, in order (partial sums stored in C between blocks):
//   the team packs that block's rows of every right operand   (KC x NR panels, shared)
//   then, for each block of at most MC rows of C, which one thread owns:
//     pack the MC x KC block of op(A)              (MR-row panels, zero-padded), once for
//     for each right operand                       all the right operands
//       for each NR-column panel of its packed B   (KC x NR, stays in L1)
//         for each MR-row panel of the packed A    (the kernel: an MR x NR tile in registers)
// The packed block of the right operands (KC rows of every column) is reused from the L2 cache
// by every row block of C, and the next tile of C is sent for while the kernel computes one.
// Every element of C is computed by one kernel call per
// KC block, in block order, so the order of its terms is 0, 1, ..., k-1 whatever the blocking
// or the thread count, in either arithmetic (kernels.hpp: the exact and the fma kernels of each
// instruction set).
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

using detail::IsaKernels;
using detail::Kernels;

// Terms per block: a KC x NR panel of B is 32 KiB (AVX-512), in L1 while the row block passes;
// the block's rows of a 768-wide right operand (KC x n) are 768 KiB, in L2 while every row
// block passes.
constexpr std::size_t KC = 256;
// Rows per block (whole register tiles): a MC x KC block of A is 120 KiB; the C rows it touches
// pass through L2 between two uses of a panel of B, so it is kept small.
constexpr std::size_t MC = 120;

// The instruction set the CPU has (ATTN_FAST_ISA=portable or avx2 asks for a smaller one).
const IsaKernels& choose_kernels() {
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

std::atomic<const IsaKernels*>& current() {
    static std::atomic<const IsaKernels*> k{&choose_kernels()};
    return k;
}

// The kernels of the instruction set in use, in `arithmetic` (automatic: the calling thread's).
const Kernels& kernels(Arithmetic arithmetic = Arithmetic::exact) {
    const IsaKernels& isa = *current().load(std::memory_order_relaxed);
    return resolve_arithmetic(arithmetic) == Arithmetic::fma ? isa.fused : isa.exact;
}

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

// Scratch for packed A blocks, one per thread, kept between calls.
float* a_scratch(std::size_t floats) {
    thread_local std::vector<float> buf;
    if (buf.size() < floats + 16) buf.resize(floats + 16);
    return align64(buf.data());
}

// Packs rows [i0, i0 + mc) and terms [p0, p0 + kc) of op(A) into MR-row panels:
// panel q holds, for p = 0..kc-1, the MR values op(A)[i0 + q*MR + r, p0 + p] (0 past mc).
void pack_a_block(const Kernels& kn, const float* A, std::size_t lda, bool trans_a,
                  std::size_t i0, std::size_t mc, std::size_t p0, std::size_t kc, float* out) {
    for (std::size_t r0 = 0; r0 < mc; r0 += kn.mr) {
        const std::size_t i = i0 + r0;
        kn.pack_a(std::min(kn.mr, mc - r0), kc, trans_a ? A + p0 * lda + i : A + i * lda + p0,
                  lda, trans_a, out + (r0 / kn.mr) * kc * kn.mr);
    }
}

// Packs op(B) [k, n] into ceil(n / NR) panels of k rows of NR floats, panel q at out + q*k*NR.
void pack_b_panel_of(const Kernels& kn, std::size_t k, std::size_t n, const float* B,
                     std::size_t ldb, bool trans_b, std::size_t q, float* out) {
    const std::size_t j0 = q * kn.nr;
    kn.pack_b(k, std::min(kn.nr, n - j0), trans_b ? B + j0 * ldb : B + j0, ldb, trans_b,
              out + q * k * kn.nr);
}

// Asks for the cache lines of a rows x cols tile of C (row stride ldc), to be written.
void prefetch_tile(const float* C, std::size_t ldc, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t c = 0; c < cols; c += 16) __builtin_prefetch(C + i * ldc + c, 1, 3);
}

// One product's block of KC terms: where its packed panels of those terms are, its columns
// and result.
struct Target {
    const float* Bp;     // panel q (NR columns, kc terms) at Bp + q * stride
    std::size_t stride;  // floats from one panel to the next
    std::size_t n;       // columns
    float* C;            // result, row stride ldc
    std::size_t ldc;
    const float* bias;   // [n] added to the finished sums (after the last block), or null
};

// Terms [p0, p0 + kc) of rows [i0, i0 + mc) of op(A) @ op(B_t) for every target, added to what
// C holds from the earlier blocks (p0 > 0): A packed once for all of them.
void gemm_rows(const Kernels& kn, std::size_t p0, std::size_t kc, bool last, const float* A,
               std::size_t lda, bool trans_a, const Target* targets, std::size_t count,
               std::size_t i0, std::size_t mc) {
    const std::size_t mr = kn.mr, nr = kn.nr;
    float* Ap = a_scratch(round_up(mc, mr) * kc);
    pack_a_block(kn, A, lda, trans_a, i0, mc, p0, kc, Ap);
    for (std::size_t t = 0; t < count; ++t) {
        const Target& g = targets[t];
        for (std::size_t j0 = 0; j0 < g.n; j0 += nr) {
            const float* Bpanel = g.Bp + (j0 / nr) * g.stride;
            const std::size_t cols = std::min(nr, g.n - j0);
            const float* bias = last && g.bias ? g.bias + j0 : nullptr;
            for (std::size_t r0 = 0; r0 < mc; r0 += mr) {
                // The kernel's first term waits for the C it adds to (the terms are summed in
                // order from what C holds), so the next tile of C is sent for now, while this
                // one computes: the rows below, or the next panel's first rows.
                if (p0 > 0) {
                    const bool down = r0 + mr < mc;
                    const std::size_t r1 = down ? r0 + mr : 0, j1 = down ? j0 : j0 + nr;
                    if (j1 < g.n) prefetch_tile(g.C + (i0 + r1) * g.ldc + j1, g.ldc,
                                                std::min(mr, mc - r1), std::min(nr, g.n - j1));
                }
                kn.micro(kc, Ap + (r0 / mr) * kc * mr, Bpanel, g.C + (i0 + r0) * g.ldc + j0,
                         g.ldc, std::min(mr, mc - r0), cols, p0 > 0, bias);
            }
        }
    }
}

void zero_rows(float* C, std::size_t ldc, std::size_t m, std::size_t n,
               const float* bias = nullptr) {
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) C[i * ldc + j] = bias ? 0.0f + bias[j] : 0.0f;
}

// A few rows of C (a decode step: one token, or a few): each element of the right operands is
// used by at most kStreamRows rows, so the product is bound by reading them once from memory.
// Instead of packing every right operand before computing (a copy as large as the weights:
// 154 MB for GPT-2's output head), each thread packs one NR-column panel of all k terms at a
// time into its own buffer (k * NR floats, in its L2 cache), computes every row against it with
// the same micro-kernel (one call over all k terms, so each element is still summed in order
// from +0, its bias added to the finished sum: the same bits), and moves on. The threads split
// the panels, so both cores stream weights; they are woken only when the right operands hold
// at least 1 MB or the product is as large as gemm's threaded ones (8 million flops): below
// that, waking them costs more than it saves.
constexpr std::size_t kStreamRows = 16;
// Flops (2 m n k) from which a product wakes the team (below, waking it costs more than it saves).
constexpr double kThreadFlops = 8e6;
// The same way when a panel of all k terms stays in the L2 cache (k <= kPanelTerms) and the
// packed op(A) in the last-level cache (m k <= kPanelFloats, 8 MB): each element of C is then
// one micro-kernel call, with no partial sums stored to C and loaded again, no barrier between blocks of terms and no copy of a whole right
// operand, which GPT-2's output head (154 MB) makes slower than computing (on 2 threads of an
// AMD EPYC, 512 rows of the head: 280 ms against 400 to 520 ms blocked; 17 rows: 20 ms
// against 70 ms).
constexpr std::size_t kPanelTerms = 4096, kPanelFloats = std::size_t{1} << 21;

void gemm_stream(const Kernels& kn, std::size_t m, std::size_t k, const float* A, std::size_t lda,
                 bool trans_a, const GemmRight* rights, std::size_t count, int threads) {
    const std::size_t nr = kn.nr, mr = kn.mr;
    thread_local std::vector<std::size_t> first_buf;
    first_buf.assign(count + 1, 0);
    std::size_t* first = first_buf.data();  // the first panel of each operand
    double floats = 0;
    for (std::size_t r = 0; r < count; ++r) {
        first[r + 1] = first[r] + (rights[r].n + nr - 1) / nr;
        floats += double(rights[r].n) * double(k);
    }
    const std::size_t panels = first[count];
    const int nthreads = omp_in_parallel()        ? 1
                         : threads > 0            ? threads
                         : floats >= 262144.0 || 2.0 * double(m) * floats >= kThreadFlops ? omp_get_max_threads()
                                                  : 1;
    // The skinny kernel transposes each block of the weight in registers for every kSkinnyRows
    // rows: for more rows than one such group, one transposing copy of each panel, shared by
    // all the rows, costs less (GPT-2's 768 x 3072 weight, 8 rows on 2 threads: 0.5 ms against
    // 0.7 to 0.85 ms; 16 rows: 0.8 ms against 1.5 ms).
    bool all_nt = !trans_a && m <= detail::kSkinnyRows;
    for (std::size_t r = 0; r < count; ++r) all_nt = all_nt && rights[r].trans_b;
    if (all_nt) {
        // x @ W^T with Linear weights: no packing at all. Each weight row is read from memory
        // once, by the skinny kernel, which transposes W x W blocks in registers; a block of
        // the weight is reused from the cache by the later groups of kSkinnyRows rows.
        const std::size_t w = kn.w, span = 4 * w;  // columns handed out at a time
        first_buf.assign(count + 1, 0);
        for (std::size_t r = 0; r < count; ++r) first[r + 1] = first[r] + (rights[r].n + span - 1) / span;
        const std::size_t spans = first[count];
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) if (nthreads > 1)
        for (std::size_t t = 0; t < spans; ++t) {
            const std::size_t r = std::size_t(std::upper_bound(first, first + count + 1, t) - first) - 1;
            const GemmRight& g = rights[r];
            const std::size_t end = std::min(g.n, (t - first[r] + 1) * span);
            for (std::size_t j0 = (t - first[r]) * span; j0 < end; j0 += w)
                for (std::size_t r0 = 0; r0 < m; r0 += detail::kSkinnyRows)
                    kn.skinny_nt(std::min(detail::kSkinnyRows, m - r0), std::min(w, end - j0), k, A + r0 * lda, lda,
                                 g.B + j0 * g.ldb, g.ldb, g.C + r0 * g.ldc + j0, g.ldc,
                                 g.bias ? g.bias + j0 : nullptr);
        }
        return;
    }
    // op(A), all m rows and k terms, packed once (MR-row panels, shared out), read by every thread.
    float* Ap = a_scratch(round_up(m, mr) * k);
    const std::size_t a_panels = (m + mr - 1) / mr;
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
#pragma omp for schedule(static)
        for (std::size_t q = 0; q < a_panels; ++q)
            pack_a_block(kn, A, lda, trans_a, q * mr, std::min(mr, m - q * mr), 0, k, Ap + q * k * mr);
        thread_local std::vector<float> panel_buf;
        if (panel_buf.size() < k * nr + 16) panel_buf.resize(k * nr + 16);
        float* Bp = align64(panel_buf.data());
#pragma omp for schedule(dynamic, 2)
        for (std::size_t t = 0; t < panels; ++t) {
            const std::size_t r = std::size_t(std::upper_bound(first, first + count + 1, t) - first) - 1;
            const GemmRight& g = rights[r];
            const std::size_t j0 = (t - first[r]) * nr, cols = std::min(nr, g.n - j0);
            kn.pack_b(k, cols, g.trans_b ? g.B + j0 * g.ldb : g.B + j0, g.ldb, g.trans_b, Bp);
            for (std::size_t r0 = 0; r0 < m; r0 += mr)
                kn.micro(k, Ap + (r0 / mr) * k * mr, Bp, g.C + r0 * g.ldc + j0, g.ldc, std::min(mr, m - r0),
                         cols, false, g.bias ? g.bias + j0 : nullptr);
        }
    }
}

}  // namespace

namespace detail {

const Kernels& active(Arithmetic arithmetic) { return kernels(arithmetic); }

void pack_a_panels(const Kernels& kn, std::size_t m, std::size_t k, const float* A,
                   std::size_t lda, bool trans_a, float* out) {
    pack_a_block(kn, A, lda, trans_a, 0, m, 0, k, out);
}

void pack_b_panels(const Kernels& kn, std::size_t k, std::size_t n, const float* B,
                   std::size_t ldb, bool trans_b, float* out) {
    for (std::size_t q = 0; q * kn.nr < n; ++q) pack_b_panel_of(kn, k, n, B, ldb, trans_b, q, out);
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
                         C + r0 * ldc + j0, ldc, std::min(mr, m - r0), cols, p0 > 0, nullptr);
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
    current().store(name == "avx512f" ? &detail::kernels_avx512()
                    : name == "avx2"  ? &detail::kernels_avx2()
                                      : &detail::kernels_portable());
}

void pack_b(std::size_t k, std::size_t n, const float* B, std::size_t ldb, bool trans_b,
            PackedB& out) {
    check_ld("fast::pack_b", "ldb", ldb, trans_b ? k : n);
    const Kernels& kn = kernels();
    const std::size_t panels = (n + kn.nr - 1) / kn.nr;
    out.k = k;
    out.n = n;
    out.nr = kn.nr;
    if (out.data.size() < panels * k * kn.nr + 16) out.data.resize(panels * k * kn.nr + 16);
    detail::pack_b_panels(kn, k, n, B, ldb, trans_b, align64(out.data.data()));
}

void gemm_packed(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda,
                 bool trans_a, const PackedB& B, float* C, std::size_t ldc, Arithmetic arithmetic) {
    const Kernels& kn = kernels(arithmetic);
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
    const std::size_t mc = std::max(MC / kn.mr, std::size_t{1}) * kn.mr;
    for (std::size_t p0 = 0; p0 < k; p0 += KC) {
        const std::size_t kc = std::min(KC, k - p0);
        const Target t{align64(B.data.data()) + p0 * kn.nr, B.k * kn.nr, n, C, ldc, nullptr};
        for (std::size_t i0 = 0; i0 < m; i0 += mc)
            gemm_rows(kn, p0, kc, p0 + kc == k, A, lda, trans_a, &t, 1, i0, std::min(mc, m - i0));
    }
}

void gemm(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda,
          bool trans_a, const float* B, std::size_t ldb, bool trans_b, float* C,
          std::size_t ldc, int threads, Arithmetic arithmetic) {
    check_ld("fast::gemm", "lda", lda, trans_a ? m : k);
    check_ld("fast::gemm", "ldb", ldb, trans_b ? k : n);
    check_ld("fast::gemm", "ldc", ldc, n);
    const GemmRight right{B, ldb, trans_b, n, C, ldc, nullptr};
    gemm_multi(m, k, A, lda, trans_a, &right, 1, threads, arithmetic);
}

void gemm_multi(std::size_t m, std::size_t k, const float* A, std::size_t lda, bool trans_a,
                const GemmRight* rights, std::size_t count, int threads, Arithmetic arithmetic) {
    check_ld("fast::gemm_multi", "lda", lda, trans_a ? m : k);
    double flops = 0;
    for (std::size_t r = 0; r < count; ++r) {
        check_ld("fast::gemm_multi", "ldb", rights[r].ldb, rights[r].trans_b ? k : rights[r].n);
        check_ld("fast::gemm_multi", "ldc", rights[r].ldc, rights[r].n);
        flops += 2.0 * double(m) * double(rights[r].n) * double(k);
    }
    if (m == 0) return;
    if (k == 0) {
        for (std::size_t r = 0; r < count; ++r)
            zero_rows(rights[r].C, rights[r].ldc, m, rights[r].n, rights[r].bias);
        return;
    }
    // The arithmetic resolved here, on the calling thread (the team does not see its guard).
    const Kernels& kn = kernels(arithmetic);
    const std::size_t nr = kn.nr;
    if (m <= kStreamRows || (k <= kPanelTerms && m * k <= kPanelFloats))
        return gemm_stream(kn, m, k, A, lda, trans_a, rights, count, threads);
    // Every right operand's panels of one block of terms side by side in one buffer, which all
    // threads read. (The calling thread's buffer, seen by the team through this pointer.)
    thread_local std::vector<std::size_t> first_buf;
    thread_local std::vector<float> packed;
    first_buf.assign(count + 1, 0);
    std::size_t* first = first_buf.data();  // the first panel of each operand
    for (std::size_t r = 0; r < count; ++r) first[r + 1] = first[r] + (rights[r].n + nr - 1) / nr;
    const std::size_t panels = first[count], kcmax = std::min(k, KC);
    if (packed.size() < panels * kcmax * nr + 16) packed.resize(panels * kcmax * nr + 16);
    float* Bp = align64(packed.data());
    // Threads only pay off for large products (waking them costs microseconds, and on a
    // busy machine much more), unless the caller asks for a number.
    const int nthreads = omp_in_parallel()  ? 1
                         : threads > 0      ? threads
                         : flops >= kThreadFlops ? omp_get_max_threads()
                                            : 1;
    // Rows in blocks of whole register tiles, at most MC rows each, their number a multiple of
    // the team's (when there are enough tiles) and their sizes within one tile of each other,
    // so that every thread gets the same share of the T = ceil(m / MR) tiles: the first
    // T % blocks blocks hold one tile more.
    const std::size_t team = std::size_t(nthreads);
    const std::size_t tiles = (m + kn.mr - 1) / kn.mr, most = std::max(MC / kn.mr, std::size_t{1});
    const std::size_t blocks = std::min(round_up((tiles + most - 1) / most, team), tiles);
    const std::size_t per_block = tiles / blocks, extra = tiles % blocks;
    const auto block_row = [&](std::size_t b) {
        return std::min((b * per_block + std::min(b, extra)) * kn.mr, m);
    };
    // Per block of terms, one team packs the right operands' rows (panels shared out), then
    // computes row blocks of C; each element is still one thread's in-order sum, so the bits do
    // not depend on threads. Both loops hand out work as threads come for it: on a shared
    // machine a thread that is descheduled for a while leaves its share to the other rather
    // than holding up the barrier.
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        std::vector<Target> targets(count);
        for (std::size_t p0 = 0; p0 < k; p0 += KC) {
            const std::size_t kc = std::min(KC, k - p0);
#pragma omp for schedule(dynamic, 4)
            for (std::size_t t = 0; t < panels; ++t) {
                const std::size_t r =
                    std::size_t(std::upper_bound(first, first + count + 1, t) - first) - 1;
                const GemmRight& g = rights[r];
                pack_b_panel_of(kn, kc, g.n, g.trans_b ? g.B + p0 : g.B + p0 * g.ldb, g.ldb,
                                g.trans_b, t - first[r], Bp + first[r] * kc * nr);
            }
            for (std::size_t r = 0; r < count; ++r)
                targets[r] = {Bp + first[r] * kc * nr, kc * nr, rights[r].n, rights[r].C,
                              rights[r].ldc, rights[r].bias};
#pragma omp for schedule(dynamic, 1)
            for (std::size_t b = 0; b < blocks; ++b)
                gemm_rows(kn, p0, kc, p0 + kc == k, A, lda, trans_a, targets.data(), count,
                          block_row(b), block_row(b + 1) - block_row(b));
        }
    }
}

}  // namespace attn::fast
