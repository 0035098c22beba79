/// @file tokenizer_data.hpp
/// @brief The recorded output of a tokenizer (data/tokenizer/*.tsv): texts and the ids a
/// tokenizer gave them, read whole-field by `TokenizerData::load`. The padding collator
/// (attn/attention/padding.hpp) batches them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/text/gpt2_tokenizer.hpp"

namespace textbook {

/// One text and the ids a tokenizer gave it (with the BOS token, without padding).
struct TokenizedText {
    std::string text;                      ///< the text, e.g. `Something random`
    std::vector<std::int64_t> input_ids;  ///< e.g. `[1, 13264, 5509]`
};

/// The recorded output of a tokenizer: notebook 000's texts
/// (`data/tokenizer/mistral-7b-v0.1_000.tsv`, written by `tools/tokenize/tokenize.mjs`), GPT-2's
/// ids of varied texts (`gpt2_gpt-3-encoder*.tsv`, written by `tools/tokenize/gpt2.mjs`) and
/// the ids Raschka's chapters print (`gpt2_raschka*.tsv`).
struct TokenizerData {
    std::int64_t unk_token_id = -1;  ///< `<unk>` (0 for Mistral-7B)
    std::int64_t bos_token_id = -1;  ///< `<s>` (1)
    std::int64_t eos_token_id = -1;  ///< `</s>` (2); notebook 000 In [18] uses it as the pad id
    std::vector<TokenizedText> texts;  ///< in file order
    std::vector<std::string> provenance;  ///< the file's `#` comment lines, without the `# `

    /// Reads the tab-separated file: one `special<TAB>role<TAB>token<TAB>id` row per role
    /// (`unk`, `bos`, `eos`) and `text<TAB>text<TAB>ids` rows, the ids separated by single
    /// spaces; `#` lines are comments. A text holding what a line cannot (a tab, a newline, a
    /// control character) is a `text_json<TAB>"text as a JSON string"<TAB>ids` row, its text
    /// one JSON string (RFC 8259 escapes, `\t`, `\n`, `\u2028`), read by nlohmann/json.
    /// Every field is parsed whole (an id is a non-negative int64 in decimal, nothing left
    /// over; the JSON field is one string and nothing else).
    /// @throws std::runtime_error naming the file when it cannot be read (`read_data_file`),
    /// and `path:line` when a line is not text (a CR line ending, a control character, a
    /// byte that is not UTF-8: `data_lines`), the file is cut short (no final line ending), a
    /// row is malformed (a `text_json` field that is not one JSON string, with nlohmann's
    /// reason) or repeats a role or a text (naming the first line), or a special
    /// token is still missing at the end (the last line).
    static TokenizerData load(const std::filesystem::path& path);

    /// The ids of every text, in order (the collator's input).
    std::vector<std::vector<std::int64_t>> sequences() const;
};

/// GPT-2's tokenizer with OpenAI's files from the data directory (`data_dir() / "gpt2"`, see
/// `data/gpt2/README.md`), loaded once per program (the first call reads and checks 1.5 MB) --
/// what `tiktoken.get_encoding("gpt2")` is to Raschka's chapters.
/// @throws std::runtime_error as `attn::GPT2Tokenizer::load` (a file missing, cut short or not
/// OpenAI's), and again at the next call.
const attn::GPT2Tokenizer& gpt2_tokenizer();

}  // namespace textbook
