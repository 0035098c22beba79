// Unit tests for textbook/text_file.hpp: the checks every data-file parser shares (whole
// fields, LF lines of text, files not cut short, quoted fields). The parsers' own cases are
// in the bad-input table (test_bad_input_parsers.cpp, test_bad_input_tokenizer.cpp).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "textbook/text_file.hpp"

namespace test_text_file {  // every test file is a namespace of its own (tests/meson.build)

namespace {

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "no exception";
}

}  // namespace

TEST_CASE("parse_integer takes a whole field of decimal digits, nothing else") {
    CHECK(textbook::parse_integer("28808") == 28808u);
    CHECK(textbook::parse_integer("0") == 0u);
    CHECK(textbook::parse_integer("007") == 7u);
    CHECK(textbook::parse_integer("18446744073709551615") == UINT64_MAX);
    CHECK_FALSE(textbook::parse_integer("18446744073709551616"));  // 2^64
    CHECK_FALSE(textbook::parse_integer(""));
    CHECK_FALSE(textbook::parse_integer("288 "));
    CHECK_FALSE(textbook::parse_integer(" 288"));
    CHECK_FALSE(textbook::parse_integer("+5"));
    CHECK_FALSE(textbook::parse_integer("-5"));
    CHECK_FALSE(textbook::parse_integer("12ab"));
    CHECK_FALSE(textbook::parse_integer("0x10"));
    CHECK_FALSE(textbook::parse_integer("1e3"));
    CHECK(textbook::parse_integer("99", 99) == 99u);
    CHECK_FALSE(textbook::parse_integer("100", 99));
}

TEST_CASE("quoted cuts long fields at a UTF-8 boundary and escapes control bytes") {
    CHECK(textbook::quoted("word") == "'word'");
    CHECK(textbook::quoted("") == "''");
    CHECK(textbook::quoted(std::string(60, 'x')) == "'" + std::string(60, 'x') + "'");
    CHECK(textbook::quoted(std::string(61, 'x')) == "'" + std::string(60, 'x') + "...'");
    // 59 ASCII bytes then a 2-byte character: byte 60 is its continuation, so the cut goes before it.
    CHECK(textbook::quoted(std::string(59, 'x') + "\xC3\xA9" + "yy") == "'" + std::string(59, 'x') + "...'");
    CHECK(textbook::quoted("a\rb\x1b[0m") == "'a\\x0Db\\x1B[0m'");
}

TEST_CASE("data_lines splits LF lines and names the first line that is not text") {
    const std::filesystem::path f = "data.tsv";
    const auto lines = textbook::data_lines(f, "a\tb\n\nc\n");
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "a\tb");
    CHECK(lines[1].empty());
    CHECK(lines[2] == "c");
    CHECK(textbook::data_lines(f, "").empty());
    CHECK(textbook::data_lines(f, "x\n", 10).size() == 1);
    CHECK(message_of([&] { textbook::data_lines(f, "a\nb\r\n"); }) ==
          "data.tsv:2: line ends with CR (a Windows line ending); the data files use LF line endings: they are "
          "read byte for byte (a block is compared with what a program prints, lines ending in LF), so a CR "
          "would be a difference; convert the file (dos2unix)");
    CHECK(message_of([&] { textbook::data_lines(f, "a\nb"); }) ==
          "data.tsv:2: the last line has no line ending (LF): the file looks cut short");
    CHECK(message_of([&] { textbook::data_lines(f, "x\n", 10); }) == "no exception");
    CHECK(message_of([&] { textbook::data_lines(f, "ok\nbad\x7f\n", 10); }) ==
          "data.tsv:11: byte 0x7F (a control character) at column 4 is not text");
    CHECK(message_of([&] { textbook::data_lines(f, "\xC2\x85\n"); }) ==
          "data.tsv:1: U+0085 (a control character) at column 1 is not text");
    CHECK(message_of([&] { textbook::data_lines(f, "caf\xC3\xA9 \xC2\xA0ok\n"); }) == "no exception");  // é, NBSP
    CHECK(message_of([&] { textbook::data_lines(f, "\xFF\n"); }) == "data.tsv:1: byte 0xFF at column 1 is not UTF-8 text");
}

TEST_CASE("read_data_file reads regular files whole and refuses the rest unopened") {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("attn_text_file_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string bytes("a\0b\n", 4);
    std::ofstream(dir / "f.txt", std::ios::binary) << bytes;
    CHECK(textbook::read_data_file(dir / "f.txt") == bytes);
    std::ofstream(dir / "empty.txt", std::ios::binary).flush();
    CHECK(textbook::read_data_file(dir / "empty.txt").empty());
    CHECK(message_of([&] { textbook::read_data_file(dir / "none.txt"); }) ==
          (dir / "none.txt").string() + ": cannot be read (no such file)");
    CHECK(message_of([&] { textbook::read_data_file(dir); }) ==
          dir.string() + ": cannot be read (not a regular file)");
    std::filesystem::remove_all(dir);
}

}  // namespace test_text_file
