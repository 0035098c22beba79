/// @file tokenizer_data.hpp
/// @brief The recorded output of a tokenizer (data/tokenizer/*.tsv): texts and the ids a
/// tokenizer gave them, read whole-field by `TokenizerData::load`. The padding collator
/// (attn/attention/padding.hpp) batches them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace textbook {

/// One text and the ids a tokenizer gave it (with the BOS token, without padding).
struct TokenizedText {
    std::string text;                      ///< the text, e.g. `Something random`
    std::vector<std::int64_t> input_ids;  ///< e.g. `[1, 13264, 5509]`
};

/// The recorded output of a tokenizer for notebook 000's texts
/// (`data/tokenizer/mistral-7b-v0.1_000.tsv`, written by `tools/tokenize/tokenize.mjs`).
struct TokenizerData {
    std::int64_t unk_token_id = -1;  ///< `<unk>` (0 for Mistral-7B)
    std::int64_t bos_token_id = -1;  ///< `<s>` (1)
    std::int64_t eos_token_id = -1;  ///< `</s>` (2); notebook 000 In [18] uses it as the pad id
    std::vector<TokenizedText> texts;  ///< in file order
    std::vector<std::string> provenance;  ///< the file's `#` comment lines, without the `# `

    /// Reads the tab-separated file: one `special<TAB>role<TAB>token<TAB>id` row per role
    /// (`unk`, `bos`, `eos`) and `text<TAB>text<TAB>ids` rows, the ids separated by single
    /// spaces; `#` lines are comments. Every field is parsed whole (an id is a non-negative
    /// int64 in decimal, nothing left over).
    /// @throws std::runtime_error naming the file when it cannot be read (`read_data_file`),
    /// and `file:line` when a line is not text (a CR line ending, a control character, a
    /// byte that is not UTF-8: `data_lines`), the file is cut short (no final line ending), a
    /// row is malformed or repeats a role or a text (naming the first line), or a special
    /// token is still missing at the end (the last line).
    static TokenizerData load(const std::filesystem::path& path);

    /// The ids of every text, in order (the collator's input).
    std::vector<std::vector<std::int64_t>> sequences() const;
};

}  // namespace textbook
