/// @file text_file.hpp
/// @brief Checks shared by the parsers of the project's data files (the book's manifest and
/// blocks, the tokenizer TSVs): text must be UTF-8, and every error names `file:line`.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attn {

/// The byte offset of the first byte in `text` that does not belong to a well-formed UTF-8
/// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or
/// `std::string_view::npos` when all of it is UTF-8. A NUL byte counts as malformed too:
/// the data files are text.
std::size_t first_non_utf8(std::string_view text);

/// Throws `std::runtime_error("<file>:<line>: <why>")`: the one form of every data-file error.
[[noreturn]] void throw_at(const std::filesystem::path& file, std::size_t line,
                           const std::string& why);

/// Checks that `text`, line `line` of `file`, is UTF-8 (see `first_non_utf8`).
/// @throws std::runtime_error `"<file>:<line>: byte 0x.. at column N is not UTF-8 text"`;
/// the offending bytes are never echoed.
void require_utf8(const std::filesystem::path& file, std::size_t line, std::string_view text);

/// Checks every line of a whole file's `text` (lines counted from 1 at `first_line`).
/// @throws std::runtime_error as `require_utf8`, naming the first bad line.
void require_utf8_lines(const std::filesystem::path& file, std::string_view text,
                        std::size_t first_line = 1);

}  // namespace attn
