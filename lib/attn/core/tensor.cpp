#include "attn/core/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>

#include <unistd.h>

namespace attn {

namespace {

// The product of the dimensions taken left to right, or none when a step overflows: as
// PyTorch's computeStorageNbytes, [0, 2^62, 2^62] has 0 elements but [2^62, 2^62, 0] overflows.
std::optional<std::size_t> checked_product(const Shape& shape) {
    std::size_t n = 1;
    for (auto d : shape)
        if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
    return n;
}

}  // namespace

std::size_t numel(const Shape& shape) {
    if (auto n = checked_product(shape)) return *n;
    throw std::length_error("numel: the element count of shape " + shape_str(shape) +
                            " overflows (storage size calculation overflowed)");
}

void throw_size_overflow(std::string_view what, std::size_t a, char op, std::size_t b) {
    throw std::length_error(std::string(what) + ": " + std::to_string(a) + " " + op + " " +
                            std::to_string(b) +
                            " overflows std::size_t (size calculation overflowed)");
}

std::int64_t checked_signed(std::size_t n, std::string_view what) {
    constexpr auto max = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    if (n > max)
        throw std::length_error(std::string(what) + ": " + std::to_string(n) +
                                " does not fit in a signed 64-bit size (at most " +
                                std::to_string(max) + ")");
    return static_cast<std::int64_t>(n);
}

std::size_t max_tensor_bytes() {
    static const std::size_t limit = [] {
        constexpr std::size_t asan_max = std::size_t{1} << 40;
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        if (pages <= 0 || page <= 0) return asan_max;
        std::size_t bytes = 0;
        if (__builtin_mul_overflow(static_cast<std::size_t>(pages),
                                   static_cast<std::size_t>(page), &bytes))
            return asan_max;
        return std::min(bytes, asan_max);
    }();
    return limit;
}

float* sized(Tensor& t, const Shape& shape, const std::string& where) {
    if (Shape(t.shape().begin(), t.shape().end()) == shape && t.size() == numel(shape)) return t.data();
    check_allocation(where, shape);
    t.resize(shape);
    return t.data();
}

void check_allocation(const std::string& where, const Shape& shape, std::size_t element_size) {
    const auto n = checked_product(shape);
    std::size_t bytes = 0;
    if (!n || __builtin_mul_overflow(*n, element_size, &bytes))
        throw std::length_error(where + ": cannot allocate a tensor of shape " + shape_str(shape) +
                                ": storage size calculation overflowed");
    // The strides (PyTorch's and xtensor's: each the product of the later sizes) must fit a
    // signed 64-bit integer even when a 0 size makes the tensor empty: [0, 2^40, 2^40] is
    // refused as PyTorch refuses it ("Stride calculation overflowed"), never computed.
    std::int64_t stride = 1;
    for (std::size_t i = shape.size(); i-- > 1;)
        if (__builtin_mul_overflow(stride, static_cast<std::int64_t>(std::min<std::size_t>(
                                               std::max<std::size_t>(shape[i], 1), INT64_MAX)),
                                   &stride))
            throw std::length_error(where + ": cannot allocate a tensor of shape " + shape_str(shape) +
                                    ": stride calculation overflowed");
    if (bytes > max_tensor_bytes())
        throw std::length_error(where + ": cannot allocate a tensor of shape " + shape_str(shape) +
                                ": " + std::to_string(bytes) + " bytes, more than the limit of " +
                                std::to_string(max_tensor_bytes()) +
                                " (max_tensor_bytes: this machine's memory)");
}

void check_storage(const Shape& shape, std::size_t size) {
    const auto n = checked_product(shape);
    if (!n)
        throw std::length_error("tensor of shape " + shape_str(shape) +
                                ": its element count overflows (storage size calculation "
                                "overflowed), so it cannot hold its elements");
    if (*n != size)
        throw std::length_error("tensor of shape " + shape_str(shape) + ": expected " +
                                std::to_string(*n) + " elements in its storage, got " +
                                std::to_string(size));
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
