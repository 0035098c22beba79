// UTF-8 decoding steps, and a Python str's length and slices (utf8.hpp).
#include "attn/text/utf8.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attn {

Utf8Step utf8_step(std::string_view s, std::size_t i) noexcept {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) return {1, true};
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;       // no overlong 3-byte forms
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;       // no UTF-16 surrogates
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;       // no overlong 4-byte forms
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;       // nothing above U+10FFFF
    else return {1, false};                       // continuation byte, C0, C1, F5..FF
    std::size_t k = 1;
    for (; k < len && i + k < s.size(); ++k) {
        const unsigned char b = byte(i + k);
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
    }
    return {k, k == len};
}

namespace {

// The number of code points of `text`, checking the whole text (a Python `str` is always
// valid): two passes over the bytes in a slice, no table of offsets (a corpus can be large).
std::size_t count_code_points(std::string_view text, const char* where) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < text.size(); ++count) {
        const Utf8Step step = utf8_step(text, i);
        if (!step.valid) {
            static constexpr char hex[] = "0123456789ABCDEF";
            const auto b = static_cast<unsigned char>(text[i]);
            throw std::invalid_argument(std::string(where) + ": the text is not UTF-8: byte 0x" +
                                        hex[b >> 4] + hex[b & 15] + " at offset " + std::to_string(i));
        }
        i += step.length;
    }
    return count;
}

// The byte offset of code point `k` of a valid `text` (`text.size()` for `k` = its length).
std::size_t byte_offset(std::string_view text, std::size_t from_byte, std::size_t k) {
    std::size_t i = from_byte;
    for (; k > 0; --k) i += utf8_step(text, i).length;
    return i;
}

// Python's slice bound: a negative index counts from the end; then clamped to [0, len].
std::size_t slice_bound(std::int64_t index, std::size_t len) {
    const auto n = static_cast<std::int64_t>(len);  // len <= text.size() < 2^63
    if (index < 0) index = std::max<std::int64_t>(index + n, 0);
    return static_cast<std::size_t>(std::min(index, n));
}

}  // namespace

std::size_t utf8_len(std::string_view text) { return count_code_points(text, "utf8_len"); }

std::string_view utf8_slice(std::string_view text, std::int64_t start, std::int64_t stop) {
    const std::size_t len = count_code_points(text, "utf8_slice");
    const std::size_t a = slice_bound(start, len), b = slice_bound(stop, len);
    if (b <= a) return text.substr(0, 0);
    const std::size_t first = byte_offset(text, 0, a);
    return text.substr(first, byte_offset(text, first, b - a) - first);
}

}  // namespace attn
