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

// The causal softmax of one block of NR queries, stored transposed: St[j * NR + c] is the
// score of query i0 + c against key j, for keys j = 0..keys-1. Lane c of a vector is query
// c, and every step below is the step-by-step path's float operation on that query's row
// (see attn::fast::causal_softmax_columns).
void softmax_cols(float* St, std::size_t keys, std::size_t i0, float divisor) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    V lane;  // c, the lane's query offset
    for (std::size_t l = 0; l < W; ++l) lane[l] = float(l);
    const V d = splat(divisor), ninf = splat(neg_inf);
    // masked_fill(-inf) where key j > query i0 + c, then / divisor, and the maximum.
    // `x > m ? x : m` is std::max(m, x) lane by lane (a NaN never replaces the maximum).
    V mx[NV];
    for (std::size_t v = 0; v < NV; ++v) mx[v] = ninf;
    for (std::size_t j = 0; j < keys; ++j) {
        float* row = St + j * NR;
        for (std::size_t v = 0; v < NV; ++v) {
            V x = load(row + v * W);
            if (j > i0) {
                // query i0 + v*W + l sees key j only if j <= i0 + v*W + l
                const V first = splat(float(j - i0) - float(v * W));  // lanes below are masked
                x = lane < first ? ninf : x;
            }
            x = x / d;
            store(row + v * W, x);
            mx[v] = x > mx[v] ? x : mx[v];
        }
    }
    // exp(x - max), and the sum in vec::reduce_all's order: lane l of 8 adds the keys
    // j = l (mod 8) in order, then the 8 are added in order. Masked keys add exact zeros
    // (every exp is >= +0, so no partial sum is -0 and adding +0 changes nothing).
    V acc[8][NV];
    for (std::size_t l = 0; l < 8; ++l)
        for (std::size_t v = 0; v < NV; ++v) acc[l][v] = V{};
    std::size_t j = 0;
    for (; j + 8 <= keys; j += 8)
#pragma GCC unroll 8
        for (std::size_t l = 0; l < 8; ++l)
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) {
                float* p = St + (j + l) * NR + v * W;
                const V e = vexp(load(p) - mx[v]);
                store(p, e);
                acc[l][v] += e;
            }
    for (std::size_t l = 0; j + l < keys; ++l)
        for (std::size_t v = 0; v < NV; ++v) {
            float* p = St + (j + l) * NR + v * W;
            const V e = vexp(load(p) - mx[v]);
            store(p, e);
            acc[l][v] += e;
        }
    V inv[NV];
    for (std::size_t v = 0; v < NV; ++v) {
        V total = acc[0][v];
        for (std::size_t l = 1; l < 8; ++l) total = total + acc[l][v];
        inv[v] = splat(1.0f) / total;
    }
    // * (1 / sum)
    for (std::size_t k = 0; k < keys; ++k)
        for (std::size_t v = 0; v < NV; ++v) {
            float* p = St + k * NR + v * W;
            store(p, load(p) * inv[v]);
        }
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
