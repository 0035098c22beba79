#include "attn/tensor.hpp"

#include <sstream>

namespace attn {

std::size_t numel(const Shape& shape) {
    std::size_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::string shape_str(const Shape& shape) {
    std::ostringstream out;
    out << '[';
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) out << ", ";
        out << shape[i];
    }
    out << ']';
    return out.str();
}

void throw_shape_error(const std::string& where, const std::string& expected,
                       const Shape& actual) {
    throw std::invalid_argument(where + ": expected " + expected + ", got " +
                                shape_str(actual));
}

void check_rank(const std::string& where, const Shape& actual, std::size_t rank) {
    if (actual.size() == rank) return;
    std::string expected = "[";
    for (std::size_t i = 0; i < rank; ++i) expected += i ? ", *" : "*";
    throw_shape_error(where, expected + "] (" + std::to_string(rank) + "-D)", actual);
}

void check_same_shape(const std::string& where, const Shape& expected, const Shape& actual) {
    if (expected != actual) throw_shape_error(where, shape_str(expected), actual);
}

std::size_t wrap_dim(const std::string& where, long dim, std::size_t rank) {
    const long r = static_cast<long>(rank);
    if (dim < -r || dim >= r || r == 0) {
        throw std::invalid_argument(where + ": dimension " + std::to_string(dim) +
                                    " out of range for a " + std::to_string(rank) +
                                    "-D tensor (expected [" + std::to_string(-r) + ", " +
                                    std::to_string(r - 1) + "])");
    }
    return static_cast<std::size_t>(dim < 0 ? dim + r : dim);
}

Tensor tensor(std::initializer_list<std::initializer_list<float>> rows) {
    const std::size_t n = rows.size();
    const std::size_t m = n ? rows.begin()->size() : 0;
    Tensor t = xt::zeros<float>(Shape{n, m});
    std::size_t i = 0;
    for (const auto& row : rows) {
        if (row.size() != m) {
            throw std::invalid_argument("tensor: expected rows of length " + std::to_string(m) +
                                        ", got row " + std::to_string(i) + " of length " +
                                        std::to_string(row.size()));
        }
        std::size_t j = 0;
        for (float v : row) t(i, j++) = v;
        ++i;
    }
    return t;
}

Tensor tensor(std::initializer_list<float> values) {
    Tensor t = xt::zeros<float>(Shape{values.size()});
    std::size_t i = 0;
    for (float v : values) t(i++) = v;
    return t;
}

Tensor scalar_tensor(float value) {
    Tensor t = xt::zeros<float>(Shape{});
    t() = value;
    return t;
}

}  // namespace attn
