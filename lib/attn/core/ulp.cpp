#include "attn/core/ulp.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace attn {

std::int64_t ulp_distance(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return (std::isnan(a) && std::isnan(b)) ? 0 : std::numeric_limits<std::int64_t>::max();
    // Sign-magnitude bits to one ordered line: -x maps to -|bits|, so -0 and +0 both map to 0.
    auto ordered = [](float f) {
        std::int32_t i;
        std::memcpy(&i, &f, sizeof i);
        return i < 0 ? -static_cast<std::int64_t>(i & 0x7fffffff) : static_cast<std::int64_t>(i);
    };
    const std::int64_t d = ordered(a) - ordered(b);
    return d < 0 ? -d : d;
}

std::int64_t max_ulp_distance(const Tensor& a, const Tensor& b) {
    check_same_shape("max_ulp_distance", shape_of(a), shape_of(b));
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, ulp_distance(a.data()[i], b.data()[i]));
    return worst;
}

double max_diff_in_ulps(const Tensor& a, const Tensor& b, float scale) {
    check_same_shape("max_diff_in_ulps", shape_of(a), shape_of(b));
    if (!(std::isfinite(scale) && scale > 0.0f))
        throw std::invalid_argument("max_diff_in_ulps: expected a finite scale > 0, got " +
                                    std::to_string(scale));
    const double ulp = std::nextafter(scale, std::numeric_limits<float>::infinity()) - scale;
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])) / ulp);
    return worst;
}

}  // namespace attn
