/// @file support.hpp
/// @brief What the test programs share: the book, its printed numbers, and the checks that
/// several tests make (an exception naming what was wrong, the largest difference). Tolerances
/// and messages are checked with Catch2's own tools: `x == Approx(expected)` (`|x - expected|
/// <= margin` or `<= epsilon * |expected|`, epsilon 100 float32 epsilons unless given) and
/// `CHECK_THROWS_WITH(expr, Catch::Contains("a") && Catch::Contains("b"))`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/ulp.hpp"
#include "textbook/book.hpp"

namespace test {

/// The book (data/book/), loaded once per test program.
inline const textbook::Book& the_book() {
    static const textbook::Book book = textbook::Book::load(textbook::data_dir());
    return book;
}

/// An entry's printed text without PyTorch's `grad_fn=` suffixes.
inline std::string book_text(const std::string& id) {
    return textbook::strip_grad_fn(the_book().at(id).text);
}

/// The numbers an entry printed; a block the export truncated loses its last (cut) number.
inline std::vector<textbook::Number> printed_numbers(const std::string& id) {
    const auto& entry = the_book().at(id);
    auto numbers = textbook::numbers_in(textbook::strip_grad_fn(entry.text));
    if (entry.what.find("(truncated in the export)") != std::string::npos && !numbers.empty())
        numbers.pop_back();
    return numbers;
}

/// Requires `f` to throw `std::invalid_argument` whose message contains every fragment.
inline void require_invalid(const std::function<void()>& f,
                            const std::vector<std::string>& fragments) {
    try {
        f();
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        INFO(what);
        for (const auto& frag : fragments) CHECK(what.find(frag) != std::string::npos);
    }
}

/// `max |a - b|` in double over two tensors of one shape; infinities must sit in the same
/// places with the same sign (else the result is infinite); NaN anywhere gives NaN.
inline double max_abs_diff(const attn::Tensor& a, const attn::Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = a.data()[i], y = b.data()[i];
        if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) return std::numeric_limits<double>::infinity();
            continue;
        }
        worst = std::max(worst, std::abs(x - y));
    }
    return worst;
}

/// Decoding equals recomputation: feeds x `[b, T, d]` through `cached(x[:, i:end], i, end)`
/// in chunks of `chunk` tokens (the cache lives in the caller's lambda) and returns the
/// largest `max_abs_diff` from `full(x[:, :end])[:, i:end]` over all steps.
template <class Cached, class Full>
double decode_gap(const attn::Tensor& x, std::size_t chunk, Cached cached, Full full) {
    double worst = 0.0;
    const long T = static_cast<long>(x.shape()[1]);
    for (long i = 0; i < T; i += long(chunk)) {
        const long end = std::min(T, i + long(chunk));
        const attn::Tensor step = cached(attn::slice(x, 1, i, end), i, end);
        const attn::Tensor recomputed = attn::slice(full(attn::slice(x, 1, 0, end)), 1, i, end);
        worst = std::max(worst, max_abs_diff(step, recomputed));
    }
    return worst;
}

/// Largest distance in float32 ulps between two tensors of one shape, counting values within
/// 1e-7 absolute of each other as 0 (near zero a last-bit difference of the inputs is many
/// ulps of a tiny result: the "Last bits" rule of the notes).
inline std::int64_t max_ulp(const attn::Tensor& a, const attn::Tensor& b) {
    REQUIRE(attn::shape_of(a) == attn::shape_of(b));
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::abs(double(a.data()[i]) - double(b.data()[i])) <= 1e-7) continue;
        worst = std::max(worst, attn::ulp_distance(a.data()[i], b.data()[i]));
    }
    return worst;
}

/// The book's batch, `torch.stack((inputs, inputs))`: `[2, 6, 3]` float32 (002 In [19],
/// Raschka's `batch`).
inline attn::Tensor book_batch() {
    const attn::Tensor inputs = textbook::inputs();
    return attn::stack({inputs, inputs}, 0);
}

}  // namespace test
