// A whole file's bytes, for the tokenizer's files (OpenAI's encoder.json and vocab.bpe) and the
// book's data files (textbook/text_file.hpp).
#pragma once

#include <filesystem>
#include <string>

namespace attn {

/// The bytes of `file`, read whole in binary mode (no newline translation, no decoding).
/// @throws std::runtime_error `"<file>: cannot be read (...)"` when it does not exist, is not a
/// regular file (a directory; a FIFO or device, which could block forever or never end), cannot
/// be opened or a read fails.
std::string read_file(const std::filesystem::path& file);

}  // namespace attn
