/// @file support.hpp
/// @brief What the test programs share: the book, its printed numbers, and the checks that
/// several tests make (an exception naming what was wrong, the largest difference), and the
/// two comparisons doctest lacks: `Approx` with Catch2's rule and a message containing
/// several fragments.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "attn/core/functional.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/ulp.hpp"
#include "textbook/book.hpp"

namespace test {

/// `CHECK(x == test::Approx(expected))`: `|x - expected| <= margin` or
/// `|x - expected| <= epsilon * |expected|` (Catch2's rule, which these tests were written
/// against; doctest's own `Approx` adds 1 to the scale, so it would accept `1e-5` for `0`).
/// Defaults: `epsilon = 100 * FLT_EPSILON` (about 1.2e-5), `margin = 0`.
class Approx {
public:
    explicit Approx(double expected) : expected_(expected) {}
    /// The relative tolerance, a fraction of `|expected|`.
    Approx& epsilon(double relative) { epsilon_ = relative; return *this; }
    /// The absolute tolerance.
    Approx& margin(double absolute) { margin_ = absolute; return *this; }

    friend bool operator==(double actual, const Approx& a) {
        const double d = std::abs(actual - a.expected_);
        return d <= a.margin_ || d <= a.epsilon_ * (std::isinf(a.expected_) ? 0.0 : std::abs(a.expected_));
    }
    friend bool operator!=(double actual, const Approx& a) { return !(actual == a); }
    friend std::ostream& operator<<(std::ostream& os, const Approx& a) {
        return os << "Approx( " << a.expected_ << " )";
    }

private:
    double expected_;
    double epsilon_ = 100.0 * std::numeric_limits<float>::epsilon();
    double margin_ = 0.0;
};

/// Matches a text that contains every fragment: `CHECK(what == test::Contains{"7 tokens", "[2, 6, 4]"})`.
struct Contains {
    Contains(std::initializer_list<std::string> every) : fragments(every) {}
    std::vector<std::string> fragments;

    friend bool operator==(const std::string& text, const Contains& c) {
        return std::all_of(c.fragments.begin(), c.fragments.end(),
                           [&](const std::string& f) { return text.find(f) != std::string::npos; });
    }
    friend std::ostream& operator<<(std::ostream& os, const Contains& c) {
        os << "contains";
        for (const auto& f : c.fragments) os << " \"" << f << '"';
        return os;
    }
};

/// The message of the `std::exception` that `f` throws, or `"(no exception)"`.
inline std::string thrown_message(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no exception)";
}

/// `CHECK_THROWS_CONTAINING(expr, "fragment", ...)`: `expr` throws, and its message contains
/// every fragment (Catch2's `CHECK_THROWS_WITH(expr, Contains(a) && Contains(b))`).
#define CHECK_THROWS_CONTAINING(expr, ...) \
    CHECK(test::thrown_message([&] { static_cast<void>(expr); }) == test::Contains{__VA_ARGS__})

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
