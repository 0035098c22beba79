/// @file message_check.hpp
/// @brief One check of every error message the bad-input table and the fuzzers see (issue
/// 32): a message that says "expected X, got Y" must not name the same X twice. Such a
/// message names the wrong thing: the check that failed compared another field than the one
/// it shows ("keys ...: expected [1, 1, 1, 2], got [1, 1, 1, 2]" when the values were wrong).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace message_check {

/// The "got" part of a message from `start`: a bracketed shape `[...]` whole, or a word up to
/// the next space, comma, semicolon or parenthesis.
inline std::string_view got_part(std::string_view m, std::size_t start) {
    if (start < m.size() && m[start] == '[') {
        const std::size_t close = m.find(']', start);
        return m.substr(start, close == std::string_view::npos ? std::string_view::npos : close - start + 1);
    }
    const std::size_t end = m.find_first_of(" ,;()", start);
    return m.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

/// Whether `message` holds "expected X, got X" (the same X on both sides) anywhere.
inline bool expected_equals_got(std::string_view message) {
    constexpr std::string_view expected = "expected ", got = ", got ";
    for (std::size_t e = message.find(expected); e != std::string_view::npos;
         e = message.find(expected, e + 1)) {
        const std::size_t g = message.find(got, e);
        if (g == std::string_view::npos) return false;
        const std::string_view want = message.substr(e + expected.size(), g - e - expected.size());
        if (!want.empty() && want == got_part(message, g + got.size())) return true;
    }
    return false;
}

}  // namespace message_check
