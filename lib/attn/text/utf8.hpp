// UTF-8 as Python and PCRE2 read it: one step of a decoder, shared by the tokenizer's
// errors="replace" decoding and the book's data-file checks; and a Python `str`'s length and
// slices, which count code points where a C++ string counts bytes.
#pragma once

#include <cstddef>
#include <cstdint>
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

/// Python's `len(text)` for the `str` whose UTF-8 bytes are `text`: its number of code points
/// (`len("café") == 4`, though it has 5 bytes). Raschka's chapter 5 (In [20]) splits The
/// Verdict at `int(0.90 * len(text_data))`: a count of characters, not of bytes.
/// @throws std::invalid_argument `"utf8_len: the text is not UTF-8: byte 0xNN at offset K"`
/// (the first byte of the first invalid sequence): a Python `str` is always Unicode, so there
/// is no length to give.
std::size_t utf8_len(std::string_view text);

/// Python's `text[start:stop]` on a `str` (step 1), as a view of the UTF-8 bytes of the code
/// points `start` to `stop - 1`: Raschka's `text_data[:split_idx]` is `utf8_slice(text, 0,
/// split_idx)` and `text_data[split_idx:]` is `utf8_slice(text, split_idx, utf8_len(text))`.
/// Python's rules for the bounds: a negative index counts from the end (`len + index`), an
/// index outside the text is clamped to it, and `stop <= start` gives `""`; never throws for
/// the bounds. The view is valid while `text`'s bytes are.
/// @throws std::invalid_argument `"utf8_slice: the text is not UTF-8: byte 0xNN at offset K"`,
/// as `utf8_len` (the whole text is checked, whatever the bounds).
std::string_view utf8_slice(std::string_view text, std::int64_t start, std::int64_t stop);

}  // namespace attn
