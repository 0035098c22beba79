#include "attn/core/text_file.hpp"

#include <cstdio>
#include <stdexcept>

namespace attn {

std::size_t first_non_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c == 0) return i;
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) { len = 3; lo = 0xA0; }   // no overlong 3-byte forms
        else if (c >= 0xE1 && c <= 0xEC) len = 3;
        else if (c == 0xED) { len = 3; hi = 0x9F; }   // no UTF-16 surrogates
        else if (c >= 0xEE && c <= 0xEF) len = 3;
        else if (c == 0xF0) { len = 4; lo = 0x90; }   // no overlong 4-byte forms
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else if (c == 0xF4) { len = 4; hi = 0x8F; }   // nothing above U+10FFFF
        else return i;                                // continuation byte, C0, C1, F5..FF
        if (i + len > n) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (std::size_t k = 2; k < len; ++k)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += len;
    }
    return std::string_view::npos;
}

void throw_at(const std::filesystem::path& file, std::size_t line, const std::string& why) {
    throw std::runtime_error(file.string() + ":" + std::to_string(line) + ": " + why);
}

void require_utf8(const std::filesystem::path& file, std::size_t line, std::string_view text) {
    const std::size_t bad = first_non_utf8(text);
    if (bad == std::string_view::npos) return;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw_at(file, line, std::string("byte ") + hex + " at column " + std::to_string(bad + 1) +
                             " is not UTF-8 text");
}

void require_utf8_lines(const std::filesystem::path& file, std::string_view text,
                        std::size_t first_line) {
    std::size_t line = first_line;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = text.find('\n', start);
        const std::string_view l =
            text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        require_utf8(file, line, l);
        if (end == std::string_view::npos) break;
        start = end + 1;
        ++line;
    }
}

}  // namespace attn
