/// @file text_file.hpp
/// @brief Checks shared by the parsers of the project's data files (the book's manifest and
/// blocks, the tokenizer TSVs, the chapters' prose pages): a data file is a regular file of
/// UTF-8 text in lines that end with LF, and every error names `path:line`.
///
/// A parser reads a file with `read_data_file`, splits it with `data_lines` (which checks
/// every line and that the file was not cut short), and parses fields whole with
/// `parse_integer` (`std::from_chars`, nothing left over). Its messages quote fields with
/// `quoted`, so they stay one line and never echo bytes that are not text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace textbook {

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

/// Checks that line `line` of `file` is a line of text: UTF-8 (`require_utf8`), no carriage
/// return, and no control character but the tab (the data files hold none; a terminal would
/// act on one in an error message).
/// @throws std::runtime_error `"<file>:<line>: line ends with CR (a Windows line ending); the
/// data files use LF line endings: they are read byte for byte ..."` (why, and what to do) for
/// a CRLF line, `"<file>:<line>: byte 0x0C (a control
/// character) at column N is not text"` for any other control byte, or as `require_utf8`.
void require_text_line(const std::filesystem::path& file, std::size_t line,
                       std::string_view text);

/// Reads a whole data file (attn::read_file).
/// @throws std::runtime_error `"<file>: cannot be read (...)"` when it does not exist, is not
/// a regular file (a directory; a FIFO or device, which could block forever or never end) or
/// a read fails.
std::string read_data_file(const std::filesystem::path& file);

/// The lines of a data file's whole `text`, without their `\n`, each checked with
/// `require_text_line`; line `i` of the result is line `first_line + i` of the file. An empty
/// text has no lines.
/// @throws std::runtime_error as `require_text_line`, naming the first bad line, and
/// `"<file>:<n>: the last line has no line ending (LF): the file looks cut short"` when
/// `text` does not end with `\n` (a file cut in the middle of `28808` would otherwise read
/// as `288`).
std::vector<std::string_view> data_lines(const std::filesystem::path& file,
                                         std::string_view text, std::size_t first_line = 1);

/// A non-negative decimal integer that fills the whole `field` (`std::from_chars`: no sign,
/// no spaces, no leading `+`, nothing left over), at most `max`; none otherwise (empty,
/// other characters, out of range).
std::optional<std::uint64_t> parse_integer(std::string_view field,
                                           std::uint64_t max = UINT64_MAX);

/// `field` between single quotes for an error message, cut after 60 bytes (at a UTF-8
/// boundary) with `...` so that a message stays short, control bytes written as `\xNN` so
/// that it stays one line and a terminal never acts on it. Callers quote checked text
/// (`require_text_line`, or a JSON string nlohmann checked as UTF-8).
std::string quoted(std::string_view field);

}  // namespace textbook
