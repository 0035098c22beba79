// Tests for attn/text/gpt2_tokenizer.hpp: GPT-2's byte-level BPE with OpenAI's files.
//
// Expected values: the ids Raschka's chapters 2 and 4 print (data/tokenizer/gpt2_raschka*.tsv,
// copied from his notebooks' text); the ids an independent implementation gives varied texts
// (data/tokenizer/gpt2_gpt-3-encoder*.tsv, npm gpt-3-encoder 1.1.4, recorded by
// tools/tokenize/gpt2.mjs); pieces and byte spellings worked out by hand from the definitions
// in OpenAI's encoder.py (its pattern, with `\s` as Python's regex module reads it, and
// `bytes_to_unicode`); and round trips, which hold for any UTF-8 text.
#include <cstdint>
#include <random>
#include <stdexcept>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "attn/text/gpt2_tokenizer.hpp"
#include "textbook/book.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_gpt2_tokenizer {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using Ids = std::vector<std::int64_t>;
using Pieces = std::vector<std::string_view>;

const attn::GPT2Tokenizer& tok() { return textbook::gpt2_tokenizer(); }

textbook::TokenizerData recorded(const char* name) {
    const auto data = textbook::TokenizerData::load(textbook::data_dir() / "tokenizer" / name);
    // GPT-2's one special token stands for all three roles (Hugging Face's GPT2Tokenizer).
    REQUIRE(data.eos_token_id == 50256);
    REQUIRE(data.bos_token_id == 50256);
    REQUIRE(data.unk_token_id == 50256);
    return data;
}

// UTF-8 of a code point (no surrogates).
void append_utf8(std::string& s, char32_t c) {
    if (c < 0x80) {
        s += char(c);
    } else if (c < 0x800) {
        s += char(0xC0 | (c >> 6));
        s += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += char(0xE0 | (c >> 12));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    } else {
        s += char(0xF0 | (c >> 18));
        s += char(0x80 | ((c >> 12) & 0x3F));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    }
}

std::string joined(const Pieces& pieces) {
    std::string s;
    for (const auto p : pieces) s += p;
    return s;
}

}  // namespace

TEST_CASE("GPT-2's files: 50257 tokens, 50000 merges, <|endoftext|> = 50256") {
    CHECK(tok().n_vocab() == 50257);  // GPT_CONFIG_124M["vocab_size"], Raschka 4 In [2]
    CHECK(tok().n_merges() == 50000);
    CHECK(tok().eot_token() == 50256);
    CHECK(tok().token_bytes(50256) == "<|endoftext|>");
    CHECK(tok().decode({50256}) == "<|endoftext|>");
}

TEST_CASE("bytes_to_unicode spells each byte as encoder.py does") {
    const auto cs = attn::gpt2_bytes_to_unicode();
    CHECK(cs['!'] == U'!');
    CHECK(cs['~'] == U'~');
    CHECK(cs[0xA1] == U'¡');
    CHECK(cs[0xFF] == U'ÿ');
    // The 68 others take U+0100 + n in byte order: 0x00..0x20 are n = 0..32, 0x7F is 33,
    // 0x80..0xA0 are 34..66, 0xAD is 67.
    CHECK(cs[0x00] == U'\u0100');
    CHECK(cs['\n'] == U'\u010A');  // Ċ
    CHECK(cs[' '] == U'\u0120');   // Ġ, the space every word token starts with
    CHECK(cs[0x7F] == U'\u0121');
    CHECK(cs[0x80] == U'\u0122');
    CHECK(cs[0xA0] == U'\u0142');
    CHECK(cs[0xAD] == U'\u0143');
}

TEST_CASE("Raschka's printed ids: encode and decode") {
    const auto data = recorded("gpt2_raschka.tsv");
    REQUIRE(data.texts.size() == 6);
    for (const auto& t : data.texts) {
        CAPTURE(t.text);
        CHECK(tok().encode(t.text, {"<|endoftext|>"}) == t.input_ids);
        CHECK(tok().decode(t.input_ids) == t.text);
    }
    // Raschka 4 In [4] and In [30] call encode(text) without allowed_special.
    CHECK(tok().encode("Every effort moves you") == Ids{6109, 3626, 6100, 345});
    CHECK(tok().encode("Every day holds a") == Ids{6109, 1110, 6622, 257});
    CHECK(tok().encode("Hello, I am") == Ids{15496, 11, 314, 716});
}

TEST_CASE("Raschka's printed ids: decode (generated and single tokens)") {
    const auto data = recorded("gpt2_raschka_decoded.tsv");
    REQUIRE(data.texts.size() == 14);
    for (const auto& t : data.texts) {
        CAPTURE(t.text);
        CHECK(tok().decode(t.input_ids) == t.text);
    }
    CHECK(tok().token_bytes(33901) == "Ak");  // Raschka 2 In [30]
    CHECK(tok().token_bytes(220) == " ");
}

TEST_CASE("decode with errors=replace: U+FFFD per maximal invalid subpart, as Python's bytes.decode") {
    // The tokens of single bytes spell any byte string; the expected strings are what
    // Python 3.11's b.decode("utf-8", errors="replace") returns (tiktoken's decode).
    std::map<unsigned char, std::int64_t> byte_id;
    for (std::int64_t id = 0; id < tok().n_vocab(); ++id)
        if (const auto b = tok().token_bytes(id); b.size() == 1) byte_id.emplace(static_cast<unsigned char>(b[0]), id);
    REQUIRE(byte_id.size() == 256);
    const auto ids = [&](std::string_view bytes) {
        Ids out;
        for (const char c : bytes) out.push_back(byte_id.at(static_cast<unsigned char>(c)));
        return out;
    };
    const std::string fffd = "\xEF\xBF\xBD";
    const std::pair<std::string, std::string> cases[] = {
        {"\xF0\x9F", fffd},                       // a cut emoji: one replacement
        {"\xFF", fffd},                            // never a UTF-8 byte
        {"\xE2\x82" "a", fffd + "a"},             // the breaking byte read again
        {"\xED\xA0\x80", fffd + fffd + fffd},     // a surrogate: three
        {"\xE0\x80\xAF", fffd + fffd + fffd},     // overlong: three
        {"a\xC3", "a" + fffd},                     // cut at the end
        {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},  // valid: unchanged
    };
    for (const auto& [bytes, want] : cases) {
        CAPTURE(bytes);
        CHECK(tok().decode(ids(bytes), attn::DecodeErrors::replace) == want);
        CHECK(tok().decode(ids(bytes)) == bytes);  // keep_bytes: unchanged
    }
}

TEST_CASE("varied texts: the ids of gpt-3-encoder (encode_ordinary)") {
    const auto data = recorded("gpt2_gpt-3-encoder.tsv");
    REQUIRE(data.texts.size() >= 20);
    for (const auto& t : data.texts) {
        CAPTURE(t.text);
        CHECK(tok().encode_ordinary(t.text) == t.input_ids);
        CHECK(tok().decode(t.input_ids) == t.text);
        CHECK(joined(tok().pretokenize(t.text)) == t.text);
        if (t.text.find("<|endoftext|>") == std::string::npos)
            CHECK(tok().encode(t.text) == t.input_ids);
        else  // tiktoken's encode refuses a special token it was not allowed
            CHECK_THROWS_AS(tok().encode(t.text), std::invalid_argument);
    }
}

TEST_CASE("texts with <|endoftext|>: allowed_special as tiktoken") {
    const auto data = recorded("gpt2_gpt-3-encoder_endoftext.tsv");
    REQUIRE(data.texts.size() == 5);
    for (const auto& t : data.texts) {
        CAPTURE(t.text);
        CHECK(tok().encode(t.text, {"<|endoftext|>"}) == t.input_ids);
        CHECK(tok().decode(t.input_ids) == t.text);
    }
    // As plain text, the special token is its three pieces <|, endoftext, |>.
    CHECK(tok().encode_ordinary("<|endoftext|>") == Ids{27, 91, 437, 1659, 5239, 91, 29});
}

TEST_CASE("pre-tokenisation: GPT-2's pattern, worked out by hand") {
    // A word keeps its leading space; a run of spaces gives all but the last to the run,
    // the last to the next word (`\s+(?!\S)`); contractions are pieces of their own
    // (lower case only: encoder.py's pattern has no IGNORECASE).
    CHECK(tok().pretokenize("Hello, I'm  here") == Pieces{"Hello", ",", " I", "'m", " ", " here"});
    CHECK(tok().pretokenize("DON'T") == Pieces{"DON", "'", "T"});
    CHECK(tok().pretokenize("x  \n\n y") == Pieces{"x", "  \n\n", " y"});
    CHECK(tok().pretokenize("end   ") == Pieces{"end", "   "});
    CHECK(tok().pretokenize("a1b22 ?!") == Pieces{"a", "1", "b", "22", " ?!"});
    CHECK(tok().pretokenize("").empty());
    // `\s` is White_Space, as Python's regex module reads it for encoder.py: U+0085 is a
    // space (JavaScript's `\s` disagrees), U+FEFF is not (JavaScript's agrees with neither).
    CHECK(tok().pretokenize("a\u0085\u0085b") == Pieces{"a", "\u0085", "\u0085", "b"});
    CHECK(tok().pretokenize("a \ufeff") == Pieces{"a", " \ufeff"});
    // A combining mark is neither a letter nor a number: "e" + U+0301 is two pieces.
    CHECK(tok().pretokenize("e\u0301") == Pieces{"e", "\u0301"});
}

TEST_CASE("encode and decode of nothing") {
    CHECK(tok().encode("").empty());
    CHECK(tok().encode_ordinary("").empty());
    CHECK(tok().decode({}).empty());
}

TEST_CASE("decode returns the bytes, also when a token holds part of a character") {
    // " 😀" is the tokens 30325 (" " and the emoji's first three bytes) and 222 (its last byte),
    // as gpt-3-encoder encodes "Emoji: 😀" (data/tokenizer/gpt2_gpt-3-encoder.tsv).
    CHECK(tok().encode_ordinary(" \U0001F600") == Ids{30325, 222});
    CHECK(tok().decode({30325}) == " \xF0\x9F\x98");
    CHECK(tok().decode({222}) == "\x80");
    CHECK(tok().decode({30325}) + tok().decode({222}) == " \U0001F600");
}

TEST_CASE("round trips on random UTF-8 texts") {
    std::mt19937_64 rng(20251126);
    // Code points from every kind GPT-2's pattern tells apart: ASCII letters, digits,
    // punctuation, spaces and controls; Latin-1 (NBSP, U+0085); letters of other scripts;
    // combining marks; CJK; emoji and the rest of the astral planes; unassigned code points.
    const std::vector<std::pair<char32_t, char32_t>> ranges = {
        {0x00, 0x7F},     {0x20, 0x20},     {0x09, 0x0D},     {'a', 'z'},       {'0', '9'},
        {0x80, 0xFF},     {0x0100, 0x07FF}, {0x0300, 0x036F}, {0x2000, 0x206F}, {0x3000, 0x30FF},
        {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xE000, 0xFFFF}, {0x1F300, 0x1FAFF}, {0x10000, 0x10FFFF},
    };
    for (int i = 0; i < 3000; ++i) {
        std::string text;
        const std::size_t length = rng() % 40;
        for (std::size_t k = 0; k < length; ++k) {
            const auto& [lo, hi] = ranges[rng() % ranges.size()];
            char32_t c = lo + char32_t(rng() % (hi - lo + 1));
            if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;  // surrogates are not characters
            append_utf8(text, c);
        }
        CAPTURE(text);
        const auto ids = tok().encode_ordinary(text);
        for (const auto id : ids) REQUIRE((id >= 0 && id < 50256));  // never the special token
        REQUIRE(tok().decode(ids) == text);
        REQUIRE(joined(tok().pretokenize(text)) == text);
    }
}

TEST_CASE("long pieces: a megabyte of one kind of character, or of random letters, is one piece, and round-trips") {
    for (const std::string& text : {std::string(1 << 20, ' '), std::string(1 << 20, 'a'),
                                    std::string(1 << 20, '\n'), std::string(1 << 20, '!'),
                                    std::string(1 << 20, '7')}) {
        CAPTURE(text.substr(0, 1));
        CHECK(tok().pretokenize(text).size() == 1);
        const auto ids = tok().encode(text);
        CHECK(ids.size() <= text.size());
        CHECK(tok().decode(ids) == text);
    }
    // A piece of random letters has thousands of distinct merges; encoder.py's rounds would
    // take minutes on it (each round scans the piece), the heap takes milliseconds.
    std::mt19937 rng(7);
    std::string letters(1 << 18, 'a');
    for (auto& c : letters) c = char('a' + rng() % 26);
    const auto ids = tok().encode(letters);
    CHECK(tok().pretokenize(letters).size() == 1);
    CHECK(tok().decode(ids) == letters);
}

}  // namespace test_gpt2_tokenizer
