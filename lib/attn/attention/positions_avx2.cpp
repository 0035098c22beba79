// The cosines and sines of RoPE's and the sinusoidal tables as PyTorch's AVX2 kernel computes
// them (positions.hpp): vec::map over Vectorized<float>, 8 elements at a time, the last group
// padded with zeros (a partial load), each group through SLEEF's Sleef_cosf8_u10 and
// Sleef_sinf8_u10, whose argument reduction is chosen for all 8 lanes at once. Compiled with
// -mavx2 -mfma (lib/attn/meson.build); called only when the CPU has both.
#include <algorithm>
#include <cstddef>

#include <immintrin.h>
#include <sleef.h>

namespace attn::detail {

void cos_sin_avx2(const float* x, std::size_t n, float* c, float* s) {
    for (std::size_t i = 0; i < n; i += 8) {
        const std::size_t m = std::min<std::size_t>(8, n - i);
        alignas(32) float in[8] = {0, 0, 0, 0, 0, 0, 0, 0}, out[8];
        std::copy_n(x + i, m, in);
        const __m256 v = _mm256_load_ps(in);
        if (c) {
            _mm256_store_ps(out, Sleef_cosf8_u10avx2(v));
            std::copy_n(out, m, c + i);
        }
        if (s) {
            _mm256_store_ps(out, Sleef_sinf8_u10avx2(v));
            std::copy_n(out, m, s + i);
        }
    }
}

}  // namespace attn::detail
