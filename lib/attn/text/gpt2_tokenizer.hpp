/// @file gpt2_tokenizer.hpp
/// @brief GPT-2's tokenizer: byte-level byte-pair encoding with OpenAI's own files
/// (`encoder.json`, 50,257 tokens; `vocab.bpe`, 50,000 merges), text <-> token ids.
///
/// Sources: OpenAI's `gpt-2/src/encoder.py` (`bytes_to_unicode`, the pre-tokenisation pattern,
/// `bpe`, `encode`, `decode`) and tiktoken's `gpt2` encoding (`tiktoken_ext/openai_public.py`:
/// the files' SHA-256, `<|endoftext|>` = 50256, `encode(text, allowed_special=...)`,
/// `encode_ordinary`, `n_vocab`, `eot_token`), which Raschka's chapters 2 and 4 call as
/// `tiktoken.get_encoding("gpt2")`.
///
/// How a text becomes ids:
/// 1. **Pre-tokenisation.** GPT-2's pattern
///    `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` cuts the text
///    into pieces (a word with its leading space, a run of digits, of punctuation, of
///    whitespace); no merge ever crosses a piece. Matched with PCRE2 in UTF mode, `\s` read as
///    Python's `regex` module reads it (the Unicode property White_Space, U+0085 included).
/// 2. **Bytes.** Each piece is taken as its UTF-8 bytes, each byte one symbol (the token of
///    that byte). encoder.py spells a byte as a printable character (`bytes_to_unicode`: the
///    space is `Ġ`, U+0120); this library keeps bytes and reads the files through that map.
/// 3. **Merges.** Repeatedly, the adjacent pair of symbols whose merge comes first in
///    `vocab.bpe` is merged everywhere in the piece (left to right, without overlap), until no
///    adjacent pair is a merge. Each remaining symbol is a token of `encoder.json`.
///
/// Unicode: PCRE2 10.42 (Debian 12) classifies letters and digits by Unicode 14; a character
/// assigned later (Python's `regex` knows newer versions) counts as "other" here, and may be
/// cut into pieces differently than by OpenAI's encoder.py.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

/// encoder.py's `bytes_to_unicode()`: the printable character that spells each byte in
/// `encoder.json` and `vocab.bpe`. The 188 bytes `!`..`~`, `¡`..`¬`, `®`..`ÿ` spell
/// themselves; the other 68 (controls, space, DEL, U+00A0, U+00AD, ...) take U+0100 + n in
/// byte order (the space, 0x20, is `Ġ` U+0120; the newline, 0x0A, `Ċ` U+010A).
/// @return code points indexed by byte value.
std::array<char32_t, 256> gpt2_bytes_to_unicode();

/// What `GPT2Tokenizer::decode` does with bytes that are not UTF-8 (tiktoken's `errors=`).
enum class DecodeErrors {
    keep_bytes,  ///< return them unchanged (tiktoken's `decode_bytes`)
    replace,     ///< replace each invalid sequence by U+FFFD (`errors="replace"`, the default of Python's decode)
};

/// GPT-2's byte-level BPE tokenizer (the `gpt2` encoding of tiktoken, OpenAI's encoder.py).
/// Immutable once loaded; copies share the tables; every const member is safe to call from
/// several threads at once.
class GPT2Tokenizer {
public:
    /// SHA-256 of `encoder.json` as OpenAI published it (with GPT-2's models, and at
    /// `gpt-2/encodings/main/` where tiktoken downloads it), as tiktoken pins it.
    static constexpr std::string_view encoder_json_sha256 =
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783";
    /// SHA-256 of `vocab.bpe` as OpenAI published it, as tiktoken pins it.
    static constexpr std::string_view vocab_bpe_sha256 =
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5";
    /// The size of OpenAI's `encoder.json` in bytes (named when a file is cut short).
    static constexpr std::uint64_t encoder_json_bytes = 1042301;
    /// The size of OpenAI's `vocab.bpe` in bytes.
    static constexpr std::uint64_t vocab_bpe_bytes = 456318;
    /// GPT-2's one special token (tiktoken's `ENDOFTEXT`), id 50256 in `encoder.json`.
    static constexpr std::string_view endoftext = "<|endoftext|>";

    /// Loads `directory/encoder.json` and `directory/vocab.bpe` (see the overload).
    static GPT2Tokenizer load(const std::filesystem::path& directory);

    /// Loads the two files, checking first that each is byte for byte OpenAI's (SHA-256), then
    /// reading them: `encoder.json` (token spelled by `gpt2_bytes_to_unicode` -> id, 0..50256)
    /// and `vocab.bpe` (a `#version` line, then one merge `first second` per line, in rank
    /// order; encoder.py's `bpe_data.split('\n')[1:-1]`).
    /// @throws std::runtime_error naming the file and the reason: `"<file>: cannot be read (no
    /// such file)"` (or not a regular file, or a read failed); `"<file>: not GPT-2's
    /// encoder.json as OpenAI published it: SHA-256 <actual>, expected <pinned>"`, with `"the
    /// file has N bytes, OpenAI's M: cut short?"` when it is shorter (a truncated download);
    /// `"<file>:<line>: ..."` if the content is malformed (cannot happen once the hash
    /// matched, kept so that the parser never trusts its input).
    static GPT2Tokenizer load(const std::filesystem::path& encoder_json,
                              const std::filesystem::path& vocab_bpe);

    /// tiktoken's `encode(text, allowed_special=...)` with its default
    /// `disallowed_special="all"`: the ids of `text` (UTF-8), where each occurrence of a special
    /// token named in `allowed_special` (only `"<|endoftext|>"` exists) becomes its id (50256)
    /// and the text between is encoded as by `encode_ordinary`.
    /// Raschka 2 In [27]: `"Hello, do you like tea? <|endoftext|> In the sunlit terraces of
    /// someunknownPlace."` with `{"<|endoftext|>"}` -> `[15496, 11, 466, 345, 588, 8887, 30, 220,
    /// 50256, 554, ...]`; Raschka 4 In [4]: `"Every effort moves you"` -> `[6109, 3626, 6100, 345]`.
    /// @return `[n]` token ids, int64 (as `torch.tensor(ids)` holds them), each in 0..50256.
    /// @throws std::invalid_argument when `text` is not UTF-8 (naming the first bad byte and
    /// its offset: tiktoken encodes a Python `str`, which is always Unicode); when `text`
    /// contains a special token not in `allowed_special` (tiktoken raises ValueError: allow it,
    /// or call `encode_ordinary` to encode it as plain text); when `allowed_special` names
    /// something that is not a special token of GPT-2.
    std::vector<std::int64_t> encode(std::string_view text,
                                     const std::vector<std::string>& allowed_special = {}) const;

    /// tiktoken's `encode_ordinary(text)`, and OpenAI's encoder.py `encode`: every character is
    /// plain text, so `<|endoftext|>` becomes `[27, 91, 437, 1659, 5239, 91, 29]` (`<|`,
    /// `endoftext`, `|>`).
    /// @return `[n]` token ids, int64.
    /// @throws std::invalid_argument when `text` is not UTF-8, as `encode`.
    std::vector<std::int64_t> encode_ordinary(std::string_view text) const;

    /// The bytes of the tokens, concatenated (tiktoken's `decode_bytes`); a special token's id
    /// gives its text (`50256` -> `<|endoftext|>`).
    /// Raschka 4 In [32]: `[15496, 11, 314, 716, 27018, 24086, 47843, 30961, 42348, 7267]` ->
    /// `"Hello, I am Featureiman Byeswickattribute argue"`.
    /// The result is not always UTF-8: a token may hold part of a character (the ids of one
    /// emoji decoded one at a time), and any id sequence is accepted. It is returned as those
    /// bytes, unchanged, so that decoding token by token and concatenating gives the text back;
    /// tiktoken's and encoder.py's `decode` instead replace each invalid sequence by U+FFFD
    /// (`errors='replace'`). For valid input, `decode(encode(s)) == s`.
    /// @throws std::invalid_argument naming the id, its position and the vocabulary size when
    /// an id is outside 0..n_vocab()-1 (tiktoken raises KeyError).
    std::string decode(const std::vector<std::int64_t>& ids) const;

    /// tiktoken's `decode(ids, errors="replace")`, what Raschka's `tokenizer.decode` prints:
    /// `decode(ids)`'s bytes with each invalid UTF-8 sequence replaced by U+FFFD, as Python's
    /// `bytes.decode("utf-8", errors="replace")` does (one U+FFFD per maximal invalid subpart).
    /// The result is always UTF-8. @throws std::invalid_argument as `decode`, and when `errors`
    /// is not a `DecodeErrors` value (nothing is decoded then).
    std::string decode(const std::vector<std::int64_t>& ids, DecodeErrors errors) const;

    /// The bytes of one token (tiktoken's `decode_single_token_bytes`): `33901` -> `Ak`,
    /// `220` -> a space (Raschka 2 In [30]).
    /// @throws std::invalid_argument as `decode`.
    std::string_view token_bytes(std::int64_t id) const;

    /// Step 1 alone: the pieces GPT-2's pattern cuts `text` into, in order; they concatenate
    /// to `text`. `"Hello, I'm  here"` -> `Hello`, `,`, ` I`, `'m`, ` `, ` here`. Views into
    /// `text`, valid while it is.
    /// @throws std::invalid_argument when `text` is not UTF-8, as `encode`.
    std::vector<std::string_view> pretokenize(std::string_view text) const;

    /// Step 3 alone: the ids of one piece of bytes (any bytes; no pre-tokenisation, no special
    /// tokens): encoder.py's `bpe(token)` looked up in `encoder.json`. A piece of 64 bytes or
    /// more (a long run of letters or digits) is merged with a heap of pairs, in O(n log n),
    /// to the same ids as encoder.py's rounds, which scan the piece once per merge (O(n^2):
    /// seconds for a piece of 100,000 random letters, where the heap takes milliseconds).
    std::vector<std::int64_t> bpe(std::string_view piece) const;

    /// The number of tokens, 50257 (tiktoken's `n_vocab`; `GPT_CONFIG_124M["vocab_size"]`).
    std::int64_t n_vocab() const;
    /// The number of merges in `vocab.bpe`, 50000.
    std::int64_t n_merges() const;
    /// The id of `<|endoftext|>`, 50256 (tiktoken's `eot_token`).
    std::int64_t eot_token() const;

private:
    struct Tables;
    explicit GPT2Tokenizer(std::shared_ptr<const Tables> tables);
    // Appends the ids of `text` as encode_ordinary gives them; `checked`: known to be UTF-8.
    void append_ordinary(std::string_view text, std::vector<std::int64_t>& ids, bool checked) const;
    std::shared_ptr<const Tables> tables_;
};

}  // namespace attn
