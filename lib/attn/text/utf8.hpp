// UTF-8 as Python and PCRE2 read it: one step of a decoder, shared by the tokenizer's
// errors="replace" decoding and the book's data-file checks.
#pragma once

#include <cstddef>
#include <string_view>

namespace attn {

/// One step of a strict UTF-8 decoder at byte `i` of `s` (`i < s.size()`).
struct Utf8Step {
    /// Bytes taken: the whole sequence when `valid`, else the maximal subpart of an invalid one
    /// (a lead byte and the continuation bytes that fit it so far; at least 1). Python's
    /// `decode("utf-8", errors="replace")` puts one U+FFFD for each such subpart.
    std::size_t length;
    bool valid;  ///< a complete, shortest-form scalar value (no surrogate, at most U+10FFFF)
};

/// The sequence at `s[i]` (Unicode 15, table 3-7: the ranges of the second byte after E0,
/// ED, F0 and F4 exclude overlong forms, surrogates and values above U+10FFFF). Never throws;
/// the caller keeps `i < s.size()`.
Utf8Step utf8_step(std::string_view s, std::size_t i) noexcept;

}  // namespace attn
