/// @file bad_input.hpp
/// @brief The bad-input table's machinery (issues 15 and 19), shared by its files
/// test_bad_input_<family>.cpp: what a careful user can hand the public API that is not what
/// the book does, and the exact outcome of each case -- the exception type and a substring of
/// its message naming what was wrong, or the result PyTorch gives.
///
/// Expected values: PyTorch 1.13 (Debian's python3-torch) for every "returns" case and for
/// which inputs are errors at all (`torch.zeros(2**32, 2**32)` raises "Storage size
/// calculation overflowed", `nn.Linear(0, 3)(torch.zeros(2, 0))` is the bias, ...); the issues
/// for the cases they list (crashes, silent wrong answers, hangs). The substrings are this
/// library's wording of what was wrong (PyTorch's own wording where the library uses it).
///
/// `ATTN_BAD_INPUT_CASE=N` runs case N of each family alone (0-based), so that a script can
/// run every case in a process of its own and tell crashes and hangs apart from wrong
/// outcomes; `ATTN_BAD_INPUT_LIST=1` prints each family's case names, one per line.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "attn/core/tensor.hpp"
#include "message_check.hpp"

namespace bad_input {

namespace fs = std::filesystem;

constexpr std::size_t K = std::size_t{1} << 32;
inline const float inf = std::numeric_limits<float>::infinity();
inline const float nan_f = std::numeric_limits<float>::quiet_NaN();

/// What a case must end in.
enum class Outcome { returns, invalid_argument, length_error, runtime_error, out_of_range };
constexpr Outcome IA = Outcome::invalid_argument;
constexpr Outcome LE = Outcome::length_error;
constexpr Outcome RE = Outcome::runtime_error;
constexpr Outcome OOR = Outcome::out_of_range;

/// One row: `run` either throws (expected type and message substring), or returns whether
/// its result is the PyTorch-equal one.
struct Case {
    std::string name;
    std::function<bool()> run;
    Outcome outcome;
    std::string substring;  ///< for the throwing outcomes
};

/// A family's rows, added with `err` (the case throws) and `ok` (the case returns true).
struct Table {
    std::vector<Case> cases;
    void err(std::string name, std::function<bool()> run, Outcome outcome, std::string substring) {
        cases.push_back({std::move(name), std::move(run), outcome, std::move(substring)});
    }
    void ok(std::string name, std::function<bool()> run) {
        cases.push_back({std::move(name), std::move(run), Outcome::returns, ""});
    }
};

/// A case that only has to return (its throw is what is checked).
#define RUN(expr) [] { (void)(expr); return true; }

inline const char* outcome_name(Outcome o) {
    switch (o) {
        case Outcome::returns: return "returns";
        case Outcome::invalid_argument: return "std::invalid_argument";
        case Outcome::length_error: return "std::length_error";
        case Outcome::runtime_error: return "std::runtime_error";
        case Outcome::out_of_range: return "std::out_of_range";
    }
    return "?";
}

inline Outcome outcome_of(const std::exception& e) {
    if (typeid(e) == typeid(std::invalid_argument)) return Outcome::invalid_argument;
    if (typeid(e) == typeid(std::length_error)) return Outcome::length_error;
    if (typeid(e) == typeid(std::runtime_error)) return Outcome::runtime_error;
    if (typeid(e) == typeid(std::out_of_range)) return Outcome::out_of_range;
    return Outcome::returns;  // never expected for an exception: reported as a mismatch
}

/// A tensor made directly with xtensor, whose shape's element count overflows: xtensor gives
/// it that shape and 0 elements (the library's factories refuse such a shape). xtensor's
/// stride computation overflows a signed long on the way, which UBSan reports: CI runs the
/// table with tests/ubsan.supp, which suppresses exactly that report.
inline attn::Tensor broken() { return attn::Tensor(xt::xarray<float>::from_shape({K, K})); }

inline bool same_shape(const attn::Tensor& t, const attn::Shape& s) { return attn::shape_of(t) == s; }

/// Equal shapes and values, NaN where `values` has NaN, signed zeros told apart.
inline bool all_equal(const attn::Tensor& t, const attn::Shape& s, const std::vector<float>& values) {
    if (attn::shape_of(t) != s || t.size() != values.size()) return false;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float a = t.data()[i], b = values[i];
        if (std::isnan(b) ? !std::isnan(a) : (a != b || std::signbit(a) != std::signbit(b)))
            return false;
    }
    return true;
}

// ------------------------------------------------------------------------ data files

/// Every directory the data-file cases made, removed when the table has run.
inline std::vector<fs::path>& made_dirs() {
    static std::vector<fs::path> dirs;
    return dirs;
}

/// A fresh directory (with a `book/` inside) under the system's temporary directory.
inline fs::path fresh_dir() {
    static int counter = 0;
    const fs::path dir = fs::temp_directory_path() /
                         ("attn_bad_input_" + std::to_string(::getpid()) + "_" +
                          std::to_string(++counter));
    fs::remove_all(dir);
    fs::create_directories(dir / "book");
    made_dirs().push_back(dir);
    return dir;
}

inline void write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

// ------------------------------------------------------------------------ running a family

/// Runs every case of a family (or the one `ATTN_BAD_INPUT_CASE` names) and checks its
/// outcome: the exception type, the substring, one line, and no "expected X, got X" (the same
/// X twice: a message naming the wrong thing, message_check.hpp); or a true result. Prints the
/// family's counts.
inline void run_table(const char* family, const std::vector<Case>& cases) {
    const char* only = std::getenv("ATTN_BAD_INPUT_CASE");
    if (std::getenv("ATTN_BAD_INPUT_LIST")) {
        for (std::size_t i = 0; i < cases.size(); ++i)
            std::printf("%s %zu %s\n", family, i, cases[i].name.c_str());
        return;
    }
    std::size_t returns = 0, throws = 0;
    for (std::size_t index = 0; index < cases.size(); ++index) {
        if (only && std::to_string(index) != only) continue;
        const Case& c = cases[index];
        (c.outcome == Outcome::returns ? returns : throws) += 1;
        INFO("case " << family << " " << index << ": " << c.name << " (expected " << outcome_name(c.outcome)
                     << " '" << c.substring << "')");
        Outcome got = Outcome::returns;
        std::string message;
        bool result = false;
        try {
            result = c.run();
        } catch (const std::exception& e) {
            got = outcome_of(e);
            message = e.what();
            if (got == Outcome::returns) message = std::string("unexpected exception type: ") + message;
        }
        INFO("got " << outcome_name(got) << ": " << message);
        if (c.outcome == Outcome::returns) {
            CHECK(got == Outcome::returns);
            CHECK(result);
        } else {
            CHECK(got == c.outcome);
            CHECK(message.find(c.substring) != std::string::npos);
            CHECK(message.find('\n') == std::string::npos);  // one line
            CHECK(message.find('\r') == std::string::npos);
            CHECK_FALSE(message_check::expected_equals_got(message));
        }
    }
    for (const auto& dir : made_dirs()) fs::remove_all(dir);
    made_dirs().clear();
    std::printf("bad-input table, %s: %zu cases, %zu errors with their message, %zu PyTorch-equal "
                "results\n", family, cases.size(), throws, returns);
}

}  // namespace bad_input
