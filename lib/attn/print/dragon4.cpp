/// @file dragon4.cpp
/// @brief NumPy's float32 digit generation: `FormatPositional` and `FormatScientific` of
/// `numpy/core/src/multiarray/dragon4.c` (NumPy 1.24), function by function, for the NumPy
/// printer (numpy.cpp).
#include "attn/print/dragon4.hpp"

#include "attn/print/bigint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace attn::print_detail {

namespace {

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

/// The end of the fraction `s` holds (`frac` digits after its point, updated), as
/// `FormatPositional` and `FormatScientific` both write it: the point when no digit follows
/// (unless DptZeros); then LeaveOneZero writes at least one digit and None pads with zeros to
/// `min_digits`, or every other mode trims the trailing zeros, after which a bare point gets one
/// zero again (LeaveOneZero) or, when `drop_point` (the positional format), is removed
/// (DptZeros).
void finish_fraction(std::string& s, int& frac, Trim trim, int min_digits, bool drop_point) {
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
            } else if (trim == Trim::DptZeros && drop_point) {
                s.pop_back();
            }
        }
    }
}

}  // namespace

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
    finish_fraction(s, frac, trim, min_digits, /*drop_point=*/true);
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
    finish_fraction(s, frac, trim, min_digits, /*drop_point=*/false);
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

}  // namespace attn::print_detail
