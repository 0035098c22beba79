// UTF-8 decoding steps (utf8.hpp).
#include "attn/text/utf8.hpp"

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

}  // namespace attn
