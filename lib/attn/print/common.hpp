/// @file common.hpp
/// @brief Helpers shared by the printers (internal to lib/attn/print): flattening, strides,
/// the summarised indices both PyTorch and NumPy keep, padding and joining.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::print_detail {

/// The elements of any of the tensor types, flattened in row-major order.
template <class T, class E>
std::vector<T> flatten(const E& t) {
    std::vector<T> out;
    out.reserve(t.size());
    for (auto it = t.cbegin(); it != t.cend(); ++it) out.push_back(static_cast<T>(*it));
    return out;
}

/// Checks that a printer may recurse over `shape`'s dimensions: at most `max_rank` of them
/// (the printers recurse once per dimension; a tensor of thousands of dimensions of size 1
/// would exhaust the stack).
/// @throws std::invalid_argument `"<where>: expected at most <max_rank> dimensions, got
/// <rank>"` naming what the original does at that rank.
inline void check_print_rank(const char* where, const Shape& shape, std::size_t max_rank,
                             const char* original) {
    if (shape.size() > max_rank)
        throw std::invalid_argument(std::string(where) + ": expected at most " +
                                    std::to_string(max_rank) + " dimensions, got " +
                                    std::to_string(shape.size()) + " (" + original + ")");
}

/// Row-major strides of `shape` (in elements).
inline std::vector<std::size_t> strides_of(const Shape& shape) {
    std::vector<std::size_t> strides(shape.size(), 1);
    for (std::size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
    return strides;
}

/// Flat indices of the elements kept by summarisation: along every axis longer than
/// `2 * edgeitems`, only the first and last `edgeitems` indices (torch's
/// `get_summarized_data`, NumPy's `_leading_trailing`); all elements when `!summarize`.
inline std::vector<std::size_t> kept_indices(const Shape& shape, bool summarize, std::size_t edgeitems) {
    std::vector<std::size_t> out;
    if (numel(shape) == 0) return out;
    const auto strides = strides_of(shape);
    std::function<void(std::size_t, std::size_t)> rec = [&](std::size_t axis, std::size_t offset) {
        if (axis == shape.size()) {
            out.push_back(offset);
            return;
        }
        const std::size_t n = shape[axis];
        if (summarize && n > 2 * edgeitems) {
            for (std::size_t i = 0; i < edgeitems; ++i) rec(axis + 1, offset + i * strides[axis]);
            for (std::size_t i = n - edgeitems; i < n; ++i) rec(axis + 1, offset + i * strides[axis]);
        } else {
            for (std::size_t i = 0; i < n; ++i) rec(axis + 1, offset + i * strides[axis]);
        }
    };
    rec(0, 0);
    return out;
}

inline std::string pad_left_to(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += sep;
        out += parts[i];
    }
    return out;
}

/// Python's `str(tuple(shape))`: `(2, 0, 4)`, `(0,)`, `()`.
inline std::string python_tuple(const Shape& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

}  // namespace attn::print_detail
