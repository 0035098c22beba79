// exp(x - shift) of a row as PyTorch's AVX2 kernels compute it (elementwise.hpp's
// exp_torch_shifted): SLEEF's Sleef_expf8_u10avx2 on 8 lanes at a time, the last group padded
// with zeros. Every lane is computed on its own (no choice is made for the 8 lanes together),
// so each element has the bits of the one-lane Sleef_expf1_u10purecfma. Compiled with -mavx2
// -mfma -ffp-contract=off (lib/attn/meson.build); called only when the CPU has both.
#include <algorithm>
#include <cstddef>

#include <immintrin.h>
#include <sleef.h>

namespace attn::detail {

void exp_shifted_avx2(float* x, std::size_t n, float shift) {
    const __m256 s = _mm256_set1_ps(shift);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
    if (i == n) return;
    alignas(32) float tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::copy(x + i, x + n, tail);
    _mm256_store_ps(tail, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_load_ps(tail), s)));
    std::copy_n(tail, n - i, x + i);
}

}  // namespace attn::detail
