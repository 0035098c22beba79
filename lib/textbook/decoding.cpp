#include "textbook/decoding.hpp"

#include <algorithm>
#include <cmath>

namespace textbook {

using namespace attn;

DecodeComparison compare_decoding(const BaseSelfAttention& attention, const Tensor& prompt,
                                  const Tensor& tokens, std::size_t chunk) {
    DecodeComparison c;
    c.cached = decode_with_cache(attention, prompt, tokens, chunk);
    c.recomputed = decode_without_cache(attention, prompt, tokens, chunk);
    const std::size_t B = tokens.shape()[0], N = tokens.shape()[1], E = tokens.shape()[2];
    c.max_abs_diff.assign(N, 0.0f);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t e = 0; e < E; ++e) {
                const float d = std::fabs(c.cached(b, n, e) - c.recomputed(b, n, e));
                // NaN must not hide behind max(): it is the largest difference there is.
                c.max_abs_diff[n] = std::isnan(d) ? d : std::max(c.max_abs_diff[n], d);
                if (std::isnan(c.max_abs_diff[n])) break;
            }
    c.cache_length = prompt.shape()[1] + N;
    return c;
}

}  // namespace textbook
