/// @file print_numpy.cpp
/// @brief NumPy's `str(array)` for float32: a port of NumPy 1.24's
/// `numpy/core/arrayprint.py` with the Dragon4 digit generator of
/// `numpy/core/src/multiarray/dragon4.c`, function by function.
#include "attn/print/numpy.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/print/bigint.hpp"
#include "attn/print/common.hpp"

namespace attn {

namespace {

using namespace print_detail;

// ============================================================================================
// NumPy: Dragon4 (numpy/core/src/multiarray/dragon4.c), float32 only
// ============================================================================================

/// The decomposition Dragon4 works on: value = mantissa * 2^exponent.
struct Float32Parts {
    bool negative = false;
    bool nan = false;
    bool inf = false;
    std::uint32_t mantissa = 0;
    int exponent = 0;
    int mantissa_bit = 0;
    bool unequal_margins = false;
};

Float32Parts decompose(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    Float32Parts p;
    const std::uint32_t frac = bits & 0x7FFFFFu;
    const std::uint32_t expo = (bits >> 23) & 0xFFu;
    p.negative = (bits >> 31) != 0;
    if (expo == 0xFFu) {
        p.nan = frac != 0;
        p.inf = frac == 0;
        return p;
    }
    if (expo != 0) {
        p.mantissa = (1u << 23) | frac;
        p.exponent = static_cast<int>(expo) - 127 - 23;
        p.mantissa_bit = 23;
        p.unequal_margins = (expo != 1) && (frac == 0);
    } else {
        p.mantissa = frac;
        p.exponent = 1 - 127 - 23;
        int bit = 0;
        for (std::uint32_t m = frac; m > 1; m >>= 1) ++bit;
        p.mantissa_bit = bit;
        p.unequal_margins = false;
    }
    return p;
}

enum class Cutoff { TotalLength, FractionLength };
enum class Trim { None, Zeros, LeaveOneZero, DptZeros };  // 'k', '.', '0', '-'

struct Dragon4Digits {
    std::string digits;
    int exponent = 0;  // base-10 exponent of the first digit
};

/// `Dragon4()` in unique digit mode: the shortest digits that identify the float32 (IEEE
/// round-half-even neighbours), stopped at `cutoff_max` and continued to at least
/// `cutoff_min` digits (each counted as total digits or digits after the point; -1 for none).
Dragon4Digits dragon4(const Float32Parts& f, Cutoff mode, int cutoff_max, int cutoff_min) {
    Dragon4Digits out;
    if (f.mantissa == 0) {
        out.digits = "0";
        out.exponent = 0;
        return out;
    }
    constexpr int kBufferSize = 16384;
    const bool is_even = (f.mantissa % 2) == 0;
    BigInt scale, value, margin_low, margin_high;
    const int e = f.exponent;
    if (f.unequal_margins) {
        if (e > 0) {
            value = BigInt(f.mantissa);
            value.shl(static_cast<unsigned>(e + 2));
            scale = BigInt(4);
            margin_low = BigInt::pow2(static_cast<unsigned>(e));
            margin_high = BigInt::pow2(static_cast<unsigned>(e + 1));
        } else {
            value = BigInt(f.mantissa);
            value.shl(2);
            scale = BigInt::pow2(static_cast<unsigned>(-e + 2));
            margin_low = BigInt(1);
            margin_high = BigInt(2);
        }
    } else {
        if (e > 0) {
            value = BigInt(f.mantissa);
            value.shl(static_cast<unsigned>(e + 1));
            scale = BigInt(2);
            margin_low = BigInt::pow2(static_cast<unsigned>(e));
        } else {
            value = BigInt(f.mantissa);
            value.shl(1);
            scale = BigInt::pow2(static_cast<unsigned>(-e + 1));
            margin_low = BigInt(1);
        }
        margin_high = margin_low;
    }
    auto update_high = [&] {
        if (f.unequal_margins) {
            margin_high = margin_low;
            margin_high.shl(1);
        } else {
            margin_high = margin_low;
        }
    };

    const double log10_2 = 0.30102999566398119521373889472449;
    int digit_exponent = static_cast<int>(std::ceil(static_cast<double>(f.mantissa_bit + e) * log10_2 - 0.69));
    if (cutoff_max >= 0 && mode == Cutoff::FractionLength && digit_exponent <= -cutoff_max)
        digit_exponent = -cutoff_max + 1;

    if (digit_exponent > 0) {
        scale.mul_pow10(static_cast<unsigned>(digit_exponent));
    } else if (digit_exponent < 0) {
        value.mul_pow10(static_cast<unsigned>(-digit_exponent));
        margin_low.mul_pow10(static_cast<unsigned>(-digit_exponent));
        update_high();
    }
    if (compare(value, scale) >= 0) {
        digit_exponent += 1;
    } else {
        value.mul_small(10);
        margin_low.mul_small(10);
        update_high();
    }

    int cutoff_max_exponent = digit_exponent - kBufferSize;
    if (cutoff_max >= 0) {
        const int desired = mode == Cutoff::TotalLength ? digit_exponent - cutoff_max : -cutoff_max;
        cutoff_max_exponent = std::max(cutoff_max_exponent, desired);
    }
    int cutoff_min_exponent = digit_exponent;
    if (cutoff_min >= 0) {
        const int desired = mode == Cutoff::TotalLength ? digit_exponent - cutoff_min : -cutoff_min;
        cutoff_min_exponent = std::min(cutoff_min_exponent, desired);
    }
    out.exponent = digit_exponent - 1;

    bool low = false, high = false;
    unsigned digit = 0;
    for (;;) {
        digit_exponent -= 1;
        digit = 0;
        while (compare(value, scale) >= 0) {
            value.sub(scale);
            ++digit;
        }
        const BigInt value_high = value + margin_high;
        int cmp = compare(value, margin_low);
        low = is_even ? (cmp <= 0) : (cmp < 0);
        cmp = compare(value_high, scale);
        high = is_even ? (cmp >= 0) : (cmp > 0);
        if (((low || high) && digit_exponent <= cutoff_min_exponent) || digit_exponent == cutoff_max_exponent)
            break;
        out.digits.push_back(static_cast<char>('0' + digit));
        value.mul_small(10);
        margin_low.mul_small(10);
        update_high();
    }

    bool round_down = low;
    if (low == high) {
        value.shl(1);
        const int cmp = compare(value, scale);
        round_down = cmp < 0;
        if (cmp == 0) round_down = (digit & 1u) == 0;
    }
    if (round_down) {
        out.digits.push_back(static_cast<char>('0' + digit));
    } else if (digit == 9) {
        for (;;) {
            if (out.digits.empty()) {
                out.digits.push_back('1');
                out.exponent += 1;
                break;
            }
            if (out.digits.back() != '9') {
                out.digits.back() = static_cast<char>(out.digits.back() + 1);
                break;
            }
            out.digits.pop_back();
        }
    } else {
        out.digits.push_back(static_cast<char>('0' + digit + 1));
    }
    return out;
}

/// `PrintInfNan`: `inf` / `-inf` (sign kept), `nan` (sign dropped).
std::string inf_nan(const Float32Parts& f) {
    if (f.inf) return f.negative ? "-inf" : "inf";
    return "nan";
}

/// `FormatPositional` (unique digit mode, fraction-length cutoff, sign only when negative).
std::string format_positional(float x, int precision, int min_digits, Trim trim, int digits_left,
                              int digits_right) {
    const Float32Parts f = decompose(x);
    if (f.nan || f.inf) return inf_nan(f);
    const int has_sign = f.negative ? 1 : 0;
    const Dragon4Digits d = dragon4(f, Cutoff::FractionLength, precision, min_digits);
    const int num_digits = static_cast<int>(d.digits.size());
    std::string s = f.negative ? "-" : "";
    int whole = 0, frac = 0;
    if (d.exponent >= 0) {
        whole = d.exponent + 1;
        if (num_digits <= whole) {
            s += d.digits + std::string(static_cast<std::size_t>(whole - num_digits), '0');
        } else {
            frac = num_digits - whole;
            s += d.digits.substr(0, static_cast<std::size_t>(whole)) + "." +
                 d.digits.substr(static_cast<std::size_t>(whole));
        }
    } else {
        const int zeros = -(d.exponent + 1);
        s += "0." + std::string(static_cast<std::size_t>(zeros), '0') + d.digits;
        frac = zeros + num_digits;
        whole = 1;
    }
    if (trim != Trim::DptZeros && frac == 0) s += ".";
    const int desired_frac = std::max(min_digits, 0);
    if (trim == Trim::LeaveOneZero) {
        if (frac == 0) {
            s += "0";
            ++frac;
        }
    } else if (trim == Trim::None && desired_frac > frac) {
        s += std::string(static_cast<std::size_t>(desired_frac - frac), '0');
        frac = desired_frac;
    }
    if (trim != Trim::None && frac > 0) {
        while (s.back() == '0') {
            s.pop_back();
            --frac;
        }
        if (s.back() == '.') {
            if (trim == Trim::LeaveOneZero) {
                s += "0";
                ++frac;
            } else if (trim == Trim::DptZeros) {
                s.pop_back();
            }
        }
    }
    if (digits_right >= frac) {
        if (trim == Trim::DptZeros && frac == 0) s += " ";
        s += std::string(static_cast<std::size_t>(digits_right - frac), ' ');
    }
    if (digits_left > whole + has_sign)
        s = std::string(static_cast<std::size_t>(digits_left - (whole + has_sign)), ' ') + s;
    return s;
}

/// `FormatScientific` (unique digit mode, total-length cutoff, sign only when negative).
std::string format_scientific(float x, int precision, int min_digits, Trim trim, int digits_left,
                              int exp_digits) {
    const Float32Parts f = decompose(x);
    if (f.nan || f.inf) return inf_nan(f);
    std::string s;
    const int leftchars = 1 + (f.negative ? 1 : 0);
    if (digits_left > leftchars) s += std::string(static_cast<std::size_t>(digits_left - leftchars), ' ');
    if (f.negative) s += "-";
    const Dragon4Digits d = dragon4(f, Cutoff::TotalLength, precision < 0 ? -1 : precision + 1,
                                    min_digits < 0 ? -1 : min_digits + 1);
    s += d.digits[0];
    int frac = static_cast<int>(d.digits.size()) - 1;
    if (frac > 0) s += "." + d.digits.substr(1);
    if (trim != Trim::DptZeros && frac == 0) s += ".";
    const int add_digits = std::max(min_digits, 0);
    if (trim == Trim::LeaveOneZero) {
        if (frac == 0) {
            s += "0";
            ++frac;
        }
    } else if (trim == Trim::None && add_digits > frac) {
        s += std::string(static_cast<std::size_t>(add_digits - frac), '0');
        frac = add_digits;
    }
    if (trim != Trim::None && frac > 0) {
        while (s.back() == '0') {
            s.pop_back();
            --frac;
        }
        if (trim == Trim::LeaveOneZero && s.back() == '.') {
            s += "0";
            ++frac;
        }
    }
    if (exp_digits > 5) exp_digits = 5;
    if (exp_digits < 0) exp_digits = 2;
    int pe = d.exponent;
    s += "e";
    s += pe >= 0 ? "+" : "-";
    pe = std::abs(pe);
    std::string ed = std::to_string(pe);
    if (static_cast<int>(ed.size()) < exp_digits) ed = std::string(static_cast<std::size_t>(exp_digits) - ed.size(), '0') + ed;
    return s + ed;
}

// ============================================================================================
// NumPy: numpy/core/arrayprint.py (default options, float32)
// ============================================================================================

constexpr int kNpPrecision = 8;
constexpr int kNpLinewidth = 75;
constexpr std::size_t kNpThreshold = 1000;
constexpr std::size_t kNpEdgeitems = 3;

/// `FloatingFormat` with floatmode 'maxprec', suppress_small False, sign '-'.
class NumpyFloatFormat {
public:
    explicit NumpyFloatFormat(const std::vector<float>& data) { fill_format(data); }

    std::string operator()(float x) const {
        if (!std::isfinite(x)) {
            const std::string ret = std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf");
            return pad_left_to(ret, static_cast<std::size_t>(pad_left_ + pad_right_ + 1));
        }
        if (exp_format_)
            return format_scientific(x, precision_, min_digits_, trim_, pad_left_, exp_size_);
        return format_positional(x, precision_, min_digits_, trim_, pad_left_, pad_right_);
    }

private:
    void fill_format(const std::vector<float>& data) {
        std::vector<float> finite;
        for (float v : data)
            if (std::isfinite(v)) finite.push_back(v);

        // exponential mode from the non-zero finite values; max/min is a float32 division,
        // the comparisons with the Python floats are made in double.
        bool any_nonzero = false;
        float mx = 0.0f, mn = 0.0f;
        for (float v : finite) {
            if (v == 0.0f) continue;
            const float a = std::fabs(v);
            if (!any_nonzero) {
                mx = mn = a;
                any_nonzero = true;
            } else {
                mx = std::max(mx, a);
                mn = std::min(mn, a);
            }
        }
        if (any_nonzero) {
            const float ratio = mx / mn;  // np.float32 / np.float32
            if (static_cast<double>(mx) >= 1.e8 || static_cast<double>(mn) < 0.0001 ||
                static_cast<double>(ratio) > 1000.)
                exp_format_ = true;
        }

        if (finite.empty()) {
            pad_left_ = 0;
            pad_right_ = 0;
            trim_ = Trim::Zeros;
            exp_size_ = -1;
            min_digits_ = -1;
        } else if (exp_format_) {
            std::size_t max_exp = 0, max_frac = 0, max_int = 0;
            for (float v : finite) {
                const std::string s = format_scientific(v, precision_, -1, Trim::Zeros, -1, -1);
                const auto epos = s.find('e');
                const std::string mant = s.substr(0, epos);
                max_exp = std::max(max_exp, s.size() - epos - 1);
                const auto dot = mant.find('.');
                max_int = std::max(max_int, dot);
                max_frac = std::max(max_frac, mant.size() - dot - 1);
            }
            exp_size_ = static_cast<int>(max_exp) - 1;
            trim_ = Trim::None;
            precision_ = static_cast<int>(max_frac);
            min_digits_ = precision_;
            pad_left_ = static_cast<int>(max_int);
            pad_right_ = exp_size_ + 2 + precision_;
        } else {
            std::size_t max_frac = 0, max_int = 0;
            for (float v : finite) {
                const std::string s = format_positional(v, precision_, -1, Trim::Zeros, -1, -1);
                const auto dot = s.find('.');
                max_int = std::max(max_int, dot);
                max_frac = std::max(max_frac, s.size() - dot - 1);
            }
            pad_left_ = static_cast<int>(max_int);
            pad_right_ = static_cast<int>(max_frac);
            exp_size_ = -1;
            trim_ = Trim::Zeros;
            min_digits_ = 0;
        }

        if (finite.size() != data.size()) {
            bool neginf = false;
            for (float v : data)
                if (std::isinf(v) && v < 0) neginf = true;
            const int nanlen = 3;
            const int inflen = 3 + (neginf ? 1 : 0);
            const int offset = pad_right_ + 1;
            pad_left_ = std::max({pad_left_, nanlen - offset, inflen - offset});
        }
    }

    int precision_ = kNpPrecision;
    int min_digits_ = -1;
    Trim trim_ = Trim::Zeros;
    bool exp_format_ = false;
    int exp_size_ = -1;
    int pad_left_ = 0;
    int pad_right_ = 0;
};

/// `_extendLine` (the non-legacy branch; words are always single-line here).
void extend_line(std::string& s, std::string& line, const std::string& word, std::size_t line_width,
                 const std::string& next_line_prefix) {
    bool needs_wrap = line.size() + word.size() > line_width;
    if (line.size() <= next_line_prefix.size()) needs_wrap = false;
    if (needs_wrap) {
        std::string stripped = line;
        while (!stripped.empty() && stripped.back() == ' ') stripped.pop_back();
        s += stripped + "\n";
        line = next_line_prefix;
    }
    line += word;
}

/// `_formatArray` with separator ' ' and the non-legacy width rules.
struct NumpyLayout {
    const Shape& shape;
    std::vector<std::size_t> strides;
    const std::vector<float>& flat;
    const NumpyFloatFormat& format;
    bool summarize;

    std::string recurse(std::size_t axis, std::size_t offset, const std::string& hanging_indent,
                        long curr_width) const {
        const std::size_t axes_left = shape.size() - axis;
        if (axes_left == 0) return format(flat[offset]);

        const std::string next_hanging_indent = hanging_indent + " ";
        const long next_width = curr_width - 1;  // len(']')
        const std::size_t a_len = shape[axis];
        const bool show_summary = summarize && 2 * kNpEdgeitems < a_len;
        const std::size_t leading = show_summary ? kNpEdgeitems : 0;
        const std::size_t trailing = show_summary ? kNpEdgeitems : a_len;
        auto at = [&](std::size_t i) { return offset + i * strides[axis]; };

        std::string s;
        if (axes_left == 1) {
            const long elem_width_l = curr_width - 1;  // max(len(' '.rstrip()), len(']'))
            const std::size_t elem_width = elem_width_l < 0 ? 0 : static_cast<std::size_t>(elem_width_l);
            std::string line = hanging_indent;
            for (std::size_t i = 0; i < leading; ++i) {
                extend_line(s, line, recurse(axis + 1, at(i), next_hanging_indent, next_width), elem_width, hanging_indent);
                line += " ";
            }
            if (show_summary) {
                extend_line(s, line, "...", elem_width, hanging_indent);
                line += " ";
            }
            for (std::size_t i = trailing; i > 1; --i) {
                extend_line(s, line, recurse(axis + 1, at(a_len - i), next_hanging_indent, next_width),
                            elem_width, hanging_indent);
                line += " ";
            }
            extend_line(s, line, recurse(axis + 1, at(a_len - 1), next_hanging_indent, next_width), elem_width,
                        hanging_indent);
            s += line;
        } else {
            const std::string line_sep(axes_left - 1, '\n');
            for (std::size_t i = 0; i < leading; ++i)
                s += hanging_indent + recurse(axis + 1, at(i), next_hanging_indent, next_width) + line_sep;
            if (show_summary) s += hanging_indent + "..." + line_sep;
            for (std::size_t i = trailing; i > 1; --i)
                s += hanging_indent + recurse(axis + 1, at(a_len - i), next_hanging_indent, next_width) + line_sep;
            s += hanging_indent + recurse(axis + 1, at(a_len - 1), next_hanging_indent, next_width);
        }
        return "[" + s.substr(hanging_indent.size()) + "]";
    }
};

/// `str(np.float32(x))`: positional with one trailing zero kept when 1e-4 <= |x| < 1e16 (or
/// x is zero or NaN), otherwise scientific without a bare decimal point.
std::string numpy_scalar_str(float x) {
    const double a = std::fabs(static_cast<double>(x));
    const bool positional = std::isnan(x) || x == 0.0f || (a < 1.e16 && a >= 1.e-4);
    if (positional) return format_positional(x, -1, -1, Trim::LeaveOneZero, -1, -1);
    return format_scientific(x, -1, -1, Trim::DptZeros, -1, -1);
}

}  // namespace

std::string numpy_str(const Tensor& t) {
    const Shape shape = shape_of(t);
    check_print_rank("numpy_str", shape, 32,
                     "NumPy: maximum supported dimension for an ndarray is 32");
    const auto flat = flatten<float>(t);
    if (shape.empty()) return numpy_scalar_str(flat.at(0));
    if (flat.empty()) return "[]";
    const bool summarize = flat.size() > kNpThreshold;
    std::vector<float> data;
    for (std::size_t i : kept_indices(shape, summarize, kNpEdgeitems)) data.push_back(flat[i]);
    const NumpyFloatFormat format(data);
    const NumpyLayout layout{shape, strides_of(shape), flat, format, summarize};
    return layout.recurse(0, 0, " ", kNpLinewidth);
}

}  // namespace attn
