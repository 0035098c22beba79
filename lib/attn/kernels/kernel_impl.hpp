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

// The softmax of one block of NR queries, stored transposed: St[r * NR + c] is the score of
// query i0 + c against key j0 + r. Lane c of a vector is query c, and every step below is the
// step-by-step path's float operation on that query's row (attention/sdpa_step.cpp): the
// scaling, the additive mask, -inf where the key is hidden, PyTorch's softmax.
void softmax_block(float* St, const SoftmaxBlock& b) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    const std::size_t rows = b.rows;
    V lane;  // c, the lane's query offset within its vector
    for (std::size_t l = 0; l < W; ++l) lane[l] = float(l);
    const V s = splat(b.scale), ninf = splat(neg_inf);
    // Scale, bias, mask, and the maximum. `x > m ? x : m` is std::max(m, x) lane by lane
    // (a NaN never replaces the maximum).
    V mx[NV];
    for (std::size_t v = 0; v < NV; ++v) mx[v] = ninf;
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = St + r * NR;
        const long j = long(b.j0 + r);
        for (std::size_t v = 0; v < NV; ++v) {
            V x = load(row + v * W);
            x = b.divide ? x / s : x * s;
            if (b.bias) x = x + load(b.bias + r * NR + v * W);
            // Query c = v*W + l sees key j when j - diag <= c (causal) and
            // c < j - diag + window (window); the bounds clamped to small floats.
            const long base = long(v * W);
            if (b.causal) {
                const long first = std::clamp(j - b.diag - base, -1L, long(W) + 1);
                x = lane < splat(float(first)) ? ninf : x;
            }
            if (b.window) {
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
    // j = l (mod 8) in order, then the 8 are added in order. Masked keys add exact zeros
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
        V total = acc[0][v];
        for (std::size_t l = 1; l < 8; ++l) total = total + acc[l][v];
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
