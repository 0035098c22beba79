// The inside of the safetensors reader (safetensors.hpp), shared by its two files: the header's
// parser (safetensors_header.cpp) and the file's reader and writer (safetensors.cpp). Not part
// of the public API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/safetensors.hpp"

namespace attn::io::detail {

/// The length of the valid UTF-8 sequence at `text[i]`, or 0 (overlong forms, surrogates and
/// code points above U+10FFFF are invalid, as in Rust's `str`).
std::size_t utf8_sequence(std::string_view text, std::size_t i);

/// A name, key or token from a file as a message may show it: control characters and bytes
/// that are not UTF-8 escaped (`\n`, `\x1b`, `\xff`), at most `limit` bytes (then `...`).
std::string printable(std::string_view text, std::size_t limit = 200);

/// `<file>: <what>` as a std::runtime_error.
[[noreturn]] void fail(const std::string& file, const std::string& what);

/// `<file>: <name>: <what>` as a std::runtime_error (the name made printable).
[[noreturn]] void fail_tensor(const std::string& file, std::string_view name, const std::string& what);

/// The header of a file: its entries in the header's order, and its metadata.
struct ParsedHeader {
    std::vector<TensorInfo> entries;
    Metadata metadata;
};

/// Parses the header's JSON (the `N` bytes after the length), refusing anything but the format's
/// one object: every check of `load_safetensors` on the JSON's form (not yet the dtypes, sizes
/// or layout). Allocates no more than the header's own size.
/// @throws std::runtime_error `"<file>: ..."` as `load_safetensors`.
ParsedHeader parse_header(std::string_view json, const std::string& file);

}  // namespace attn::io::detail
