/// @file softmax.cpp
/// @brief softmax as PyTorch's CPU kernel computes it (row maximum, SLEEF's exp, the sum in its
/// lane order), the naive and the masked softmax, and repeat_interleave / repeat: the part of
/// attn/core/functional.hpp that attention's weights and grouped heads need.
#include "attn/core/functional.hpp"
#include "attn/core/elementwise.hpp"
#include "attn/core/reduce.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

namespace attn {

namespace {

// x.repeat_interleave(repeats, dim) (interleave) or x.repeat(...) along dim: the output's
// slices along dim are the input's, each repeated in place or the whole run tiled.
Tensor repeat_impl(const std::string& where, const Tensor& x, std::size_t repeats, long dim,
                   bool interleave) {
    if (repeats == 0) throw std::invalid_argument(where + ": expected repeats > 0, got 0");
    const Shape s = shape_of(x);
    const std::size_t d = wrap_dim(where, dim, s.size());
    Shape out = s;
    if (__builtin_mul_overflow(s[d], repeats, &out[d]))
        throw std::length_error(where + ": " + std::to_string(s[d]) + " * " + std::to_string(repeats) +
                                " repeats of dimension " + std::to_string(d) + " of " + shape_str(s) +
                                " overflows");
    check_allocation(where, out);  // refuses sizes that cannot exist, before any copy
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    const std::size_t n = s[d];
    Tensor y = Tensor::from_shape(out);
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t r = 0; r < repeats; ++r) {
                const std::size_t slot = interleave ? i * repeats + r : r * n + i;
                std::copy_n(x.data() + (o * n + i) * inner, inner,
                            y.data() + (o * n * repeats + slot) * inner);
            }
    return y;
}

// One row of PyTorch's CPU softmax over the last dimension (`_vec_softmax_lastdim` in
// aten/src/ATen/native/cpu/SoftMaxKernel.cpp, AVX2 build): the row maximum; exp(x - max)
// with SLEEF's expf_u10 (what `Vectorized<float>::exp` calls: exp_torch, an FMA algorithm; on a
// CPU without FMA the same algorithm without fused operations, which may differ in the last
// bit); their sum in PyTorch's `vec::reduce_all` order (detail::reduce_all_sum: 8 lanes
// accumulated vector by vector, then the lanes' tree; rows shorter than 8 summed in order);
// then multiplication by 1 / sum.
void softmax_row(float* row, std::size_t n) {
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
    exp_torch_shifted(row, n, mx);  // all -inf: exp(NaN) = NaN, as PyTorch
    const float inv = 1.0f / detail::reduce_all_sum(row, n);
    for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
}

}  // namespace

namespace detail {

Tensor softmax_inner(const Tensor& x, std::size_t dim, bool log) {
    const Shape s = shape_of(x);
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < dim; ++i) outer *= s[i];
    for (std::size_t i = dim + 1; i < s.size(); ++i) inner *= s[i];
    const std::size_t n = s[dim];
    Tensor y = x;
    if (y.size() == 0) return y;
    constexpr std::size_t lanes = 8;  // AVX2's Vectorized<float>
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < inner; ++i) {
            // PyTorch's kernel walks the inner positions 8 at a time; the last inner % 8 of
            // each outer row take its scalar path (std::exp, glibc's expf).
            const bool vector = (i / lanes) * lanes + lanes <= inner;
            const float* in = x.data() + o * n * inner + i;
            float* out = y.data() + o * n * inner + i;
            float mx = in[0];
            for (std::size_t d = 1; d < n; ++d) {
                const float v = in[d * inner];
                mx = vector ? (std::isnan(mx) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN()
                                                               : std::max(mx, v))  // vec::maximum
                            : std::max(mx, v);
            }
            float sum = 0.0f;
            for (std::size_t d = 0; d < n; ++d) {
                const float e = vector ? exp_torch(in[d * inner] - mx) : std::exp(in[d * inner] - mx);
                if (!log) out[d * inner] = e;
                sum += e;
            }
            // log_softmax: (x - max) - log(sum), the log SLEEF's for every position (the
            // kernel maps it over the sums as vectors); softmax: e / sum, a division.
            const float log_sum = log ? log_torch(sum) : 0.0f;
            for (std::size_t d = 0; d < n; ++d)
                out[d * inner] = log ? (in[d * inner] - mx) - log_sum : out[d * inner] / sum;
        }
    return y;
}

}  // namespace detail

Tensor softmax(const Tensor& x, long dim) { return detail::softmax_along("softmax", x, dim, false, softmax_row); }

Tensor softmax_naive(const Tensor& x) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error("softmax_naive", "at least 1-D", s);
    Tensor e = attn::exp(x);
    return Tensor(e / attn::sum(e, -1, true));
}

Tensor masked_softmax(const Tensor& x) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error("masked_softmax", "at least 1-D", s);
    Tensor y = attn::softmax(x, -1);
    const std::size_t n = s.back();
    const std::size_t rows = n ? x.size() / n : 0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * n;
        bool all_masked = true;
        for (std::size_t j = 0; j < n && all_masked; ++j)
            all_masked = std::isinf(in[j]) && in[j] < 0;
        // A query with nothing to attend to gets zero weights instead of 0/0 = NaN.
        if (all_masked)
            for (std::size_t j = 0; j < n; ++j) y.data()[r * n + j] = 0.0f;
    }
    return y;
}

Tensor repeat_interleave(const Tensor& x, std::size_t repeats, long dim) {
    return repeat_impl("repeat_interleave", x, repeats, dim, true);
}

Tensor repeat_along(const Tensor& x, std::size_t repeats, long dim) {
    return repeat_impl("repeat", x, repeats, dim, false);
}

}  // namespace attn
