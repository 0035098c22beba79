// The bad-input table (issues 15 and 19), the tokenizer's files (data/tokenizer/*.tsv, read by
// TokenizerData::load): every field parsed whole, no row twice, no file cut short, CR line
// endings named, every error naming file:line. The machinery: bad_input.hpp.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include "bad_input.hpp"

#include "attn/attention/padding.hpp"
#include "textbook/tokenizer_data.hpp"

namespace test_bad_input_tokenizer {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace textbook;
using namespace bad_input;

const std::string good_tokens =
    "# provenance\nspecial\tunk\t<unk>\t0\nspecial\tbos\t<s>\t1\nspecial\teos\t</s>\t2\n"
    "text\thello\t1 5 6\n";

TokenizerData tokens_of(const std::string& text) {
    const fs::path dir = fresh_dir();
    write(dir / "tok.tsv", text);
    return TokenizerData::load(dir / "tok.tsv");
}

bool load_tokens(const std::string& text) { return !tokens_of(text).texts.empty(); }

std::vector<Case> tokenizer_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };
    // --- broken data files: the tokenizer TSV.
    ok("a good tokenizer file loads", [] { return load_tokens(good_tokens); });
    err("tokenizer file missing", [] { TokenizerData::load(fresh_dir() / "none.tsv"); return true; }, RE, "none.tsv: cannot be read (no such file)");
    err("tokenizer unknown row kind", [] { return load_tokens(good_tokens + "word\tx\t1\n"); }, RE, "tok.tsv:6: unknown row kind 'word' (expected special, text or text_json)");
    err("tokenizer special with 3 fields", [] { return load_tokens("special\tunk\t0\n"); }, RE, "tok.tsv:1: expected special<TAB>role<TAB>token<TAB>id");
    err("tokenizer special unknown role", [] { return load_tokens("special\tpad\t<p>\t3\n"); }, RE, "tok.tsv:1: unknown special token role 'pad'");
    err("tokenizer id not a number", [] { return load_tokens("special\tunk\t<unk>\tzero\n"); }, RE, "tok.tsv:1: expected a token id, got 'zero'");
    err("tokenizer negative id", [] { return load_tokens(good_tokens + "text\thi\t1 -5\n"); }, RE, "tok.tsv:6: expected a token id, got '-5'");
    err("tokenizer id too big", [] { return load_tokens(good_tokens + "text\thi\t99999999999999999999\n"); }, RE,
        "tok.tsv:6: expected a token id, got '99999999999999999999'");
    err("tokenizer id with trailing junk", [] { return load_tokens(good_tokens + "text\thi\t12ab\n"); }, RE, "tok.tsv:6: expected a token id, got '12ab'");
    err("tokenizer text row with 2 fields", [] { return load_tokens(good_tokens + "text\thi\n"); }, RE, "tok.tsv:6: expected text<TAB>text<TAB>ids");
    err("tokenizer missing eos", [] { return load_tokens("special\tunk\t<unk>\t0\nspecial\tbos\t<s>\t1\n"); }, RE,
        "tok.tsv:2: missing a special token row (unk, bos, eos) by the end of the file: no 'eos' row");
    err("tokenizer non-UTF-8 text", [] { return load_tokens(good_tokens + "text\tna\xEFve\t1\n"); }, RE, "tok.tsv:6: byte 0xEF at column 8 is not UTF-8 text");
    err("tokenizer non-UTF-8 comment", [] { return load_tokens("# \x80\n" + good_tokens); }, RE, "tok.tsv:1: byte 0x80 at column 3 is not UTF-8 text");
    ok("tokenizer: a UTF-8 text loads verbatim", [] {
        const fs::path dir = fresh_dir();
        write(dir / "tok.tsv", good_tokens + "text\tna\xC3\xAFve\t7\n");
        const auto d = TokenizerData::load(dir / "tok.tsv");
        return d.texts.size() == 2 && d.texts[1].text == "na\xC3\xAFve" && d.texts[1].input_ids == std::vector<std::int64_t>{7};
    });

    // --- issue 19: whole fields, no row twice, no file cut short, CR named.
    err("tokenizer file cut in the middle of 28808 (the issue: read as 288)",
        [] { return load_tokens(good_tokens + "text\tlonger than the two before!\t1 1159 288"); }, RE,
        "tok.tsv:6: the last line has no line ending (LF): the file looks cut short");
    err("tokenizer special row twice (was: the last one kept)", [] { return load_tokens(good_tokens + "special\teos\t</s>\t7\n"); }, RE,
        "tok.tsv:6: duplicate special token row 'eos' (first on line 4)");
    err("tokenizer text row twice (was: accepted)", [] { return load_tokens(good_tokens + "text\thello\t1 5 6\n"); }, RE,
        "tok.tsv:6: duplicate text row 'hello' (first on line 5)");
    err("tokenizer text twice with other ids", [] { return load_tokens(good_tokens + "text\thello\t1 9\n"); }, RE, "duplicate text row 'hello'");
    err("tokenizer with CRLF line endings (was: a raw CR in the message)", [] {
        std::string crlf;
        for (char c : good_tokens) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
        return load_tokens(crlf);
    }, RE, "tok.tsv:1: line ends with CR (a Windows line ending); the data files use LF line endings: they are read byte for byte (a block is compared with what a program prints, lines ending in LF), so a CR would be a difference; convert the file (dos2unix)");
    err("tokenizer ids '1  5' (was: accepted)", [] { return load_tokens(good_tokens + "text\thi\t1  5\n"); }, RE,
        "tok.tsv:6: expected a token id, got an empty field (a space too many?)");
    err("tokenizer ids ' 1 5' (was: accepted)", [] { return load_tokens(good_tokens + "text\thi\t 1 5\n"); }, RE, "tok.tsv:6: expected a token id, got an empty field");
    err("tokenizer ids '1 5 ' (was: accepted)", [] { return load_tokens(good_tokens + "text\thi\t1 5 \n"); }, RE, "tok.tsv:6: expected a token id, got an empty field");
    err("tokenizer id '+5' (was: read as 5)", [] { return load_tokens(good_tokens + "text\thi\t1 +5\n"); }, RE, "tok.tsv:6: expected a token id, got '+5'");
    err("tokenizer special id ' 0' (was: read as 0)", [] { return load_tokens("special\tunk\t<unk>\t 0\n" + good_tokens.substr(good_tokens.find("special\tbos"))); }, RE,
        "tok.tsv:1: expected a token id, got ' 0'");
    err("tokenizer id '0x10'", [] { return load_tokens(good_tokens + "text\thi\t0x10\n"); }, RE, "expected a token id, got '0x10'");
    err("tokenizer id 2^63", [] { return load_tokens(good_tokens + "text\thi\t9223372036854775808\n"); }, RE, "got '9223372036854775808'");
    ok("tokenizer id 2^63 - 1 is read whole", [] {
        const auto d = tokens_of(good_tokens + "text\thi\t9223372036854775807\n");
        return d.texts.size() == 2 && d.texts[1].input_ids == std::vector<std::int64_t>{INT64_MAX};
    });
    ok("tokenizer: the recorded file's ids are read whole (28808 stays 28808)", [] {
        const auto d = tokens_of(good_tokens + "text\tlonger\t1 1159 28808\n");
        return d.texts.back().input_ids == std::vector<std::int64_t>{1, 1159, 28808} && d.eos_token_id == 2;
    });
    err("tokenizer ids separated by a tab", [] { return load_tokens(good_tokens + "text\thi\t1\t5\n"); }, RE, "tok.tsv:6: expected text<TAB>text<TAB>ids");
    err("tokenizer text row without ids (was: accepted)", [] { return load_tokens(good_tokens + "text\thi\t\n"); }, RE,
        "tok.tsv:6: expected space-separated token ids, got none");
    err("tokenizer special row without its token (was: accepted)",
        [] { return load_tokens("special\tunk\t\t0\n" + good_tokens.substr(good_tokens.find("special\tbos"))); }, RE,
        "tok.tsv:1: the token of special row 'unk' is empty");
    err("tokenizer escape sequence in a text (was: accepted)", [] { return load_tokens(good_tokens + "text\t\x1b[2Jhi\t1\n"); }, RE,
        "tok.tsv:6: byte 0x1B (a control character) at column 6 is not text");
    err("tokenizer Windows-1252 quote", [] { return load_tokens(good_tokens + "text\t\x93hi\x94\t1\n"); }, RE, "tok.tsv:6: byte 0x93 at column 6 is not UTF-8 text");
    err("tokenizer file that is a directory (was: 'missing a special token row')", [] {
        TokenizerData::load(fresh_dir());
        return true;
    }, RE, ": cannot be read (not a regular file)");
    err("tokenizer file that is a FIFO (was: hang)", [] {
        const fs::path dir = fresh_dir();
        if (::mkfifo((dir / "tok.tsv").c_str(), 0600) != 0) throw std::logic_error("mkfifo failed");
        TokenizerData::load(dir / "tok.tsv");
        return true;
    }, RE, "tok.tsv: cannot be read (not a regular file)");
    err("tokenizer with only blank lines", [] { return load_tokens("\n\n\n"); }, RE,
        "tok.tsv:3: missing a special token row (unk, bos, eos) by the end of the file: no 'unk' row");
    err("tokenizer row kind of 10,000 bytes: the message quotes 60", [] { return load_tokens(std::string(10000, 'k') + "\tx\n"); }, RE,
        "tok.tsv:1: unknown row kind '" + std::string(60, 'k') + "...' (expected special, text or text_json)");
    // --- text_json rows (GPT-2's recorded texts hold tabs, newlines, controls): one JSON string.
    ok("tokenizer text_json row: escapes read", [] {
        const auto d = tokens_of(good_tokens + "text_json\t\"a\\tb\\n\\u0085 \\\"q\\\"\"\t7 8\n");
        return d.texts.size() == 2 && d.texts[1].text == "a\tb\n\u0085 \"q\"" && d.texts[1].input_ids == std::vector<std::int64_t>{7, 8};
    });
    err("tokenizer text_json not JSON", [] { return load_tokens(good_tokens + "text_json\thello\t1\n"); }, RE,
        "tok.tsv:6: the text is not one JSON string ([json.exception.parse_error");
    err("tokenizer text_json a JSON number", [] { return load_tokens(good_tokens + "text_json\t42\t1\n"); }, RE,
        "tok.tsv:6: the text is JSON but not a string: '42'");
    err("tokenizer text_json with something after the string", [] { return load_tokens(good_tokens + "text_json\t\"hi\" x\t1\n"); }, RE,
        "tok.tsv:6: the text is not one JSON string");
    err("tokenizer text_json with a lone surrogate", [] { return load_tokens(good_tokens + "text_json\t\"\\ud800\"\t1\n"); }, RE,
        "tok.tsv:6: the text is not one JSON string");
    err("tokenizer text_json with 2 fields", [] { return load_tokens(good_tokens + "text_json\t\"hi\"\n"); }, RE,
        "tok.tsv:6: expected text_json<TAB>\"JSON string\"<TAB>ids");
    err("tokenizer text_json repeating a text row", [] { return load_tokens(good_tokens + "text_json\t\"hello\"\t1 5 6\n"); }, RE,
        "tok.tsv:6: duplicate text row '\"hello\"' (first on line 5)");
    err("tokenizer role in capitals", [] { return load_tokens("special\tUNK\t<unk>\t0\n"); }, RE, "unknown special token role 'UNK' (expected unk, bos or eos)");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (tokenizer): every case has its exact outcome") {
    run_table("tokenizer", tokenizer_cases());
}

}  // namespace test_bad_input_tokenizer
