// Elementwise functions with PyTorch 1.13's CPU bits (elementwise.hpp): the vector formula with
// SLEEF for whole blocks of 16 elements, the scalar formula with libm for the tail.
#include "attn/core/elementwise.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <sleef.h>

// sleef.h declares the FMA variants only when compiled with FMA enabled; the library exports
// them, and they are chosen at run time on CPUs that have FMA (as functional.cpp does).
extern "C" float Sleef_expf1_u10purecfma(float);
extern "C" float Sleef_log1pf1_u10purecfma(float);
extern "C" float Sleef_logf1_u10purecfma(float);

namespace attn {

namespace {

const bool has_fma = __builtin_cpu_supports("fma");

float log1p_sleef(float x) { return has_fma ? Sleef_log1pf1_u10purecfma(x) : Sleef_log1pf1_u10purec(x); }

// cpu_kernel_vec's split (aten/src/ATen/native/cpu/Loops.h, vectorized_loop): blocks of
// 2 * Vectorized<float>::size() = 16 elements through `vec`, the rest through `scalar`.
constexpr std::size_t kBlock = 16;

template <class Vec, class Scalar>
void split_loop(const float* x, std::size_t n, float* y, Vec vec, Scalar scalar) {
    const std::size_t blocks = n - n % kBlock;
    for (std::size_t i = 0; i < blocks; ++i) y[i] = vec(x[i]);
    for (std::size_t i = blocks; i < n; ++i) y[i] = scalar(x[i]);
}

template <class F>
Tensor map(const Tensor& x, F into) {
    const Shape s = shape_of(x);  // refuses a shape that does not match the storage
    Tensor y = Tensor::from_shape(s);
    into(x.data(), x.size(), y.data());
    return y;
}

}  // namespace

float exp_torch(float x) { return has_fma ? Sleef_expf1_u10purecfma(x) : Sleef_expf1_u10purec(x); }

float log_torch(float x) { return has_fma ? Sleef_logf1_u10purecfma(x) : Sleef_logf1_u10purec(x); }

void sigmoid_into(const float* x, std::size_t n, float* y) {
    // vector: (0 - a).exp() + 1, reciprocal; scalar: 1 / (1 + std::exp(-a))
    split_loop(x, n, y, [](float a) { return 1.0f / (exp_torch(0.0f - a) + 1.0f); },
               [](float a) { return 1.0f / (1.0f + std::exp(-a)); });
}

void silu_into(const float* x, std::size_t n, float* y) {
    split_loop(x, n, y, [](float a) { return a / (1.0f + exp_torch(-a)); },
               [](float a) { return a / (1.0f + std::exp(-a)); });
}

void softplus_into(const float* x, std::size_t n, float* y) {
    split_loop(x, n, y, [](float a) { return a > 20.0f ? a : log1p_sleef(exp_torch(a)); },
               [](float a) { return a > 20.0f ? a : std::log1p(std::exp(a)); });
}

namespace {

// The level structure of multi_row_sum (SumKernel.cpp) for `n` values: the values are added in
// order into level 0; after every 2^level_power values level 0 is carried into level 1, and
// level 1 into level 2 when 2^(2 * level_power) values are done, and so on; at the end the
// levels are added into level 0. `add(acc, i)` adds value i into acc.
template <class Acc, class Add>
Acc cascade(std::size_t n, Acc zero, Add add) {
    std::size_t ceil_log2 = 1;
    if (n > 2) ceil_log2 = 64 - static_cast<std::size_t>(__builtin_clzll(static_cast<unsigned long long>(n - 1)));
    const std::size_t level_power = std::max<std::size_t>(4, ceil_log2 / 4);
    const std::size_t level_step = std::size_t{1} << level_power, level_mask = level_step - 1;
    std::array<Acc, 4> acc;
    acc.fill(zero);
    std::size_t i = 0;
    while (i + level_step <= n) {
        for (std::size_t j = 0; j < level_step; ++j, ++i) add(acc[0], i);
        for (std::size_t j = 1; j < 4; ++j) {
            acc[j] += acc[j - 1];
            acc[j - 1] = zero;
            if ((i & (level_mask << (j * level_power))) != 0) break;
        }
    }
    for (; i < n; ++i) add(acc[0], i);
    for (std::size_t j = 1; j < 4; ++j) acc[0] += acc[j];
    return acc[0];
}

// row_sum (SumKernel.cpp): the n values seen as [n / 4, 4]; each of the 4 columns cascaded,
// the leftover n mod 4 values added to column 0, then the columns added in order.
template <class Acc, class Load>
Acc row_sum(std::size_t n, Acc zero, Load load) {
    const std::size_t groups = n / 4;
    std::array<Acc, 4> partial;
    for (std::size_t k = 0; k < 4; ++k)
        partial[k] = cascade(groups, zero, [&](Acc& acc, std::size_t m) { acc += load(4 * m + k); });
    for (std::size_t i = 4 * groups; i < n; ++i) partial[0] += load(i);
    for (std::size_t k = 1; k < 4; ++k) partial[0] += partial[k];
    return partial[0];
}

// Eight float lanes, added lane by lane (a Vectorized<float> accumulator).
struct Lanes {
    std::array<float, 8> v{};
    Lanes& operator+=(const Lanes& o) {
        for (std::size_t l = 0; l < 8; ++l) v[l] += o.v[l];
        return *this;
    }
};

}  // namespace

float sum_torch(const float* x, std::size_t n) {
    if (n < 8)  // scalar_inner_sum
        return row_sum(n, 0.0f, [&](std::size_t i) { return x[i]; });
    // vectorized_inner_sum: row_sum over whole vectors, then the leftover elements, then lanes
    const std::size_t vectors = n / 8;
    const Lanes lanes = row_sum(vectors, Lanes{}, [&](std::size_t v) {
        Lanes l;
        for (std::size_t k = 0; k < 8; ++k) l.v[k] = x[v * 8 + k];
        return l;
    });
    float total = 0.0f;
    for (std::size_t k = vectors * 8; k < n; ++k) total += x[k];
    for (const float l : lanes.v) total += l;
    return total;
}

void sum_rows_torch(const float* x, std::size_t rows, std::size_t cols, float* out) {
    // vectorized_outer_sum (cols >= 8) cascades blocks of 32 columns over the rows and sums the
    // other columns by row_sum; scalar_outer_sum (cols < 8) cascades blocks of 4 columns.
    // Columns are independent: each group runs on whole rows (the same additions in the same
    // order per column), the compiler vectorising across columns.
    const std::size_t block = cols >= 8 ? 32 : 4;
    const std::size_t cascaded = cols - cols % block;
    thread_local std::vector<float> work;  // 4 accumulator rows, reused (grows only)
    if (work.size() < 4 * cols) work.resize(4 * cols);
    float* acc[4] = {work.data(), work.data() + cols, work.data() + 2 * cols, work.data() + 3 * cols};
    const auto add_rows = [&](float* into, std::size_t c0, std::size_t c1, std::size_t first,
                              std::size_t last, std::size_t step) {
        for (std::size_t i = first; i < last; i += step)
            for (std::size_t c = c0; c < c1; ++c) into[c] += x[i * cols + c];
    };
    const auto carry = [&](float* into, float* from, std::size_t c0, std::size_t c1) {
        for (std::size_t c = c0; c < c1; ++c) into[c] += from[c], from[c] = 0.0f;
    };
    // cascade over rows r = base + step * m, m < n, into acc[0] for columns [c0, c1)
    const auto cascade_rows = [&](std::size_t c0, std::size_t c1, std::size_t base, std::size_t step,
                                  std::size_t n, float* result) {
        for (auto* a : acc) std::fill(a + c0, a + c1, 0.0f);
        std::size_t ceil_log2 = 1;
        if (n > 2) ceil_log2 = 64 - static_cast<std::size_t>(__builtin_clzll(static_cast<unsigned long long>(n - 1)));
        const std::size_t level_power = std::max<std::size_t>(4, ceil_log2 / 4);
        const std::size_t level_step = std::size_t{1} << level_power, level_mask = level_step - 1;
        std::size_t m = 0;
        while (m + level_step <= n) {
            add_rows(acc[0], c0, c1, base + step * m, base + step * (m + level_step), step);
            m += level_step;
            for (std::size_t j = 1; j < 4; ++j) {
                carry(acc[j], acc[j - 1], c0, c1);
                if ((m & (level_mask << (j * level_power))) != 0) break;
            }
        }
        add_rows(acc[0], c0, c1, base + step * m, base + step * n, step);
        for (std::size_t c = c0; c < c1; ++c) result[c] = ((acc[0][c] + acc[1][c]) + acc[2][c]) + acc[3][c];
    };
    if (cascaded > 0) cascade_rows(0, cascaded, 0, 1, rows, out);
    if (cascaded == cols) return;
    // row_sum for the other columns: rows 4m + k into partial k, leftovers into partial 0
    thread_local std::vector<float> partial;
    if (partial.size() < 4 * cols) partial.resize(4 * cols);
    const std::size_t groups = rows / 4;
    for (std::size_t k = 0; k < 4; ++k) cascade_rows(cascaded, cols, k, 4, groups, partial.data() + k * cols);
    float* p0 = partial.data();
    add_rows(p0, cascaded, cols, 4 * groups, rows, 1);
    for (std::size_t k = 1; k < 4; ++k)
        for (std::size_t c = cascaded; c < cols; ++c) p0[c] += partial[k * cols + c];
    std::copy(p0 + cascaded, p0 + cols, out + cascaded);
}

Tensor relu(const Tensor& x) {
    return map(x, [](const float* in, std::size_t n, float* out) {
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i] < 0.0f ? 0.0f : in[i];
    });
}

Tensor sigmoid(const Tensor& x) { return map(x, sigmoid_into); }

Tensor silu(const Tensor& x) { return map(x, silu_into); }

Tensor softplus(const Tensor& x, float beta, float threshold) {
    if (beta == 1.0f && threshold == 20.0f) return map(x, softplus_into);
    return map(x, [&](const float* in, std::size_t n, float* out) {
        split_loop(in, n, out,
                   [&](float a) { return a * beta > threshold ? a : log1p_sleef(exp_torch(a * beta)) / beta; },
                   [&](float a) { return a * beta > threshold ? a : std::log1p(std::exp(a * beta)) / beta; });
    });
}

Tensor log(const Tensor& x) {
    return map(x, [](const float* in, std::size_t n, float* out) {
        for (std::size_t i = 0; i < n; ++i) out[i] = log_torch(in[i]);
    });
}

}  // namespace attn
