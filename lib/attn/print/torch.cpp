/// @file print_torch.cpp
/// @brief PyTorch's printing: a port of PyTorch 1.13's `torch/_tensor_str.py` for tensors
/// and `torch.Size`, and `Module.__repr__` for the book's modules.
///
/// The structure follows the Python source function by function so that a difference in
/// output can be traced to one rule; the comments name the Python function being ported.
#include "attn/print/torch.hpp"

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
#include <utility>
#include <vector>

#include "attn/print/python.hpp"
#include "attn/print/common.hpp"

namespace attn {

namespace {

using namespace print_detail;

// ============================================================================================
// PyTorch: torch/_tensor_str.py
// ============================================================================================

/// Python's `'{:.{p}f}'.format(v)` (`fixed`) or `'{:.{p}e}'.format(v)` for a double. Python
/// writes NaN as `nan` whatever its sign bit, infinities as `inf` / `-inf`; finite values are
/// correctly rounded, which glibc's printf also does.
std::string py_format(double v, int precision, bool scientific) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    const char* fmt = scientific ? "%.*e" : "%.*f";
    int n = std::snprintf(nullptr, 0, fmt, precision, v);
    std::string s(static_cast<std::size_t>(n) + 1, '\0');
    std::snprintf(s.data(), s.size(), fmt, precision, v);
    s.resize(static_cast<std::size_t>(n));
    return s;
}

/// `_Formatter` for a float tensor: decides int_mode / sci_mode and the column width from
/// the (summarised) values, then formats single values.
class TorchFloatFormatter {
public:
    TorchFloatFormatter(const std::vector<float>& values, const PrintOptions& opts)
        : precision_(opts.precision) {
        std::vector<float> nz;
        for (float v : values)
            if (std::isfinite(v) && v != 0.0f) nz.push_back(v);
        if (nz.empty()) return;  // no valid number: int_mode, width 1, sci_mode not overridden

        double mn = std::fabs(static_cast<double>(nz[0])), mx = mn;
        for (float v : nz) {
            const double a = std::fabs(static_cast<double>(v));
            mn = std::min(mn, a);
            mx = std::max(mx, a);
        }
        for (float v : nz) {
            if (v != std::ceil(v)) {
                int_mode_ = false;
                break;
            }
        }
        if (int_mode_) {
            if (mx / mn > 1000.0 || mx > 1.0e8) {
                sci_mode_ = true;
                for (float v : nz) widen(py_format(v, precision_, true).size());
            } else {
                for (float v : nz) widen(py_format(v, 0, false).size() + 1);
            }
        } else {
            if (mx / mn > 1000.0 || mx > 1.0e8 || mn < 1.0e-4) {
                sci_mode_ = true;
                for (float v : nz) widen(py_format(v, precision_, true).size());
            } else {
                for (float v : nz) widen(py_format(v, precision_, false).size());
            }
        }
        if (opts.sci_mode.has_value()) sci_mode_ = *opts.sci_mode;
    }

    std::size_t width() const { return max_width_; }

    std::string format(float value) const {
        const double v = value;
        std::string ret;
        if (sci_mode_) {
            ret = py_format(v, precision_, true);
        } else if (int_mode_) {
            ret = py_format(v, 0, false);
            if (!(std::isinf(v) || std::isnan(v))) ret += ".";
        } else {
            ret = py_format(v, precision_, false);
        }
        return pad_left_to(ret, max_width_);
    }

private:
    void widen(std::size_t w) { max_width_ = std::max(max_width_, w); }

    int precision_;
    bool int_mode_ = true;
    bool sci_mode_ = false;
    std::size_t max_width_ = 1;
};

/// `_vector_str` and `_tensor_str_with_formatter` over a flat row-major buffer; `element(i)`
/// formats the element at flat index i (already padded to `width`).
struct TorchLayout {
    const Shape& shape;
    std::vector<std::size_t> strides;
    bool summarize;
    const PrintOptions& opts;
    std::size_t width;
    std::function<std::string(std::size_t)> element;

    std::string vector_str(std::size_t offset, std::size_t axis, int indent) const {
        const double element_length = static_cast<double>(width) + 2.0;
        const double per_line_f = std::floor((opts.linewidth - indent) / element_length);
        const std::size_t per_line = per_line_f < 1.0 ? 1 : static_cast<std::size_t>(per_line_f);

        const std::size_t n = shape[axis];
        const std::size_t edge = static_cast<std::size_t>(opts.edgeitems);
        std::vector<std::string> data;
        if (summarize && n > 2 * edge) {
            for (std::size_t i = 0; i < edge; ++i) data.push_back(element(offset + i * strides[axis]));
            data.push_back(" ...");
            for (std::size_t i = n - edge; i < n; ++i) data.push_back(element(offset + i * strides[axis]));
        } else {
            for (std::size_t i = 0; i < n; ++i) data.push_back(element(offset + i * strides[axis]));
        }
        std::vector<std::string> lines;
        for (std::size_t i = 0; i < data.size(); i += per_line) {
            std::vector<std::string> line(data.begin() + static_cast<std::ptrdiff_t>(i),
                                          data.begin() + static_cast<std::ptrdiff_t>(std::min(data.size(), i + per_line)));
            lines.push_back(join(line, ", "));
        }
        // Appended, not `"[" + ...`: GCC 12 warns (-Wstringop-overflow) on the inlined insert.
        std::string out = "[";
        std::string sep = ",\n";
        sep.append(static_cast<std::size_t>(indent + 1), ' ');
        out.append(join(lines, sep)).append("]");
        return out;
    }

    std::string tensor_str(std::size_t offset, std::size_t axis, int indent) const {
        const std::size_t dim = shape.size() - axis;
        if (dim == 0) return element(offset);
        if (dim == 1) return vector_str(offset, axis, indent);

        const std::size_t n = shape[axis];
        const std::size_t edge = static_cast<std::size_t>(opts.edgeitems);
        std::vector<std::string> slices;
        if (summarize && n > 2 * edge) {
            for (std::size_t i = 0; i < edge; ++i)
                slices.push_back(tensor_str(offset + i * strides[axis], axis + 1, indent + 1));
            slices.push_back("...");
            for (std::size_t i = n - edge; i < n; ++i)
                slices.push_back(tensor_str(offset + i * strides[axis], axis + 1, indent + 1));
        } else {
            for (std::size_t i = 0; i < n; ++i)
                slices.push_back(tensor_str(offset + i * strides[axis], axis + 1, indent + 1));
        }
        // Appended, not `"," + ...`: GCC 12 warns (-Wstringop-overflow) on the inlined inserts.
        std::string sep = ",";
        sep.append(dim - 1, '\n').append(static_cast<std::size_t>(indent + 1), ' ');
        std::string out = "[";
        out.append(join(slices, sep)).append("]");
        return out;
    }
};

/// `_add_suffixes`: appends `, suffix` (or `,\n<indent>suffix` when the line would pass the
/// line width) and the closing parenthesis.
std::string add_suffixes(const std::string& tensor_str, const std::vector<std::string>& suffixes,
                         int indent, const PrintOptions& opts) {
    std::string out = tensor_str;
    const auto nl = tensor_str.rfind('\n');
    long last_line_len = static_cast<long>(tensor_str.size()) -
                         (nl == std::string::npos ? -1L : static_cast<long>(nl)) + 1;
    for (const auto& suffix : suffixes) {
        const long suffix_len = static_cast<long>(suffix.size());
        if (last_line_len + suffix_len + 2 > opts.linewidth) {
            out.append(",\n").append(static_cast<std::size_t>(indent), ' ').append(suffix);
            last_line_len = indent + suffix_len;
        } else {
            out.append(", ").append(suffix);
            last_line_len += suffix_len + 2;
        }
    }
    return out + ")";
}

// A float32's exact decimal expansion ends within 149 fraction digits (2^-149); more only
// appends zeros, and a precision of 10^9 would make every number a gigabyte.
constexpr int max_precision = 1000;
// The torch printer recurses once per dimension (a few hundred bytes of stack each, more
// under AddressSanitizer); PyTorch's Python one stops with a RecursionError near 500.
constexpr std::size_t max_print_rank = 1000;

void check_precision(const char* where, int precision) {
    if (precision < 0 || precision > max_precision)
        throw std::invalid_argument(std::string(where) + ": precision must be >= 0 and <= " +
                                    std::to_string(max_precision) + ", got " +
                                    std::to_string(precision));
}

void check_options(const PrintOptions& opts) {
    check_precision("print options", opts.precision);
    if (opts.linewidth < 1) throw std::invalid_argument("print options: linewidth must be >= 1, got " + std::to_string(opts.linewidth));
    if (opts.edgeitems < 0) throw std::invalid_argument("print options: edgeitems must be >= 0, got " + std::to_string(opts.edgeitems));
    if (opts.threshold < 0) throw std::invalid_argument("print options: threshold must be >= 0, got " + std::to_string(opts.threshold));
}

/// `_str_intern` for a plain CPU tensor of a default dtype: `tensor(` + `_tensor_str` + `)`.
/// `make_width_and_element` builds the formatter from the values the formatter may see.
template <class T>
std::string torch_repr(const Shape& shape, const std::vector<T>& flat, const PrintOptions& opts,
                       const char* empty_dtype_suffix,
                       const std::function<std::pair<std::size_t, std::function<std::string(T)>>(
                           const std::vector<T>&)>& make_formatter) {
    check_options(opts);
    check_print_rank("repr", shape, max_print_rank, "PyTorch's printer: RecursionError");
    const std::string prefix = "tensor(";
    const int indent = static_cast<int>(prefix.size());
    if (flat.empty()) {
        // Empty tensors: `[]`, plus the shape unless 1-D and the dtype unless float32.
        std::vector<std::string> suffixes;
        if (shape.size() != 1) suffixes.push_back("size=" + python_tuple(shape));
        if (empty_dtype_suffix) suffixes.push_back(empty_dtype_suffix);
        return add_suffixes(prefix + "[]", suffixes, indent, opts);
    }
    const bool summarize = flat.size() > static_cast<std::size_t>(opts.threshold);
    std::vector<T> seen;
    for (std::size_t i : kept_indices(shape, summarize, static_cast<std::size_t>(opts.edgeitems)))
        seen.push_back(flat[i]);
    // Not a structured binding: C++20 lets a lambda capture one, but clang 14 does not yet.
    const auto formatter = make_formatter(seen);
    const auto& fmt = formatter.second;
    TorchLayout layout{shape, strides_of(shape), summarize, opts, formatter.first,
                       [&flat, &fmt](std::size_t i) { return fmt(flat[i]); }};
    return prefix + layout.tensor_str(0, 0, indent) + ")";
}

}  // namespace

PrintOptions& printoptions() {
    static PrintOptions opts;
    return opts;
}

void set_printoptions(int precision, int linewidth) {
    check_precision("set_printoptions", precision);
    if (linewidth < 1)
        throw std::invalid_argument("set_printoptions: linewidth must be >= 1, got " + std::to_string(linewidth));
    printoptions().precision = precision;
    printoptions().linewidth = linewidth;
}

std::string repr(const Tensor& t, const PrintOptions& opts) {
    const Shape shape = shape_of(t);
    const auto flat = flatten<float>(t);
    return torch_repr<float>(shape, flat, opts, nullptr, [&opts](const std::vector<float>& seen) {
        auto formatter = std::make_shared<TorchFloatFormatter>(seen, opts);
        return std::make_pair(formatter->width(),
                              std::function<std::string(float)>([formatter](float v) { return formatter->format(v); }));
    });
}

std::string parameter_repr(const Tensor& t, const PrintOptions& opts) {
    std::string text = repr(t, opts);
    text.pop_back();  // the closing parenthesis: the suffix goes before it
    return "Parameter containing:\n" + add_suffixes(text, {"requires_grad=True"}, 7, opts);
}

std::string repr(const BoolTensor& t, const PrintOptions& opts) {
    const Shape shape = shape_of(t);
    const auto flat = flatten<bool>(t);
    return torch_repr<bool>(shape, flat, opts, "dtype=torch.bool", [](const std::vector<bool>& seen) {
        std::size_t width = 1;
        for (bool v : seen) width = std::max<std::size_t>(width, v ? 4 : 5);
        return std::make_pair(width, std::function<std::string(bool)>([width](bool v) {
                                  return pad_left_to(v ? "True" : "False", width);
                              }));
    });
}

std::string repr(const LongTensor& t, const PrintOptions& opts) {
    const Shape shape = shape_of(t);
    const auto flat = flatten<std::int64_t>(t);
    return torch_repr<std::int64_t>(shape, flat, opts, "dtype=torch.int64", [](const std::vector<std::int64_t>& seen) {
        std::size_t width = 1;
        for (auto v : seen) width = std::max(width, std::to_string(v).size());
        return std::make_pair(width, std::function<std::string(std::int64_t)>([width](std::int64_t v) {
                                  return pad_left_to(std::to_string(v), width);
                              }));
    });
}

std::string repr(const Shape& shape) {
    std::string s = "torch.Size([";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "])";
}

// ------------------------------------------------------------------------- modules
// Module.__repr__: `Name(\n  (child): repr(child)\n ...)`. Each module's repr is written
// beside the module with this function; a leaf's (Linear, Dropout) is its extra_repr().

std::string module_repr(const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& children) {
    std::string out = name + "(\n";
    for (const auto& [child, text] : children) {
        // PyTorch's _addindent(repr, 2): a child spanning lines (a module holding modules) has
        // its later lines indented by two more spaces.
        std::string indented;
        for (const char c : text) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
        out += "  (" + child + "): " + indented + "\n";
    }
    return out + ")";
}

}  // namespace attn
