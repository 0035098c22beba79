/// @file numpy.cpp
/// @brief NumPy's `str(array)` for float32: a port of NumPy 1.24's
/// `numpy/core/arrayprint.py`, function by function; its digits come from the Dragon4 port
/// in dragon4.cpp.
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

#include "attn/print/common.hpp"
#include "attn/print/dragon4.hpp"

namespace attn {

namespace {

using namespace print_detail;

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
