#include "textbook/text_file.hpp"

#include "attn/text/read_file.hpp"
#include "attn/text/utf8.hpp"

#include <charconv>
#include <cstdio>
#include <stdexcept>

namespace textbook {

namespace {

// `0x0C`: how a message names a byte it must not echo.
std::string hex_byte(unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    return hex;
}

}  // namespace

std::size_t first_non_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const attn::Utf8Step step = attn::utf8_step(text, i);
        if (!step.valid || text[i] == '\0') return i;
        i += step.length;
    }
    return std::string_view::npos;
}

void throw_at(const std::filesystem::path& file, std::size_t line, const std::string& why) {
    throw std::runtime_error(file.string() + ":" + std::to_string(line) + ": " + why);
}

void require_utf8(const std::filesystem::path& file, std::size_t line, std::string_view text) {
    const std::size_t bad = first_non_utf8(text);
    if (bad == std::string_view::npos) return;
    throw_at(file, line, "byte " + hex_byte(static_cast<unsigned char>(text[bad])) + " at column " + std::to_string(bad + 1) +
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

void require_text_line(const std::filesystem::path& file, std::size_t line,
                       std::string_view text) {
    if (!text.empty() && text.back() == '\r')
        throw_at(file, line,
                 "line ends with CR (a Windows line ending); the data files use LF line endings: they are "
                 "read byte for byte (a block is compared with what a program prints, lines ending in LF), "
                 "so a CR would be a difference; convert the file (dos2unix)");
    require_utf8(file, line, text);
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\t') || c == 0x7F)
            throw_at(file, line, "byte " + hex_byte(c) +
                                     (c == '\r' ? " (a carriage return)" : " (a control character)") +
                                     " at column " + std::to_string(i + 1) + " is not text");
        // C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F): a terminal may act on them too.
        if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F)
            throw_at(file, line, "U+00" + hex_byte(static_cast<unsigned char>(text[i + 1])).substr(2) +
                                     " (a control character) at column " + std::to_string(i + 1) +
                                     " is not text");
    }
}

std::string read_data_file(const std::filesystem::path& file) { return attn::read_file(file); }

std::vector<std::string_view> data_lines(const std::filesystem::path& file,
                                         std::string_view text, std::size_t first_line) {
    std::vector<std::string_view> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        const std::size_t line = first_line + lines.size();
        const std::string_view l =
            text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        require_text_line(file, line, l);
        if (end == std::string_view::npos)
            throw_at(file, line, "the last line has no line ending (LF): the file looks cut short");
        lines.push_back(l);
        start = end + 1;
    }
    return lines;
}

std::optional<std::uint64_t> parse_integer(std::string_view field, std::uint64_t max) {
    std::uint64_t value = 0;
    const char* const end = field.data() + field.size();
    const auto [ptr, ec] = std::from_chars(field.data(), end, value);
    if (field.empty() || ec != std::errc() || ptr != end || value > max) return std::nullopt;
    return value;
}

std::string quoted(std::string_view field) {
    constexpr std::size_t limit = 60;
    std::size_t cut = field.size();
    if (cut > limit) {
        cut = limit;
        while (cut > 0 && (static_cast<unsigned char>(field[cut]) & 0xC0) == 0x80) --cut;
    }
    std::string out = "'";
    for (const char ch : field.substr(0, cut)) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7F) out += "\\x" + hex_byte(c).substr(2);
        else out += ch;
    }
    return out + (cut < field.size() ? "...'" : "'");
}

}  // namespace textbook
