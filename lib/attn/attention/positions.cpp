// The position schemes' pure functions (positions.hpp): the sinusoidal table, RoPE's
// frequencies, tables and rotation, ALiBi's slopes and bias. Every float32 operation is
// PyTorch's, in its order; the trigonometric kernels are in positions_trig.cpp.
#include "attn/attention/positions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <sleef.h>

#include "attn/core/elementwise.hpp"
#include "attn/core/require.hpp"
#include "attn/kernels/fused_attention.hpp"

// sleef.h declares the FMA variants only when compiled with FMA enabled; the library exports
// them.
extern "C" float Sleef_sinf1_u10purecfma(float);
extern "C" float Sleef_cosf1_u10purecfma(float);

namespace attn {

namespace {

// Float32 positions are exact up to 2^24.
constexpr std::size_t max_positions = std::size_t{1} << 24;

std::string num(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

// The rows of a RoPE table pair: [context_length, head_dim] each, same shapes, width hd.
std::size_t table_rows(const char* where, const Tensor& cos, const Tensor& sin, std::size_t hd) {
    const Shape c = shape_of(cos), s = shape_of(sin);
    if (c.size() != 2 || c[1] != hd)
        throw_shape_error(std::string(where) + " (cos)", "[context_length, " + std::to_string(hd) + "]", c);
    check_same_shape(std::string(where) + " (sin)", c, s);
    return c[0];
}

// Checks that positions start .. start + T - 1 lie in a table of `rows` positions.
void check_table_positions(const char* where, std::size_t start, std::size_t T, std::size_t rows) {
    if (T == 0) return;
    if (start >= rows || T > rows - start)
        throw std::invalid_argument(std::string(where) + ": positions " + std::to_string(start) + ".." +
                                    (start > std::numeric_limits<std::size_t>::max() - T
                                         ? std::string("(overflow)")
                                         : std::to_string(start + T - 1)) +
                                    " are beyond the precomputed table of " + std::to_string(rows) +
                                    " positions (precompute_rope_params' context_length)");
}

void check_even_head_dim(const char* where, std::size_t hd) {
    if (hd == 0 || hd % 2 != 0)
        throw std::invalid_argument(std::string(where) + ": Head dimension must be even, got head_dim = " +
                                    std::to_string(hd));
}

// One token's head: y = x * cos + cat(-x2, x1) * sin, or its transpose
// grad * cos + cat(grad2 * sin2, -(grad1 * sin1)); `y` may not alias `x`.
void rotate(const float* x, float* y, const float* c, const float* s, std::size_t hd, bool transpose) {
    const std::size_t h = hd / 2;
    if (!transpose) {
        for (std::size_t i = 0; i < h; ++i) y[i] = x[i] * c[i] + -x[i + h] * s[i];
        for (std::size_t i = h; i < hd; ++i) y[i] = x[i] * c[i] + x[i - h] * s[i];
    } else {
        for (std::size_t i = 0; i < h; ++i) y[i] = x[i] * c[i] + x[i + h] * s[i + h];
        for (std::size_t i = h; i < hd; ++i) y[i] = x[i] * c[i] + -(x[i - h] * s[i - h]);
    }
}

Tensor rope_tensor(const char* where, const Tensor& x, const Tensor& cos, const Tensor& sin,
                   std::size_t offset, bool transpose) {
    const Shape s = shape_of(x);
    if (s.size() < 2) throw_shape_error(std::string(where) + " (x)", "[..., seq_len, head_dim]", s);
    const std::size_t hd = s.back(), T = s[s.size() - 2];
    check_even_head_dim(where, hd);
    check_table_positions(where, offset, T, table_rows(where, cos, sin, hd));
    Tensor y = Tensor::from_shape(s);
    const std::size_t rows = T == 0 ? 0 : x.size() / hd;
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t pos = offset + r % T;
        rotate(x.data() + r * hd, y.data() + r * hd, cos.data() + pos * hd, sin.data() + pos * hd, hd, transpose);
    }
    return y;
}

void check_theta(double theta_base) {
    if (!std::isfinite(theta_base) || theta_base <= 0.0)
        throw std::invalid_argument("precompute_rope_params: expected a finite theta_base > 0, got " + num(theta_base));
}

}  // namespace

Tensor sinusoidal_encoding(std::size_t max_len, std::size_t d_model) {
    if (d_model == 0 || d_model % 2 != 0)
        throw std::invalid_argument("sinusoidal_encoding: d_model must be even and > 0 (sin and cos fill "
                                    "alternate columns), got d_model = " + std::to_string(d_model));
    if (max_len > max_positions)
        throw std::invalid_argument("sinusoidal_encoding: positions are float32, exact up to 2^24 = 16777216, got max_len = " +
                                    std::to_string(max_len));
    check_allocation("sinusoidal_encoding (pe [max_len, d_model])", Shape{max_len, d_model});
    const std::size_t h = d_model / 2;
    // div_term has d_model / 2 elements even when there is no position (max_len 0).
    check_allocation("sinusoidal_encoding (div_term [d_model / 2])", Shape{h});
    // div_term = exp(arange(0, d_model, 2) * -(log(10000.0) / d_model)): the Python double
    // rounded to float32 once, as PyTorch takes a scalar into a float32 product.
    const float factor = static_cast<float>(-(std::log(10000.0) / static_cast<double>(d_model)));
    std::vector<float> div_term(h);
    for (std::size_t i = 0; i < h; ++i) div_term[i] = exp_torch(static_cast<float>(2 * i) * factor);
    // position * div_term: [max_len, d_model / 2], then sin and cos of it as one tensor each.
    std::vector<float> angles(max_len * h), sines(max_len * h), cosines(max_len * h);
    for (std::size_t p = 0; p < max_len; ++p)
        for (std::size_t i = 0; i < h; ++i) angles[p * h + i] = static_cast<float>(p) * div_term[i];
    detail::torch_cos_sin(angles.data(), angles.size(), cosines.data(), sines.data());
    Tensor pe = Tensor::from_shape({max_len, d_model});
    for (std::size_t p = 0; p < max_len; ++p)
        for (std::size_t i = 0; i < h; ++i) {
            pe(p, 2 * i) = sines[p * h + i];      // pe[:, 0::2] = sin(position * div_term)
            pe(p, 2 * i + 1) = cosines[p * h + i];  // pe[:, 1::2] = cos(position * div_term)
        }
    return pe;
}

void RopeFreqConfig::validate(const char* where) const {
    const auto bad = [&](const char* field, double v, const char* rule) {
        throw std::invalid_argument(std::string(where) + ": freq_config " + field + " must be " + rule + ", got " + num(v));
    };
    if (!std::isfinite(factor) || factor <= 0.0) bad("factor", factor, "finite and > 0");
    if (!std::isfinite(original_context_length) || original_context_length <= 0.0)
        bad("original_context_length", original_context_length, "finite and > 0");
    if (!std::isfinite(low_freq_factor) || low_freq_factor <= 0.0) bad("low_freq_factor", low_freq_factor, "finite and > 0");
    if (!std::isfinite(high_freq_factor) || !(high_freq_factor > low_freq_factor))
        bad("high_freq_factor", high_freq_factor, "finite and greater than low_freq_factor");
}

Tensor rope_inv_freq(std::size_t head_dim, double theta_base, const std::optional<RopeFreqConfig>& fc) {
    if (head_dim == 0 || head_dim % 2 != 0)
        throw std::invalid_argument("precompute_rope_params: Embedding dimension must be even, got head_dim = " +
                                    std::to_string(head_dim));
    check_theta(theta_base);
    if (fc) fc->validate("precompute_rope_params");
    const std::size_t h = head_dim / 2;
    check_allocation("precompute_rope_params (inv_freq [head_dim / 2])", Shape{h});
    const float base = static_cast<float>(theta_base), hd = static_cast<float>(head_dim);
    Tensor inv_freq = Tensor::from_shape({h});
    for (std::size_t i = 0; i < h; ++i) {
        // 1.0 / (theta_base ** (arange(0, hd, 2).float() / hd)): powf, then the reciprocal.
        const float exponent = static_cast<float>(2 * i) / hd;
        inv_freq(i) = 1.0f / std::pow(base, exponent);
    }
    if (!fc) return inv_freq;
    // His smoothing, each tensor operation in float32 with the Python scalars rounded to float32.
    const float factor = static_cast<float>(fc->factor);
    const float low_wavelen = static_cast<float>(fc->original_context_length / fc->low_freq_factor);
    const float high_wavelen = static_cast<float>(fc->original_context_length / fc->high_freq_factor);
    const float two_pi = static_cast<float>(2 * M_PI), ctx = static_cast<float>(fc->original_context_length);
    const float low = static_cast<float>(fc->low_freq_factor);
    const float span = static_cast<float>(fc->high_freq_factor - fc->low_freq_factor);
    for (std::size_t i = 0; i < h; ++i) {
        const float f = inv_freq(i);
        const float wavelen = two_pi / f;  // 2 * torch.pi / inv_freq
        const float scaled = f / factor;   // inv_freq / freq_config["factor"]
        const float smooth = (ctx / wavelen - low) / span;
        const float smoothed = (1.0f - smooth) * scaled + smooth * f;
        const bool medium = wavelen <= low_wavelen && wavelen >= high_wavelen;
        inv_freq(i) = medium ? smoothed : wavelen > low_wavelen ? scaled : f;
    }
    return inv_freq;
}

std::pair<Tensor, Tensor> precompute_rope_params(std::size_t head_dim, double theta_base,
                                                 std::size_t context_length,
                                                 const std::optional<RopeFreqConfig>& fc) {
    const Tensor inv_freq = rope_inv_freq(head_dim, theta_base, fc);
    if (context_length == 0 || context_length > max_positions)
        throw std::invalid_argument("precompute_rope_params: expected context_length in 1..2^24 (positions are "
                                    "float32), got " + std::to_string(context_length));
    check_allocation("precompute_rope_params (cos [context_length, head_dim])", Shape{context_length, head_dim});
    const std::size_t h = head_dim / 2;
    // angles = cat([positions[:, None] * inv_freq[None, :]] * 2, dim=1): [context_length, head_dim]
    Tensor angles = Tensor::from_shape({context_length, head_dim});
    for (std::size_t p = 0; p < context_length; ++p)
        for (std::size_t i = 0; i < h; ++i)
            angles(p, i) = angles(p, i + h) = static_cast<float>(p) * inv_freq(i);
    Tensor cos = Tensor::from_shape({context_length, head_dim}), sin = Tensor::from_shape({context_length, head_dim});
    detail::torch_cos_sin(angles.data(), angles.size(), cos.data(), sin.data());
    return {std::move(cos), std::move(sin)};
}

Tensor compute_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, std::size_t offset) {
    return rope_tensor("compute_rope", x, cos, sin, offset, false);
}

Tensor compute_rope_backward(const Tensor& grad, const Tensor& cos, const Tensor& sin, std::size_t offset) {
    return rope_tensor("compute_rope_backward", grad, cos, sin, offset, true);
}

void apply_rope_inplace(float* x, std::size_t B, std::size_t T, std::size_t ld, std::size_t num_heads,
                        std::size_t head_dim, const Tensor& cos, const Tensor& sin, std::size_t start,
                        bool transpose, std::size_t column) {
    const char* where = "RoPE";
    check_even_head_dim(where, head_dim);
    check_table_positions(where, start, T, table_rows(where, cos, sin, head_dim));
    const std::size_t width = checked_mul(num_heads, head_dim, "RoPE (num_heads * head_dim)");
    if (column > ld || width > ld - column)
        throw std::invalid_argument("RoPE: " + std::to_string(num_heads) + " heads of " + std::to_string(head_dim) +
                                    " columns from column " + std::to_string(column) + " do not fit in rows of " +
                                    std::to_string(ld));
    if (T == 0 || num_heads == 0) return;  // no 2^40 walks over empty rows (a batch of empty sequences)
    std::vector<float> row(head_dim);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const float* c = cos.data() + (start + t) * head_dim;
            const float* s = sin.data() + (start + t) * head_dim;
            for (std::size_t h = 0; h < num_heads; ++h) {
                float* head = x + (b * T + t) * ld + column + h * head_dim;
                std::copy_n(head, head_dim, row.data());
                rotate(row.data(), head, c, s, head_dim, transpose);
            }
        }
}

Tensor alibi_slopes(std::size_t num_heads) {
    require_positive("alibi_slopes", "num_heads", num_heads);
    check_allocation("alibi_slopes ([num_heads])", Shape{num_heads});
    // Their recursion takes twice the closest power of 2 below n: that too must be a count.
    check_allocation("alibi_slopes (the slopes of 2 * the closest power of 2)", Shape{2, num_heads});
    // Press et al.'s get_slopes in Python doubles: start = 2 ** (-2 ** -(log2(n) - 3)),
    // slopes start * start ** i; for n not a power of 2, those of the closest power p and
    // every other slope of 2p.
    const auto power_of_2 = [](double n) {
        const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(n) - 3.0)));
        std::vector<double> s;
        for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) s.push_back(start * std::pow(start, double(i)));
        return s;
    };
    std::vector<double> slopes;
    const double n = static_cast<double>(num_heads);
    if (std::floor(std::log2(n)) == std::log2(n)) {
        slopes = power_of_2(n);
    } else {
        const double p = std::pow(2.0, std::floor(std::log2(n)));
        slopes = power_of_2(p);
        const std::vector<double> twice = power_of_2(2 * p);
        for (std::size_t i = 0; i < num_heads - static_cast<std::size_t>(p); ++i) slopes.push_back(twice[2 * i]);
    }
    Tensor out = Tensor::from_shape({num_heads});
    for (std::size_t h = 0; h < num_heads; ++h) out(h) = static_cast<float>(slopes[h]);
    return out;
}

Tensor alibi_bias(const Tensor& slopes, std::size_t Tq, std::size_t Tk, std::size_t query_start,
                  std::size_t key_start) {
    const Shape s = shape_of(slopes);
    if (s.size() != 1) throw_shape_error("alibi_bias (slopes)", "[num_heads]", s);
    const Shape shape{s[0], Tq, Tk};
    check_allocation("alibi_bias ([num_heads, Tq, Tk])", shape);
    // Positions take part in signed differences, as in the core (SDPAOptions): below 2^62.
    constexpr std::size_t max_position = std::size_t{1} << 62;
    if (query_start >= max_position || key_start >= max_position || Tq >= max_position - query_start ||
        Tk >= max_position - key_start)
        throw std::invalid_argument("alibi_bias: expected positions below 2^62, got queries from " +
                                    std::to_string(query_start) + " and keys from " + std::to_string(key_start));
    Tensor bias = Tensor::from_shape(shape);
    if (bias.size() == 0) return bias;  // no 2^40 walks over empty rows
    float* out = bias.data();
    for (std::size_t h = 0; h < s[0]; ++h)
        for (std::size_t i = 0; i < Tq; ++i)
            for (std::size_t j = 0; j < Tk; ++j)
                *out++ = fast::alibi_term(slopes(h), long(query_start + i) - long(key_start + j));
    return bias;
}

namespace detail {

// In positions_avx2.cpp, compiled with -mavx2 -mfma: PyTorch's AVX2 kernel.
void cos_sin_avx2(const float* x, std::size_t n, float* c, float* s);

void torch_cos_sin(const float* x, std::size_t n, float* c, float* s) {
    static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2) return cos_sin_avx2(x, n, c, s);
    static const bool has_fma = __builtin_cpu_supports("fma");
    for (std::size_t i = 0; i < n; ++i) {
        if (c) c[i] = has_fma ? Sleef_cosf1_u10purecfma(x[i]) : Sleef_cosf1_u10purec(x[i]);
        if (s) s[i] = has_fma ? Sleef_sinf1_u10purecfma(x[i]) : Sleef_sinf1_u10purec(x[i]);
    }
}

}  // namespace detail

}  // namespace attn
