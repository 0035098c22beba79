// Internal: the body of one instruction set's kernels in one arithmetic, included twice by
// kernel_isa.hpp (inside kernels_<isa>.cpp's anonymous namespace), once in a namespace `exact`
// and once in a namespace `fused`, after kernels_<isa>.cpp defined:
//   kIsa     the instruction set's name (Kernels::name: "avx512f", "avx2", "portable")
//   W        floats per vector;           V   float vector type of W lanes (GCC vector_size)
//   vexp(V)  SLEEF's expf_u10 on a vector, equal bit for bit to Sleef_expf1_u10purecfma
//   fmadd(c, a, b)  c + a * b (a scalar, broadcast) by one fused multiply-add, rounded once
// and kernel_isa.hpp, in each of the two namespaces:
//   kFused   whether the products' terms are fused multiply-adds (Arithmetic::fma)
//   MR, NV   register tile: MR rows by NV vectors (NR = NV * W columns)
// and included <algorithm>, <cstring>, <limits>, <utility>.
//
// The file is compiled with -ffp-contract=off: `c + a * b` stays a rounded product and a
// rounded sum (no fused multiply-add), which is the reference BLAS's arithmetic; a fused term
// is written as one (fmadd's intrinsic). Everything but the products' terms (the softmax, the
// scaling, the bias) is the same float operations in both arithmetics.

constexpr std::size_t NR = NV * W;

// One term of a product: a rounded product, then a rounded sum (the exact kernels), or one
// fused multiply-add rounded once (the fused kernels).
inline V madd(V c, float a, V b) {
    if constexpr (kFused)
        return fmadd(c, a, b);
    else
        return c + a * b;
}

// x in every lane (a braced list of W copies: one broadcast; a loop over the lanes compiles to
// a chain of masked inserts).
template <std::size_t... L>
inline V splat_n(float x, std::index_sequence<L...>) {
    return V{((void)L, x)...};
}
inline V splat(float x) { return splat_n(x, std::make_index_sequence<W>{}); }

inline V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}

inline void store(float* p, V v) { std::memcpy(p, &v, sizeof(V)); }

// The first R rows (R <= MR) of an MR x NR tile, C with row stride ldc. Each lane of
// acc[i][v] is one element of C; its terms are added in p order, each by madd. With `bias`,
// bias[j] is added to the finished sum. (R < MR: an edge tile's rows, the panel's other rows
// not computed.)
template <std::size_t R = MR>
inline void micro_full(std::size_t k, const float* __restrict Ap, const float* __restrict Bp,
                       float* __restrict C, std::size_t ldc, bool accumulate,
                       const float* __restrict bias) {
    V acc[R][NV];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < R; ++i)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
            acc[i][v] = accumulate ? load(C + i * ldc + v * W) : V{};
    // Four terms per pass of the loop: fewer of its own instructions among the multiply-adds
    // (each element still takes its terms in p order).
#pragma GCC unroll 4
    for (std::size_t p = 0; p < k; ++p) {
        V b[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) b[v] = load(Bp + v * W);
#pragma GCC unroll 16
        for (std::size_t i = 0; i < R; ++i) {
            const float a = Ap[i];
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[i][v] = madd(acc[i][v], a, b[v]);
        }
        Ap += MR;
        Bp += NR;
    }
    if (bias) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
            const V b = load(bias + v * W);
#pragma GCC unroll 16
            for (std::size_t i = 0; i < R; ++i) acc[i][v] += b;
        }
    }
#pragma GCC unroll 16
    for (std::size_t i = 0; i < R; ++i)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) store(C + i * ldc + v * W, acc[i][v]);
}

// An edge tile (rows <= R, cols <= NR) computed as a full tile of R rows in a local buffer
// (the padded rows and columns of the packed panels are zeros); then the part that exists is
// copied out.
template <std::size_t R>
void micro_edge(std::size_t k, const float* Ap, const float* Bp, float* C, std::size_t ldc,
                std::size_t rows, std::size_t cols, bool accumulate, const float* bias) {
    if (cols == NR && rows == R) return micro_full<R>(k, Ap, Bp, C, ldc, accumulate, bias);
    alignas(64) float out[R * NR] = {};
    alignas(64) float b[NR] = {};
    if (accumulate)
        for (std::size_t i = 0; i < rows; ++i) std::copy_n(C + i * ldc, cols, out + i * NR);
    if (bias) std::copy_n(bias, cols, b);
    micro_full<R>(k, Ap, Bp, out, NR, accumulate, bias ? b : nullptr);
    for (std::size_t i = 0; i < rows; ++i) std::copy_n(out + i * NR, cols, C + i * ldc);
}

void micro(std::size_t k, const float* Ap, const float* Bp, float* C, std::size_t ldc,
           std::size_t rows, std::size_t cols, bool accumulate, const float* bias) {
    // The rows computed: the fewest of MR / 3, 2 MR / 3 and MR that cover `rows`, so that a
    // product of 64 rows in tiles of 12 does not pay for 72 (a full tile: micro_edge<MR>).
    constexpr std::size_t R1 = MR / 3, R2 = 2 * MR / 3;
    if constexpr (R1 > 0)
        if (rows <= R1) return micro_edge<R1>(k, Ap, Bp, C, ldc, rows, cols, accumulate, bias);
    if constexpr (R2 > 0)
        if (rows <= R2) return micro_edge<R2>(k, Ap, Bp, C, ldc, rows, cols, accumulate, bias);
    micro_edge<MR>(k, Ap, Bp, C, ldc, rows, cols, accumulate, bias);
}

// ------------------------------------------------------------------ packing (copies only)

// N floats as one GCC vector (an alias template would lose the attribute).
template <std::size_t N> struct VecOf;
template <> struct VecOf<2> { using type = float __attribute__((vector_size(8))); };
template <> struct VecOf<4> { using type = float __attribute__((vector_size(16))); };
template <> struct VecOf<8> { using type = float __attribute__((vector_size(32))); };
template <> struct VecOf<16> { using type = float __attribute__((vector_size(64))); };
template <std::size_t N>
using VecN = typename VecOf<N>::type;

// One step of an N x N transpose held in N vectors: rows i and i + D (i & D == 0) swap their
// off-diagonal D-wide blocks. After D = 1, 2, 4, ..., N / 2, row c holds column c.
template <std::size_t N, std::size_t D, std::size_t... L>
inline VecN<N> swap_lo(VecN<N> a, VecN<N> b, std::index_sequence<L...>) {
    return __builtin_shufflevector(a, b, ((L & D) ? N + L - D : L)...);
}
template <std::size_t N, std::size_t D, std::size_t... L>
inline VecN<N> swap_hi(VecN<N> a, VecN<N> b, std::index_sequence<L...>) {
    return __builtin_shufflevector(a, b, ((L & D) ? N + L : L + D)...);
}
template <std::size_t N, std::size_t D>
inline void transpose_steps(VecN<N>* r) {
    if constexpr (D < N) {
#pragma GCC unroll 16
        for (std::size_t i = 0; i < N; ++i)
            if (!(i & D)) {
                const VecN<N> a = r[i], b = r[i + D];
                r[i] = swap_lo<N, D>(a, b, std::make_index_sequence<N>{});
                r[i + D] = swap_hi<N, D>(a, b, std::make_index_sequence<N>{});
            }
        transpose_steps<N, 2 * D>(r);
    }
}

// dst[c * ldd + r] = src[r * lds + c] for r, c < N.
template <std::size_t N>
inline void transpose_block(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
    VecN<N> r[N];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < N; ++i) std::memcpy(&r[i], src + i * lds, sizeof(VecN<N>));
    transpose_steps<N, 1>(r);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < N; ++i) std::memcpy(dst + i * ldd, &r[i], sizeof(VecN<N>));
}

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols: N x N blocks in registers, the
// edges one float at a time.
template <std::size_t N>
void transpose_n(std::size_t rows, std::size_t cols, const float* src, std::size_t lds,
                 float* dst, std::size_t ldd) {
    std::size_t r0 = 0;
    for (; r0 + N <= rows; r0 += N) {
        std::size_t c0 = 0;
        for (; c0 + N <= cols; c0 += N)
            transpose_block<N>(src + r0 * lds + c0, lds, dst + c0 * ldd + r0, ldd);
        for (std::size_t c = c0; c < cols; ++c)
            for (std::size_t r = r0; r < r0 + N; ++r) dst[c * ldd + r] = src[r * lds + c];
    }
    for (std::size_t c = 0; c < cols; ++c)
        for (std::size_t r = r0; r < rows; ++r) dst[c * ldd + r] = src[r * lds + c];
}

// out[p * N + c] = src[p * ld + c] for p < kc, c < n (n <= N), the columns past n zero: a
// panel whose N values of a term lie contiguous in the source (op(A) transposed, op(B) not).
template <std::size_t N>
inline void pack_contiguous(std::size_t kc, std::size_t n, const float* src, std::size_t ld, float* out) {
    if (n == N) {  // a copy of constant size: vector moves, not a call per term
        for (std::size_t p = 0; p < kc; ++p) std::memcpy(out + p * N, src + p * ld, sizeof(float) * N);
        return;
    }
    for (std::size_t p = 0; p < kc; ++p) {
        std::copy_n(src + p * ld, n, out + p * N);
        std::fill(out + p * N + n, out + (p + 1) * N, 0.0f);
    }
}

void pack_a_panel(std::size_t rows, std::size_t kc, const float* A, std::size_t lda,
                  bool trans_a, float* out) {
    if (trans_a) {  // op(A)[r, p] = A[p * lda + r]: each term's MR values are contiguous
        pack_contiguous<MR>(kc, rows, A, lda, out);
        return;
    }
    // In groups of rows as large as fit (MR need not be a power of two: 12 = 8 + 4), each
    // transposed in G x G blocks in registers.
    static_assert(MR % 2 == 0, "MR must be even");
    std::size_t r0 = 0;
    if constexpr (MR >= 16)
        for (; r0 + 16 <= MR && r0 < rows; r0 += 16)
            transpose_n<16>(std::min<std::size_t>(16, rows - r0), kc, A + r0 * lda, lda, out + r0, MR);
    if constexpr (MR % 16 >= 8)
        for (; r0 + 8 <= MR && r0 < rows; r0 += 8)
            transpose_n<8>(std::min<std::size_t>(8, rows - r0), kc, A + r0 * lda, lda, out + r0, MR);
    if constexpr (MR % 8 >= 4)
        for (; r0 + 4 <= MR && r0 < rows; r0 += 4)
            transpose_n<4>(std::min<std::size_t>(4, rows - r0), kc, A + r0 * lda, lda, out + r0, MR);
    for (; r0 < rows; r0 += 2)
        transpose_n<2>(std::min<std::size_t>(2, rows - r0), kc, A + r0 * lda, lda, out + r0, MR);
    if (rows < MR)
        for (std::size_t p = 0; p < kc; ++p)
            std::fill(out + p * MR + rows, out + (p + 1) * MR, 0.0f);
}

void pack_b_panel(std::size_t kc, std::size_t cols, const float* B, std::size_t ldb,
                  bool trans_b, float* out) {
    if (!trans_b) {  // op(B)[p, c] = B[p * ldb + c]: each term's columns are contiguous
        pack_contiguous<NR>(kc, cols, B, ldb, out);
        return;
    }
    transpose_n<W>(cols, kc, B, ldb, out, NR);
    if (cols < NR)
        for (std::size_t p = 0; p < kc; ++p)
            std::fill(out + p * NR + cols, out + (p + 1) * NR, 0.0f);
}

inline std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// Whether x / s equals x * (1 / s) for every float x: s a positive power of two whose inverse
// is a normal float too. Both are then one correct rounding of the same real number x * 2^-e
// (NaN, infinities and subnormal results included), and the product is several times cheaper
// than the division (Raschka's / sqrt(head_dim) is / 8 for heads of 64).
inline bool exact_inverse(float s) {
    static_assert(sizeof(unsigned) == sizeof(float));
    unsigned u = 0;
    std::memcpy(&u, &s, sizeof u);
    const unsigned exponent = (u >> 23) & 0xFFu;
    return (u & 0x807FFFFFu) == 0 && exponent >= 1 && exponent <= 253;
}

// The softmax of one block of NR queries, stored transposed: St[r * NR + c] is the score of
// query i0 + c against key j0 + r. Lane c of a vector is query c, and every step below is the
// step-by-step path's float operation on that query's row (attention/sdpa_step.cpp): the
// scaling, the additive mask, -inf where the key is hidden, PyTorch's softmax.
void softmax_block(float* St, const SoftmaxBlock& b) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t rows = b.rows;
    V lane;  // c, the lane's query offset within its vector
    for (std::size_t l = 0; l < W; ++l) lane[l] = float(l);
    const bool divide = b.divide && !exact_inverse(b.scale);
    const V s = splat(b.divide && !divide ? 1.0f / b.scale : b.scale), ninf = splat(neg_inf);
    // Scale, bias, mask, and the maximum. `x > m ? x : m` is std::max(m, x) lane by lane
    // (a NaN never replaces the maximum).
    V mx[NV];
    for (std::size_t v = 0; v < NV; ++v) mx[v] = ninf;
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = St + r * NR;
        const long j = long(b.j0 + r);
        // Whether the band masks hide key j from some query of the block (else every lane sees
        // it, and the masking below would change nothing): the rows near the diagonal.
        const bool band = (b.causal && j - b.diag > 0) ||
                          (b.window && j - b.diag + long(b.window) < long(NR));
        for (std::size_t v = 0; v < NV; ++v) {
            V x = load(row + v * W);
            x = divide ? x / s : x * s;
            if (b.bias) x = x + load(b.bias + r * NR + v * W);
            // Query c = v*W + l sees key j when j - diag <= c (causal) and
            // c < j - diag + window (window); the bounds clamped to small floats.
            const long base = long(v * W);
            if (band && b.causal) {
                const long first = std::clamp(j - b.diag - base, -1L, long(W) + 1);
                x = lane < splat(float(first)) ? ninf : x;
            }
            if (band && b.window) {
                const long end = std::clamp(j - b.diag + long(b.window) - base, -1L, long(W) + 1);
                x = lane < splat(float(end)) ? x : ninf;
            }
            if (b.allow) {
                const unsigned char* a = b.allow + r * NR + v * W;
                for (std::size_t l = 0; l < W; ++l)
                    if (!a[l]) x[l] = neg_inf;
            }
            store(row + v * W, x);
            mx[v] = x > mx[v] ? x : mx[v];
        }
    }
    if (b.zero_fully_masked)  // every exp is then exp(-inf - 0) = 0 and the sum 0
        for (std::size_t v = 0; v < NV; ++v) mx[v] = mx[v] == ninf ? V{} : mx[v];
    // exp(x - max), and the sum in vec::reduce_all's order: lane l of 8 adds the keys
    // j = l (mod 8) in order, then the 8 are added (see below). Masked keys add exact zeros
    // (every exp is >= +0, so no partial sum is -0 and adding +0 changes nothing), so the
    // block may start at any key j0 as long as key j goes to lane j % 8.
    V acc[8][NV];
    for (std::size_t l = 0; l < 8; ++l)
        for (std::size_t v = 0; v < NV; ++v) acc[l][v] = V{};
    std::size_t r = 0;
    for (std::size_t l0 = b.j0 % 8; r < rows && l0 != 0; ++r, l0 = (l0 + 1) % 8)
        for (std::size_t v = 0; v < NV; ++v) {
            float* p = St + r * NR + v * W;
            const V e = vexp(load(p) - mx[v]);
            store(p, e);
            acc[l0][v] += e;
        }
    for (; r + 8 <= rows; r += 8)
#pragma GCC unroll 8
        for (std::size_t l = 0; l < 8; ++l)
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                float* p = St + (r + l) * NR + v * W;
                const V e = vexp(load(p) - mx[v]);
                store(p, e);
                acc[l][v] += e;
            }
    for (std::size_t l = 0; r + l < rows; ++l)
        for (std::size_t v = 0; v < NV; ++v) {
            float* p = St + (r + l) * NR + v * W;
            const V e = vexp(load(p) - mx[v]);
            store(p, e);
            acc[l][v] += e;
        }
    V inv[NV];
    for (std::size_t v = 0; v < NV; ++v) {
        // vec::reduce_all's end: a row under 8 keys in order (the unused lanes hold exact
        // zeros), a longer one as AVX2's tree of the 8 lanes (detail::lane_tree_sum).
        V total = acc[0][v];
        if (b.keys < 8)
            for (std::size_t l = 1; l < 8; ++l) total = total + acc[l][v];
        else
            total = ((acc[0][v] + acc[4][v]) + (acc[2][v] + acc[6][v])) +
                    ((acc[1][v] + acc[5][v]) + (acc[3][v] + acc[7][v]));
        if (b.row_max) store(b.row_max + v * W, mx[v]);
        if (b.row_sum) store(b.row_sum + v * W, total);
        inv[v] = splat(1.0f) / total;
        // masked_softmax: a row of nothing but -inf has weights 0 (its sum is exactly 0).
        if (b.zero_fully_masked) inv[v] = total == V{} ? V{} : inv[v];
    }
    // * (1 / sum)
    for (std::size_t k = 0; k < rows; ++k)
        for (std::size_t v = 0; v < NV; ++v) {
            float* p = St + k * NR + v * W;
            store(p, load(p) * inv[v]);
        }
}

// The softmax of one query in place, its scores in a row: x[r] against key b.j0 + r, r < b.rows,
// when nothing in the block is hidden (no allow, no bias, no band reaching into it: the caller
// checks). softmax_block would hold the query in lane 0 of NR and compute NR exponentials per
// key; here the keys fill the lanes. Every float operation is lane 0's there: the scaling, the
// maximum (the same value; only a maximum of zero may differ in sign, which neither
// exp(x - max) nor max + log(sum) can show), exp(x - max), the sum in vec::reduce_all's order
// (key j in lane j % 8, then the 8 lanes), * (1 / sum).
void softmax_row(float* x, const SoftmaxBlock& b) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t n = b.rows;
    const bool divide = b.divide && !exact_inverse(b.scale);
    const float sc = b.divide && !divide ? 1.0f / b.scale : b.scale;
    const V s = splat(sc);
    V mv = splat(neg_inf);
    std::size_t r = 0;
    for (; r + W <= n; r += W) {
        V v = load(x + r);
        v = divide ? v / s : v * s;
        store(x + r, v);
        mv = v > mv ? v : mv;
    }
    float mx = neg_inf;
    for (std::size_t l = 0; l < W; ++l) mx = mv[l] > mx ? mv[l] : mx;
    for (; r < n; ++r) {
        x[r] = divide ? x[r] / sc : x[r] * sc;
        mx = x[r] > mx ? x[r] : mx;
    }
    if (b.zero_fully_masked && mx == neg_inf) mx = 0.0f;
    const V m = splat(mx);
    for (r = 0; r + W <= n; r += W) store(x + r, vexp(load(x + r) - m));
    if (r < n) {  // the last keys in a vector padded with zeros
        alignas(64) float tail[W] = {};
        std::copy(x + r, x + n, tail);
        store(tail, vexp(load(tail) - m));
        std::copy_n(tail, n - r, x + r);
    }
    float acc[8] = {};
    r = 0;
    for (std::size_t l = b.j0 % 8; r < n && l != 0; ++r, l = (l + 1) % 8) acc[l] += x[r];
    for (; r + 8 <= n; r += 8)
        for (std::size_t l = 0; l < 8; ++l) acc[l] += x[r + l];
    for (std::size_t l = 0; r + l < n; ++l) acc[l] += x[r + l];
    float total = acc[0];
    if (b.keys < 8)
        for (std::size_t l = 1; l < 8; ++l) total = total + acc[l];
    else
        total = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    if (b.row_max) *b.row_max = mx;
    if (b.row_sum) *b.row_sum = total;
    float inv = 1.0f / total;
    if (b.zero_fully_masked && total == 0.0f) inv = 0.0f;
    const V iv = splat(inv);
    for (r = 0; r + W <= n; r += W) store(x + r, load(x + r) * iv);
    for (; r < n; ++r) x[r] = x[r] * inv;
}

void exp_n(float* x, std::size_t n) {
    std::size_t j = 0;
    for (; j + W <= n; j += W) store(x + j, vexp(load(x + j)));
    if (j < n) {
        alignas(64) float tail[W] = {};
        std::copy(x + j, x + n, tail);
        store(tail, vexp(load(tail)));
        std::copy_n(tail, n - j, x + j);
    }
}

// ------------------------------------------------------------------ a few rows times W^T

// C[i, c] = (sum over p < k, in order from +0, of A[i * lda + p] * B[c * ldb + p]) (+ bias[c])
// for i < R, c < cols (cols <= W): a decode step's x @ W^T with a Linear weight B [n, k] read
// where it lies, no packing. W rows of B are loaded W terms at a time and transposed in
// registers (vector t[q] then holds term p + q of the W columns), so that lane c accumulates
// column c's terms in order, each term by madd (the exact arithmetic: product and sum rounded
// separately, the reference BLAS's bits; fma: rounded once), the bias added to the finished sum.
template <std::size_t R>
void skinny_rows(std::size_t k, const float* __restrict A, std::size_t lda, const float* __restrict B,
                 std::size_t ldb, std::size_t cols, float* __restrict C, std::size_t ldc,
                 const float* __restrict bias) {
    V acc[R];
#pragma GCC unroll 4
    for (std::size_t i = 0; i < R; ++i) acc[i] = V{};
    std::size_t p = 0;
    if (cols == W) {
        for (; p + W <= k; p += W) {
            VecN<W> t[W];
#pragma GCC unroll 16
            for (std::size_t q = 0; q < W; ++q) {
                std::memcpy(&t[q], B + q * ldb + p, sizeof(V));
                // W rows stream at once: asking for each row's data 4 cache lines ahead
                // keeps the memory busy (about a sixth faster on a Xeon with AVX-512).
                __builtin_prefetch(B + q * ldb + p + 64);
            }
            transpose_steps<W, 1>(t);
#pragma GCC unroll 16
            for (std::size_t q = 0; q < W; ++q)
#pragma GCC unroll 4
                for (std::size_t i = 0; i < R; ++i) acc[i] = madd(acc[i], A[i * lda + p + q], (V)t[q]);
        }
    }
    // The last terms (and every term of an edge block of fewer than W columns): one column
    // vector per term, gathered.
    for (; p < k; ++p) {
        V t{};
        for (std::size_t c = 0; c < cols; ++c) t[c] = B[c * ldb + p];
#pragma GCC unroll 4
        for (std::size_t i = 0; i < R; ++i) acc[i] = madd(acc[i], A[i * lda + p], t);
    }
    if (bias) {
        V b{};
        for (std::size_t c = 0; c < cols; ++c) b[c] = bias[c];
#pragma GCC unroll 4
        for (std::size_t i = 0; i < R; ++i) acc[i] += b;
    }
    for (std::size_t i = 0; i < R; ++i) {
        if (cols == W) {
            store(C + i * ldc, acc[i]);
        } else {
            for (std::size_t c = 0; c < cols; ++c) C[i * ldc + c] = acc[i][c];
        }
    }
}

// skinny_rows for rows <= 4 (SKINNY_ROWS in kernels.hpp).
void skinny_nt(std::size_t rows, std::size_t cols, std::size_t k, const float* A, std::size_t lda,
               const float* B, std::size_t ldb, float* C, std::size_t ldc, const float* bias) {
    switch (rows) {
        case 1: return skinny_rows<1>(k, A, lda, B, ldb, cols, C, ldc, bias);
        case 2: return skinny_rows<2>(k, A, lda, B, ldb, cols, C, ldc, bias);
        case 3: return skinny_rows<3>(k, A, lda, B, ldb, cols, C, ldc, bias);
        default: return skinny_rows<4>(k, A, lda, B, ldb, cols, C, ldc, bias);
    }
}

// ------------------------------------------------------------------ a few rows of weights times values

// C[i, d] = (sum over p < k, in order from +0, of A[p * lda + i] * B[p * ldb + d]) for i < R,
// d < cols: a decode step's weights [k keys, R queries] times its values [k, cols], each value
// row read where it lies, up to 4 vectors of columns at a time in registers; each term by madd,
// as the packed kernel's (whose product is b * a: the same rounded value).
template <std::size_t R>
void skinny_nn_rows(std::size_t cols, std::size_t k, const float* __restrict A, std::size_t lda,
                    const float* __restrict B, std::size_t ldb, float* __restrict C, std::size_t ldc) {
    // One query with vectors under 16 lanes: 8 vectors, so that a 64-wide head's values are
    // read in one pass, not in two passes over the halves of their rows.
    constexpr std::size_t CV = R == 1 && W < 16 ? 8 : 4;
    for (std::size_t d0 = 0; d0 < cols; d0 += CV * W) {
        const std::size_t n = std::min(CV * W, cols - d0);
        V acc[R][CV];
#pragma GCC unroll 4
        for (std::size_t i = 0; i < R; ++i)
#pragma GCC unroll 4
            for (std::size_t v = 0; v < CV; ++v) acc[i][v] = V{};
        if (n == CV * W) {
            for (std::size_t p = 0; p < k; ++p) {
                V b[CV];
#pragma GCC unroll 8
                for (std::size_t v = 0; v < CV; ++v) b[v] = load(B + p * ldb + d0 + v * W);
#pragma GCC unroll 4
                for (std::size_t i = 0; i < R; ++i) {
                    const float a = A[p * lda + i];
#pragma GCC unroll 8
                    for (std::size_t v = 0; v < CV; ++v) acc[i][v] = madd(acc[i][v], a, b[v]);
                }
            }
        } else {  // the last columns: their row parts copied into zeroed vectors
            const std::size_t nv = (n + W - 1) / W;
            for (std::size_t p = 0; p < k; ++p) {
                float row[CV * W] = {};
                std::memcpy(row, B + p * ldb + d0, n * sizeof(float));
                for (std::size_t i = 0; i < R; ++i) {
                    const float a = A[p * lda + i];
                    for (std::size_t v = 0; v < nv; ++v) acc[i][v] = madd(acc[i][v], a, load(row + v * W));
                }
            }
        }
        for (std::size_t i = 0; i < R; ++i) {
            float out[CV * W];
            for (std::size_t v = 0; v < CV; ++v) store(out + v * W, acc[i][v]);
            std::memcpy(C + i * ldc + d0, out, n * sizeof(float));
        }
    }
}

// skinny_nn_rows for rows <= 4 (kSkinnyRows in kernels.hpp).
void skinny_nn(std::size_t rows, std::size_t cols, std::size_t k, const float* A, std::size_t lda,
               const float* B, std::size_t ldb, float* C, std::size_t ldc) {
    switch (rows) {
        case 1: return skinny_nn_rows<1>(cols, k, A, lda, B, ldb, C, ldc);
        case 2: return skinny_nn_rows<2>(cols, k, A, lda, B, ldb, C, ldc);
        case 3: return skinny_nn_rows<3>(cols, k, A, lda, B, ldb, C, ldc);
        default: return skinny_nn_rows<4>(cols, k, A, lda, B, ldb, C, ldc);
    }
}

// ------------------------------------------------------------------ the table

// This instruction set's kernels in this arithmetic, as gemm.cpp's tables hold them.
const Kernels& kernels() {
    static const Kernels k{kIsa, kFused, MR, NR, &micro, &pack_a_panel, &pack_b_panel,
                           &transpose_n<W>, &softmax_block, &softmax_row, &exp_n, W, &skinny_nt, &skinny_nn};
    return k;
}
