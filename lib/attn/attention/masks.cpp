#include "attn/attention/masks.hpp"

#include <algorithm>
#include <stdexcept>

#include "attn/core/require.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/reduce.hpp"

namespace attn {

namespace {

// The top-left [T, T] corner of a square buffer [n, n] (or [1, 1, n, n]): its data and row
// stride, after the checks.
const float* corner(const std::string& where, const Tensor& buffer, std::size_t T,
                    std::size_t& ld) {
    // The buffer is a public member: it may have been replaced, so all of it is checked.
    Shape s = shape_of(buffer);
    const Shape original = s;
    while (s.size() > 2 && s.front() == 1) s.erase(s.begin());
    if (s.size() != 2 || s[0] != s[1])
        throw_shape_error(where + " (mask)", "a square [context_length, context_length]", original);
    if (T > s[0]) {
        throw std::invalid_argument(
            where + ": got " + std::to_string(T) + " tokens, but context_length is " +
            std::to_string(s[0]) + " (the causal mask has only that many rows; PyTorch fails here too)");
    }
    ld = s[1];
    return buffer.data();
}

}  // namespace

BoolTensor causal_mask_for(const std::string& where, const Tensor& mask, std::size_t T) {
    std::size_t ld = 0;
    const float* m = corner(where, mask, T, ld);
    BoolTensor out = xt::empty<bool>(Shape{T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) out(i, j) = m[i * ld + j] != 0.0f;
    return out;
}

Tensor causal_mask(std::size_t Sq, std::size_t Sk) {
    if (Sq > Sk) {
        throw std::invalid_argument("causal_mask: expected Sq <= Sk (new queries among the keys), got Sq = " +
                                    std::to_string(Sq) + ", Sk = " + std::to_string(Sk));
    }
    // tril(ones(Sk, Sk))[-Sq:, :]: row i is row Sk - Sq + i of the triangle, ones in columns
    // 0..Sk - Sq + i. Built directly: O(Sq * Sk), not O(Sk^2), since a decoding step calls it
    // with Sq = 1 and a long cache.
    Tensor mask = attn::zeros({Sq, Sk});
    for (std::size_t i = 0; i < Sq; ++i) std::fill_n(mask.data() + i * Sk, Sk - Sq + i + 1, 1.0f);
    return mask;
}

BoolTensor sliding_window_mask(std::size_t q_start, std::size_t Tq, std::size_t k_start,
                               std::size_t Tk, std::size_t window) {
    require_positive("sliding_window_mask", "window", window);
    check_allocation("sliding_window_mask", Shape{Tq, Tk}, sizeof(bool));
    BoolTensor m = xt::empty<bool>(Shape{Tq, Tk});
    for (std::size_t i = 0; i < Tq; ++i)
        for (std::size_t j = 0; j < Tk; ++j) {
            // diff = q_pos - k_pos, compared without a signed conversion that could wrap
            const std::size_t q = q_start + i, k = k_start + j;
            m(i, j) = q < k || q - k >= window;
        }
    return m;
}

BoolTensor causal_attn_mask(std::size_t T) {
    check_allocation("causal_attn_mask", Shape{T, T}, sizeof(bool));
    BoolTensor m = xt::empty<bool>(Shape{T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m(i, j) = j > i;
    return m;
}

BoolTensor key_padding_mask(const LongTensor& attention_mask) {
    const Shape s = shape_of(attention_mask);
    if (s.size() != 2) throw_shape_error("key_padding_mask (attention_mask)", "[B, Tk]", s);
    BoolTensor allow = xt::empty<bool>(Shape{s[0], 1, 1, s[1]});
    for (std::size_t i = 0; i < attention_mask.size(); ++i)
        allow.data()[i] = attention_mask.data()[i] != 0;
    return allow;
}

void BufferMask::apply(SDPAOptions& options) const {
    if (is_causal)
        options.is_causal = true;
    else
        options.attn_mask = &allow;
}

BufferMask read_buffer(const std::string& where, const Tensor& buffer, std::size_t T,
                       float hidden_value, std::size_t query_start) {
    const std::size_t P = query_start;
    const std::size_t Tk = checked_add(P, T, where + " (mask rows: query_start + T)");
    std::size_t ld = 0;
    const float* m = corner(where, buffer, Tk, ld);
    BufferMask out;
    // Row P + i is causal when keys 0..P+i are visible and P+i+1..Tk-1 hidden. Each row is
    // counted without a branch per element, so that the scan (T * Tk floats, at every forward)
    // is vectorized; a large buffer is scanned by all threads (at T = 1024 the 4 MB read alone
    // took about 2 % of a two-thread forward while the other thread waited).
    const bool nonzero_hides = hidden_value != 0.0f;
    const long rows = static_cast<long>(T);
    const bool shared = double(T) * double(Tk) >= double(detail::kParallelFloats);
    std::size_t wrong = 0;
#pragma omp parallel for schedule(static) reduction(+ : wrong) if (shared)
    for (long i = 0; i < rows; ++i) {
        const std::size_t q = P + std::size_t(i);
        const float* row = m + q * ld;
        if (nonzero_hides) {
            for (std::size_t j = 0; j <= q; ++j) wrong += row[j] != 0.0f;
            for (std::size_t j = q + 1; j < Tk; ++j) wrong += row[j] == 0.0f;
        } else {
            for (std::size_t j = 0; j <= q; ++j) wrong += row[j] == 0.0f;
            for (std::size_t j = q + 1; j < Tk; ++j) wrong += row[j] != 0.0f;
        }
    }
    out.is_causal = wrong == 0;
    if (!out.is_causal) {
        out.allow = xt::empty<bool>(Shape{T, Tk});
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < Tk; ++j) {
                const float v = m[(P + i) * ld + j];
                out.allow(i, j) = hidden_value != 0.0f ? v == 0.0f : v != 0.0f;
            }
    }
    return out;
}

}  // namespace attn
