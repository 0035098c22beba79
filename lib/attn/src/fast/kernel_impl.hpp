// Internal: the body of one instruction set's kernels, included inside an anonymous namespace
// by kernels_<isa>.cpp after it defined:
//   W        floats per vector;           V   float vector type of W lanes (GCC vector_size)
//   MR, NV   register tile: MR rows by NV vectors (NR = NV * W columns)
//   vexp(V)  SLEEF's expf_u10 on a vector, equal bit for bit to Sleef_expf1_u10purecfma
// and included <algorithm>, <cstring>, <limits>.
//
// The file is compiled with -ffp-contract=off: `acc += a * b` stays a rounded product and a
// rounded sum (no fused multiply-add), which is the reference BLAS's arithmetic.

constexpr std::size_t NR = NV * W;

inline V splat(float x) {
    V v;
    for (std::size_t l = 0; l < W; ++l) v[l] = x;
    return v;
}

inline V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}

inline void store(float* p, V v) { std::memcpy(p, &v, sizeof(V)); }

// The full MR x NR tile, C with row stride ldc. Each lane of acc[i][v] is one element of C;
// its terms are added in p order.
inline void micro_full(std::size_t k, const float* __restrict Ap, const float* __restrict Bp,
                       float* __restrict C, std::size_t ldc, bool accumulate) {
    V acc[MR][NV];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
            acc[i][v] = accumulate ? load(C + i * ldc + v * W) : V{};
    for (std::size_t p = 0; p < k; ++p) {
        V b[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) b[v] = load(Bp + v * W);
#pragma GCC unroll 16
        for (std::size_t i = 0; i < MR; ++i) {
            const float a = Ap[i];
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[i][v] += a * b[v];
        }
        Ap += MR;
        Bp += NR;
    }
#pragma GCC unroll 16
    for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) store(C + i * ldc + v * W, acc[i][v]);
}

void micro(std::size_t k, const float* Ap, const float* Bp, float* C, std::size_t ldc,
           std::size_t rows, std::size_t cols, bool accumulate) {
    if (rows == MR && cols == NR) {
        micro_full(k, Ap, Bp, C, ldc, accumulate);
        return;
    }
    // An edge tile: work on a full tile in a local buffer (the padded rows and columns of the
    // packed panels are zeros), then copy out the part that exists.
    alignas(64) float tile[MR * NR] = {};
    if (accumulate)
        for (std::size_t i = 0; i < rows; ++i) std::copy_n(C + i * ldc, cols, tile + i * NR);
    micro_full(k, Ap, Bp, tile, NR, accumulate);
    for (std::size_t i = 0; i < rows; ++i) std::copy_n(tile + i * NR, cols, C + i * ldc);
}

inline std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// One causal softmax row: keys 0..n-1 are visible. See attn::fast::causal_softmax_rows.
void softmax_row(float* row, std::size_t n, std::size_t zero_to, float divisor) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    // Whole vectors, and whole groups of 8 for the sum below.
    const std::size_t nv = round_up(n, W > 8 ? W : 8);
    // masked_fill(-inf) on the padding of the last vector: exp gives exactly 0 there.
    for (std::size_t j = n; j < nv; ++j) row[j] = neg_inf;
    // scores / sqrt(d_k), and the row maximum. `x > m ? x : m` is std::max(m, x) lane by lane
    // (a NaN never replaces the maximum, as in the scalar loop); the maximum of the lanes is
    // then the maximum of the row, whatever the order (only the sign of a zero maximum could
    // depend on the order, and exp(+-0) = 1 either way).
    const V d = splat(divisor);
    V mv = splat(neg_inf);
    for (std::size_t j = 0; j < nv; j += W) {
        const V x = load(row + j) / d;
        store(row + j, x);
        mv = x > mv ? x : mv;
    }
    float mx = neg_inf;
    for (std::size_t l = 0; l < W; ++l) mx = std::max(mx, mv[l]);
    // exp(x - max), in place.
    const V m = splat(mx);
    for (std::size_t j = 0; j < nv; j += W) store(row + j, vexp(load(row + j) - m));
    // Zeros where later keys of the block would be read by the product with the values.
    for (std::size_t j = nv; j < zero_to; ++j) row[j] = 0.0f;
    // The sum in vec::reduce_all's order: 8 lanes, lane l adds the elements j = l (mod 8) in
    // order, then the lanes are added in order. The zeros past the row add nothing (every
    // exp is >= +0, so no sum is -0).
    using V8 = float __attribute__((vector_size(32)));
    V8 acc;
    std::memcpy(&acc, row, sizeof(V8));
    for (std::size_t j = 8; j < nv; j += 8) {
        V8 x;
        std::memcpy(&x, row + j, sizeof(V8));
        acc += x;
    }
    float total = acc[0];
    for (std::size_t l = 1; l < 8; ++l) total += acc[l];
    const V inv = splat(1.0f / total);
    for (std::size_t j = 0; j < nv; j += W) store(row + j, load(row + j) * inv);
}

void softmax_rows(float* S, std::size_t lds, std::size_t i0, std::size_t rows,
                  std::size_t zero_to, float divisor) {
    for (std::size_t r = 0; r < rows; ++r) softmax_row(S + r * lds, i0 + r + 1, zero_to, divisor);
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
