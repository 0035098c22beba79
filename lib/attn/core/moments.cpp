// mean and var over one dimension (functional.hpp), in PyTorch 1.13's CPU order: the mean is
// the sum divided by the count, the variance Welford's running update in double.
#include <limits>
#include <string>

#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"

namespace attn {

namespace {

// [outer, len, inner] around dimension `dim` of `s`, and the result's shape.
struct AroundDim {
    std::size_t outer = 1, len = 0, inner = 1;
    Shape out;
};

AroundDim around_dim(const char* where, const Shape& s, long dim, bool keepdim) {
    AroundDim a;
    const std::size_t d = wrap_dim(where, dim, s.size());
    a.outer = numel(Shape(s.begin(), s.begin() + static_cast<long>(d)));
    a.inner = numel(Shape(s.begin() + static_cast<long>(d) + 1, s.end()));
    a.len = s[d];
    a.out = s;
    if (keepdim) a.out[d] = 1;
    else a.out.erase(a.out.begin() + static_cast<long>(d));
    check_allocation(where, a.out);
    return a;
}

}  // namespace

namespace detail {

float welford_var(const float* x, std::size_t n, std::size_t stride, std::size_t correction) {
    // WelfordOps::reduce (aten/src/ATen/native/SharedReduceOps.h) with acc_scalar_t = double.
    double mean = 0.0, m2 = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double v = x[i * stride];
        const double delta = v - mean;
        mean += delta / static_cast<double>(i + 1);
        m2 += delta * (v - mean);
    }
    // WelfordOps::project: divisor = nf > correction ? nf - correction : 0.
    const double divisor = n > correction ? static_cast<double>(n - correction) : 0.0;
    return static_cast<float>(m2 / divisor);
}

}  // namespace detail

Tensor mean(const Tensor& x, long dim, bool keepdim) {
    const AroundDim a = around_dim("mean", shape_of(x), dim, keepdim);
    Tensor y = sum(x, dim, keepdim);
    const auto count = static_cast<float>(a.len);
    float* d = y.data();
    for (std::size_t i = 0; i < y.size(); ++i) d[i] = d[i] / count;  // .div_(dim_prod)
    return y;
}

Tensor var(const Tensor& x, long dim, bool unbiased, bool keepdim) {
    const AroundDim a = around_dim("var", shape_of(x), dim, keepdim);
    Tensor y = Tensor::from_shape(a.out);
    for (std::size_t o = 0; o < a.outer; ++o)
        for (std::size_t i = 0; i < a.inner; ++i)
            y.data()[o * a.inner + i] =
                a.len == 0 ? std::numeric_limits<float>::quiet_NaN()
                           : detail::welford_var(x.data() + o * a.len * a.inner + i, a.len, a.inner,
                                                 unbiased ? 1 : 0);
    return y;
}

}  // namespace attn
