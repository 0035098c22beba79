// The bad-input table (issues 15, 19, 32), GPT-2's tokenizer (attn/text/gpt2_tokenizer.hpp,
// family "bpe"): its files missing, cut short, changed or swapped (each error naming the file
// and the reason), ids out of range in decode, text that is not UTF-8, special tokens not
// allowed; and what returns (nothing in, nothing out; bytes of part of a character). The
// machinery: bad_input.hpp. Expected outcomes: tiktoken's (ValueError for a disallowed special
// token, KeyError for an unknown id), as this library's exceptions with their messages.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bad_input.hpp"

#include "attn/text/gpt2_tokenizer.hpp"
#include "textbook/book.hpp"
#include "textbook/text_file.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_bad_input_gpt2_tokenizer {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace bad_input;
using attn::GPT2Tokenizer;
using Ids = std::vector<std::int64_t>;

const GPT2Tokenizer& tok() { return textbook::gpt2_tokenizer(); }

std::string original(const char* name) { return textbook::read_data_file(textbook::data_dir() / "gpt2" / name); }

// A directory holding the two files, `encoder_json` and `vocab_bpe` as given.
fs::path files_dir(const std::string& encoder_json, const std::string& vocab_bpe) {
    const fs::path dir = fresh_dir() / "gpt2";
    write(dir / "encoder.json", encoder_json);
    write(dir / "vocab.bpe", vocab_bpe);
    return dir;
}

bool loads(const fs::path& dir) { return GPT2Tokenizer::load(dir).n_vocab() == 50257; }

std::vector<Case> gpt2_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };

    // --- the files
    ok("OpenAI's files copied elsewhere load", [] { return loads(files_dir(original("encoder.json"), original("vocab.bpe"))); });
    ok("the two-path overload loads", [] {
        const fs::path dir = files_dir(original("encoder.json"), original("vocab.bpe"));
        return GPT2Tokenizer::load(dir / "encoder.json", dir / "vocab.bpe").n_merges() == 50000;
    });
    err("directory missing", [] { return loads(fresh_dir() / "nowhere"); }, RE, "nowhere/encoder.json: cannot be read (no such file)");
    err("vocab.bpe missing", [] {
        const fs::path dir = fresh_dir() / "gpt2";
        write(dir / "encoder.json", original("encoder.json"));
        return loads(dir);
    }, RE, "gpt2/vocab.bpe: cannot be read (no such file)");
    err("encoder.json is a directory", [] {
        const fs::path dir = fresh_dir() / "gpt2";
        fs::create_directories(dir / "encoder.json");
        return loads(dir);
    }, RE, "encoder.json: cannot be read (not a regular file)");
    err("encoder.json cut short (a download stopped at 1000 bytes)", [] {
        return loads(files_dir(original("encoder.json").substr(0, 1000), original("vocab.bpe")));
    }, RE, "encoder.json: not GPT-2's encoder.json as OpenAI published it: SHA-256 ");
    err("encoder.json cut short: sizes named", [] {
        return loads(files_dir(original("encoder.json").substr(0, 1000), original("vocab.bpe")));
    }, RE, "expected 196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783; the file has 1000 bytes, OpenAI's 1042301: cut short?");
    err("vocab.bpe cut short by its last line", [] {
        std::string v = original("vocab.bpe");
        v.resize(v.rfind('\n', v.size() - 2) + 1);
        return loads(files_dir(original("encoder.json"), v));
    }, RE, "vocab.bpe: not GPT-2's vocab.bpe as OpenAI published it: SHA-256 ");
    err("vocab.bpe empty", [] { return loads(files_dir(original("encoder.json"), "")); }, RE,
        "SHA-256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, expected 1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5; the file has 0 bytes, OpenAI's 456318: cut short?");
    err("vocab.bpe with two merges swapped (same size, another order: another tokenizer)", [] {
        std::string v = original("vocab.bpe");
        const auto a = v.find('\n') + 1, b = v.find('\n', a) + 1, c = v.find('\n', b) + 1;  // lines 2 and 3
        v = v.substr(0, a) + v.substr(b, c - b) + v.substr(a, b - a) + v.substr(c);
        return loads(files_dir(original("encoder.json"), v));
    }, RE, "the file has 456318 bytes, OpenAI's 456318");
    err("encoder.json with CRLF line endings? one byte added", [] {
        return loads(files_dir(original("encoder.json") + "\n", original("vocab.bpe")));
    }, RE, "the file has 1042302 bytes, OpenAI's 1042301");
    err("the two files swapped", [] {
        const fs::path dir = files_dir(original("encoder.json"), original("vocab.bpe"));
        return GPT2Tokenizer::load(dir / "vocab.bpe", dir / "encoder.json").n_vocab() > 0;
    }, RE, "gpt2/vocab.bpe: not GPT-2's encoder.json as OpenAI published it");

    // --- decode
    err("decode id 50257 (one past the vocabulary)", RUN(tok().decode({15496, 50257})), IA,
        "GPT2Tokenizer::decode: token id 50257 at position 1 is out of range for a vocabulary of 50257 tokens (ids 0..50256)");
    err("decode id -1", RUN(tok().decode({-1})), IA, "token id -1 at position 0 is out of range for a vocabulary of 50257 tokens");
    err("decode id 2^63 - 1", RUN(tok().decode({std::numeric_limits<std::int64_t>::max()})), IA,
        "token id 9223372036854775807 at position 0 is out of range");
    err("decode id -2^63", RUN(tok().decode({std::numeric_limits<std::int64_t>::min()})), IA, "token id -9223372036854775808 at position 0");
    err("token_bytes(50257)", RUN(tok().token_bytes(50257)), IA, "token id 50257 is out of range for a vocabulary of 50257 tokens");
    ok("decode of no ids is the empty text", [] { return tok().decode({}).empty(); });
    err("decode with errors outside DecodeErrors (it kept the raw bytes)",
        RUN(tok().decode({15496}, static_cast<attn::DecodeErrors>(7))), IA,
        "GPT2Tokenizer::decode: errors is not a DecodeErrors value (7)");
    ok("decode of the special token is its text", [] { return tok().decode({50256}) == "<|endoftext|>"; });
    ok("decode of half an emoji returns its bytes (tiktoken's decode_bytes)", [] { return tok().decode({30325}) == " \xF0\x9F\x98"; });

    // --- encode
    err("encode: not UTF-8 (a Latin-1 ï)", RUN(tok().encode("na\xEFve")), IA,
        "GPT2Tokenizer: the text is not UTF-8: byte 0xEF at offset 2");
    err("encode: a lone continuation byte", RUN(tok().encode("\x80")), IA, "not UTF-8: byte 0x80 at offset 0");
    err("encode: a UTF-16 surrogate in UTF-8", RUN(tok().encode("ok \xED\xA0\x80")), IA, "not UTF-8: byte 0xED at offset 3");
    err("encode: an overlong slash", RUN(tok().encode("\xC0\xAF")), IA, "not UTF-8: byte 0xC0 at offset 0");
    err("encode: an emoji cut short", RUN(tok().encode("\xF0\x9F\x98")), IA, "not UTF-8: byte 0xF0 at offset 0");
    err("encode: above U+10FFFF", RUN(tok().encode("\xF4\x90\x80\x80")), IA, "not UTF-8: byte 0xF4 at offset 0");
    err("encode_ordinary: not UTF-8 late in a long text", RUN(tok().encode_ordinary(std::string(5000, 'a') + " \xFF")), IA,
        "not UTF-8: byte 0xFF at offset 5001");
    err("pretokenize: not UTF-8", RUN(tok().pretokenize("\xFE")), IA, "not UTF-8: byte 0xFE at offset 0");
    err("encode: <|endoftext|> not allowed (tiktoken raises ValueError)", RUN(tok().encode("tea? <|endoftext|> In")), IA,
        "the text holds the special token <|endoftext|> (at byte 5), which is not allowed: pass allowed_special");
    err("encode: not UTF-8 and <|endoftext|>: the encoding is named first", RUN(tok().encode("<|endoftext|>\xFF")), IA, "not UTF-8: byte 0xFF at offset 13");
    err("encode: allowed_special names no special token of GPT-2", RUN(tok().encode("hi", {"<|im_start|>"})), IA,
        "allowed_special names '<|im_start|>', which is not a special token of GPT-2 (it has one: <|endoftext|>; "
        "tiktoken would ignore the name and encode such a string as ordinary text");
    ok("encode of the empty text is no ids", [] { return tok().encode("").empty() && tok().encode("", {"<|endoftext|>"}).empty(); });
    ok("encode of a NUL character (U+0000 is UTF-8) round-trips", [] {
        const std::string nul(1, '\0');
        return tok().decode(tok().encode(nul)) == nul;
    });
    ok("encode_ordinary of <|endoftext|> is plain text", [] { return tok().encode_ordinary("<|endoftext|>") == Ids{27, 91, 437, 1659, 5239, 91, 29}; });
    ok("a half special token is plain text", [] { return tok().encode("<|endoftext|") == tok().encode_ordinary("<|endoftext|"); });
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (bpe): every case has its exact outcome") {
    run_table("bpe", gpt2_cases());
}

}  // namespace test_bad_input_gpt2_tokenizer
