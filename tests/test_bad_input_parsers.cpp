// The bad-input table (issues 15 and 19), the book's data files: the manifest and its block
// files, the chapters' prose pages, the chapter records. Each error names file:line (a
// record: nlohmann's line and column, or the field's path), is one line, and never echoes a
// byte that is not text; a FIFO or a directory is refused before it is opened (reading one
// could block forever); a number of 100,000 digits no longer exhausts the stack.
// The tokenizer's files: test_bad_input_tokenizer.cpp. The machinery: bad_input.hpp.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include "bad_input.hpp"

#include "textbook/text_file.hpp"
#include "textbook/book.hpp"
#include "textbook/prose.hpp"
#include "textbook/record.hpp"

namespace test_bad_input_parsers {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using namespace attn;
using namespace textbook;
using namespace bad_input;

const std::string header = "# id\tnotebook\tcell\tchapter\tstyle\tprecision\tcheck\tfile\twhat\n";
const std::string good_row = "a-1\tnb.txt\tIn [1]\t1\ttorch\t4\texact\tb/a.txt\tthe block\n";

// The book of a directory whose manifest is `manifest` and whose block files are `blocks`.
textbook::Book book_of(const std::string& manifest,
                       const std::map<std::string, std::string>& blocks = {{"b/a.txt", "tensor(1.)\n"}}) {
    const fs::path dir = fresh_dir();
    write(dir / "book" / "manifest.tsv", manifest);
    for (const auto& [name, text] : blocks) write(dir / "book" / name, text);
    return textbook::Book::load(dir);
}

bool load_book(const std::string& manifest,
               const std::map<std::string, std::string>& blocks = {{"b/a.txt", "tensor(1.)\n"}}) {
    return !book_of(manifest, blocks).entries().empty();
}

// A manifest row with the given precision, check and block file.
std::string row(const std::string& style, const std::string& precision, const std::string& check,
                const std::string& file = "b/a.txt") {
    return "a-1\tnb\tc\t1\t" + style + "\t" + precision + "\t" + check + "\t" + file + "\tw\n";
}

// A directory holding a FIFO named `name` (under book/): opening one for reading blocks until
// a writer comes, so a reader must refuse it unopened.
fs::path dir_with_fifo(const std::string& name) {
    const fs::path dir = fresh_dir();
    fs::create_directories((dir / "book" / name).parent_path());
    if (::mkfifo((dir / "book" / name).c_str(), 0600) != 0) throw std::logic_error("mkfifo failed");
    return dir;
}

bool load_page(const std::string& text) {
    const fs::path dir = fresh_dir();
    write(dir / "page.prose.json", text);
    const auto page = textbook::Page::load(dir / "page.prose.json");
    return !page.title.empty() && page.sections.size() == 1;
}

// A page as docs/tools/terminal_pages.py renders it (its Markdown's checks: docs/test_pages.py).
const std::string good_page = "{\"format\": 1, \"chapter\": \"01_x\", \"title\": \"Title\", \"intro\": \"Intro.\",\n"
                              " \"sections\": [{\"id\": \"step\", \"title\": \"Step\", \"text\": \"Body x.\"}]}\n";

// A record as ChapterRecord::save writes it, with `block` as its one block's JSON.
std::string record_with(const std::string& block, const std::string& top = "\"format\": 1") {
    return "{" + top + ", \"chapter\": \"01_x\", \"key\": \"1\", \"title\": \"T\",\n"
           "\"options\": {\"backend\": \"portable\", \"compare\": true},\n\"blocks\": [" + block + "]}\n";
}

std::string block_with(const std::string& comparison_fields, const std::string& kind = "book") {
    return "{\"step\": \"s\", \"label\": \"l\", \"kind\": \"" + kind + "\", \"sources\": [\"a-1\"], "
           "\"style\": \"torch\", \"text\": \"t\", \"comparisons\": [{\"entry\": \"a-1\", "
           "\"check\": {\"kind\": \"exact\", \"detail\": \"\"}, \"summary\": \"s\", "
           "\"differences\": [], " + comparison_fields + "}]}";
}

const std::string good_comparison = "\"result\": \"identical\", \"numbers\": 1, \"numbers_identical\": 1";

bool load_record(const std::string& text) {
    const fs::path dir = fresh_dir();
    write(dir / "r.json", text);
    return textbook::ChapterRecord::load(dir / "r.json").blocks.size() == 1;
}

std::vector<Case> book_cases() {
    Table table;
    auto err = [&table](auto&&... a) { table.err(std::forward<decltype(a)>(a)...); };
    auto ok = [&table](auto&&... a) { table.ok(std::forward<decltype(a)>(a)...); };
    // --- text checks.
    ok("first_non_utf8 accepts ASCII, 2-, 3- and 4-byte forms", [] { return first_non_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == std::string_view::npos; });
    ok("first_non_utf8 finds a lone continuation byte", [] { return first_non_utf8("ab\x80") == 2; });
    ok("first_non_utf8 finds an overlong form", [] { return first_non_utf8("\xC0\xAF") == 0; });
    ok("first_non_utf8 finds a surrogate", [] { return first_non_utf8("x\xED\xA0\x80") == 1; });
    ok("first_non_utf8 finds a truncated sequence", [] { return first_non_utf8("xy\xE2\x82") == 2; });
    ok("first_non_utf8 finds a code point above U+10FFFF", [] { return first_non_utf8("\xF4\x90\x80\x80") == 0; });
    ok("first_non_utf8 finds a NUL", [] { return first_non_utf8(std::string_view("a\0b", 3)) == 1; });

    // --- broken data files: the book's manifest and blocks.
    ok("a good manifest loads", [] { return load_book(header + good_row); });
    err("manifest missing", [] { const fs::path d = fresh_dir(); textbook::Book::load(d); return true; }, RE, "manifest.tsv: cannot be read (no such file): cannot open the book's manifest");
    err("manifest row missing a column", [] { return load_book(header + "a-1\tnb.txt\tIn [1]\t1\ttorch\t4\texact\tb/a.txt\n"); }, RE,
        "manifest.tsv:2: expected 9 tab-separated fields");
    err("manifest row with an empty field", [] { return load_book(header + "a-1\tnb.txt\t\t1\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: field 3 is empty");
    err("manifest duplicate id", [] { return load_book(header + good_row + good_row); }, RE, "manifest.tsv:3: duplicate id 'a-1'");
    err("manifest missing block file", [] { return load_book(header + good_row, {}); }, RE, "manifest.tsv:2: cannot read block file");
    err("manifest empty block file", [] { return load_book(header + good_row, {{"b/a.txt", "\n\n"}}); }, RE, "manifest.tsv:2: block file");
    err("manifest bad style", [] { return load_book(header + "a-1\tnb\tc\t1\tjson\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: style must be torch, numpy or text, got 'json'");
    err("manifest bad chapter", [] { return load_book(header + "a-1\tnb\tc\tx1\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: chapter must be a number or a capital letter, got 'x1'");
    err("manifest chapter 0", [] { return load_book(header + "a-1\tnb\tc\t0\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: chapter must be a number or a capital letter, got '0'");
    err("manifest negative precision", [] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t-4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: precision must be a non-negative integer (at most 99) for a torch block, got '-4'");
    err("manifest bad check", [] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t4\tclose\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: check must be exact, ulp:N");
    err("manifest ulp tolerance too long", [] { return load_book(header + "a-1\tnb\tc\t1\tnumpy\t4\tulp:99999999999999999999\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: check must be");
    err("manifest non-UTF-8 in the what column", [] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\tbad \xFF byte\n"); }, RE,
        "manifest.tsv:2: byte 0xFF at column 38 is not UTF-8 text");
    err("manifest Latin-1 in a comment", [] { return load_book("# caf\xE9\n" + header + good_row); }, RE,
        "manifest.tsv:1: byte 0xE9 at column 6 is not UTF-8 text");
    err("manifest NUL byte", [] { return load_book(header + std::string("a-1\0", 4) + "\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\tw\n"); }, RE,
        "manifest.tsv:2: byte 0x00 at column 4 is not UTF-8 text");
    err("manifest with only comments", [] { return load_book(header); }, RE, "manifest.tsv:1: no entries by the end of the file");
    err("manifest empty", [] { return load_book(""); }, RE, "manifest.tsv:0: no entries");
    err("block file with a bad byte on its line 2", [] { return load_book(header + good_row, {{"b/a.txt", "tensor([1.,\n \xC3\x28])\n"}}); }, RE,
        "a.txt:2: byte 0xC3 at column 2 is not UTF-8 text");
    err("block file with a surrogate", [] { return load_book(header + good_row, {{"b/a.txt", "\xED\xA0\x80\n"}}); }, RE,
        "a.txt:1: byte 0xED at column 1 is not UTF-8 text");
    err("book: unknown id", [] { const fs::path d = fresh_dir(); write(d / "book/manifest.tsv", header + good_row);
        write(d / "book/b/a.txt", "x\n"); textbook::Book::load(d).at("nope"); return true; }, Outcome::out_of_range, "book: no entry with id 'nope'");
    err("printed_matrix wants more numbers than the block has", [] {
        textbook::Entry e; e.id = "x"; e.text = "tensor([1., 2.])"; textbook::printed_matrix(e, 2, 2); return true; }, IA,
        "book entry x: expected at least 4 printed numbers, got 2");

    // --- issue 19: the manifest's lines, fields and paths.
    auto crlf = [](std::string s) {
        std::string out;
        for (char c : s) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
        return out;
    };
    err("manifest with CRLF line endings", [crlf] { return load_book(crlf(header + good_row)); }, RE,
        "manifest.tsv:1: line ends with CR (a Windows line ending); the data files use LF line endings: they are read byte for byte (a block is compared with what a program prints, lines ending in LF), so a CR would be a difference; convert the file (dos2unix)");
    err("manifest cut in its last line (was: 'what' silently cut)",
        [] { return load_book(header + "a-1\tnb.txt\tIn [1]\t1\ttorch\t4\texact\tb/a.txt\tthe blo"); }, RE,
        "manifest.tsv:2: the last line has no line ending (LF): the file looks cut short");
    err("manifest precision ' 4' (was: read as 4)", [] { return load_book(header + row("torch", " 4", "exact")); }, RE,
        "manifest.tsv:2: precision must be a non-negative integer (at most 99) for a torch block, got ' 4'");
    err("manifest precision '+4' (was: read as 4)", [] { return load_book(header + row("torch", "+4", "exact")); }, RE,
        "for a torch block, got '+4'");
    err("manifest precision '4 '", [] { return load_book(header + row("torch", "4 ", "exact")); }, RE, "got '4 '");
    err("manifest precision 2^31", [] { return load_book(header + row("numpy", "2147483648", "ulp:2")); }, RE,
        "for a numpy block, got '2147483648'");
    err("manifest torch block without a precision (was: read as 0)", [] { return load_book(header + row("torch", "-", "exact")); }, RE,
        "manifest.tsv:2: precision must be a non-negative integer (at most 99) for a torch block, got '-'");
    err("manifest text block with a precision", [] { return load_book(header + row("text", "4", "exact")); }, RE,
        "manifest.tsv:2: precision of a text block must be '-', got '4'");
    err("manifest check 'ulp:4x'", [] { return load_book(header + row("numpy", "8", "ulp:4x")); }, RE, "check must be exact, ulp:N");
    err("manifest check 'ulp:+4'", [] { return load_book(header + row("numpy", "8", "ulp:+4")); }, RE, "got 'ulp:+4'");
    err("manifest check 'relation:'", [] { return load_book(header + row("text", "-", "relation:")); }, RE, "check must be");
    ok("manifest check 'ulp:0' is exact within 0 ulp", [] { return book_of(header + row("numpy", "8", "ulp:0")).at("a-1").check.max_ulp == 0; });
    err("manifest duplicate id names the first line", [] { return load_book(header + good_row + good_row); }, RE,
        "manifest.tsv:3: duplicate id 'a-1' (first on line 2)");
    err("manifest block '../outside.txt' (was: read outside data/book/)",
        [] { return load_book(header + row("torch", "4", "exact", "../outside.txt"), {{"../outside.txt", "x\n"}}); }, RE,
        "manifest.tsv:2: file must be a relative path inside data/book/, got '../outside.txt'");
    err("manifest block 'b/../../outside.txt'",
        [] { return load_book(header + row("torch", "4", "exact", "b/../../outside.txt"), {{"../outside.txt", "x\n"}}); }, RE,
        "file must be a relative path inside data/book/");
    err("manifest block given by an absolute path (was: read it)", [] {
        const fs::path elsewhere = fresh_dir() / "elsewhere.txt";
        write(elsewhere, "tensor(1.)\n");
        return load_book(header + row("torch", "4", "exact", elsewhere.string()));
    }, RE, "manifest.tsv:2: file must be a relative path inside data/book/, got '/");
    ok("manifest block 'b/./a.txt' stays inside", [] { return load_book(header + row("torch", "4", "exact", "b/./a.txt")); });
    err("manifest block that is a directory (was: 'is empty')", [] { return load_book(header + row("torch", "4", "exact", "b")); }, RE,
        "cannot read block file " );
    err("manifest block that is a directory names why", [] { return load_book(header + row("torch", "4", "exact", "b")); }, RE,
        "b: cannot be read (not a regular file)");
    err("manifest block that is a FIFO (was: hang)", [] {
        const fs::path dir = dir_with_fifo("b/fifo.txt");
        write(dir / "book" / "manifest.tsv", header + row("torch", "4", "exact", "b/fifo.txt"));
        return !textbook::Book::load(dir).entries().empty();
    }, RE, "fifo.txt: cannot be read (not a regular file)");
    err("manifest that is a FIFO (was: hang)", [] { textbook::Book::load(dir_with_fifo("manifest.tsv")); return true; }, RE,
        "manifest.tsv: cannot be read (not a regular file)");
    err("manifest that is a directory (was: 'no entries')", [] {
        const fs::path dir = fresh_dir();
        fs::create_directories(dir / "book" / "manifest.tsv");
        textbook::Book::load(dir);
        return true;
    }, RE, "manifest.tsv: cannot be read (not a regular file)");
    err("manifest with an escape sequence in 'what' (was: accepted, echoed later)",
        [] { return load_book(header + "a-1\tnb\tc\t1\ttorch\t4\texact\tb/a.txt\t\x1b[2Jw\n"); }, RE,
        "manifest.tsv:2: byte 0x1B (a control character) at column 34 is not text");
    err("manifest with a 10,000-byte style: the message quotes 60 bytes",
        [] { return load_book(header + row(std::string(10000, 's'), "4", "exact")); }, RE,
        "style must be torch, numpy or text, got '" + std::string(60, 's') + "...'");
    ok("manifest chapter of 200,000 digits (was: std::regex stack overflow)",
       [] { return book_of(header + "a-1\tnb\tc\t" + std::string(200000, '7') + "\ttorch\t4\texact\tb/a.txt\tw\n").at("a-1").chapter.size() == 200000; });

    // --- issue 19: block files.
    err("block with CRLF line endings (was: compared with CRs inside)",
        [] { return load_book(header + good_row, {{"b/a.txt", "tensor([1.,\r\n 2.])\r\n"}}); }, RE,
        "a.txt:1: line ends with CR (a Windows line ending)");
    err("block cut short (no final line ending)", [] { return load_book(header + good_row, {{"b/a.txt", "tensor([1.0000, 2."}}); }, RE,
        "a.txt:1: the last line has no line ending (LF): the file looks cut short");
    err("block with an escape sequence", [] { return load_book(header + good_row, {{"b/a.txt", "tensor(\x1b[31m1.)\n"}}); }, RE,
        "a.txt:1: byte 0x1B (a control character) at column 8 is not text");
    err("block with a C1 control (U+009B, CSI)", [] { return load_book(header + good_row, {{"b/a.txt", "x\ntensor(\xC2\x9B" "1.)\n"}}); }, RE,
        "a.txt:2: U+009B (a control character) at column 8 is not text");
    err("block with a lone CR inside a line", [] { return load_book(header + good_row, {{"b/a.txt", "ten\rsor(1.)\n"}}); }, RE,
        "a.txt:1: byte 0x0D (a carriage return) at column 4 is not text");
    ok("block of a 200,000-digit number is compared (was: std::regex stack overflow)", [] {
        const std::string digits(200000, '7');
        const auto book = book_of(header + row("numpy", "8", "ulp:2"), {{"b/a.txt", digits + "\n"}});
        const auto c = textbook::compare(book.at("a-1"), digits);
        return c.match && c.numbers == 1;
    });
    ok("strip_grad_fn after 200,000 spaces (was: std::regex stack overflow)", [] {
        const std::string spaces(200000, ' ');
        return textbook::strip_grad_fn("tensor(1.)," + spaces + "x") == "tensor(1.)," + spaces + "x" &&
               textbook::strip_grad_fn("tensor(1.," + spaces + "grad_fn=<MmBackward0>)") == "tensor(1.)";
    });
    ok("numbers_in keeps its rules (glued digits, inf, nan, exponents, '.5', '2.')", [] {
        std::string skeleton;
        const auto n = textbook::numbers_in("x_2 In [3] -inf nan 1.5e-3 .5 2. tensor(4.54) 1e+ banana", &skeleton);
        std::vector<std::string> texts;
        for (const auto& x : n) texts.push_back(x.text);
        return texts == std::vector<std::string>{"3", "-inf", "nan", "1.5e-3", ".5", "2.", "4.54", "1"} &&
               skeleton == "x_2In[#]#####tensor(#)#e+banana";
    });

    // --- issue 19: the chapters' prose pages, as rendered for the terminal.
    ok("a good page loads", [] { return load_page(good_page); });
    err("page cut short", [] { return load_page("{\"format\": 1, \"title\": \"T\""); }, RE,
        "page.prose.json: malformed rendered page: [json.exception.parse_error.101] parse error at line 1");
    err("page whose section text is a number", [] {
        return load_page("{\"format\": 1, \"title\": \"T\", \"intro\": \"\", \"sections\": [{\"id\": \"s\", \"title\": \"S\", \"text\": 3}]}\n");
    }, RE, "page.prose.json: malformed rendered page: page.sections[0].text: expected a string, got 3");
    err("page of another format", [] { return load_page("{\"format\": 2}\n"); }, RE,
        "page.prose.json: malformed rendered page: format: expected 1");
    err("page that is not JSON", [] { return load_page("# Title {#ch01}\n"); }, RE, "page.prose.json: malformed rendered page: ");
    err("page missing", [] { textbook::Page::load(fresh_dir() / "none.prose.json"); return true; }, RE,
        "none.prose.json: cannot be read (no such file): cannot read the chapter's prose");
    err("page that is a FIFO (was: hang)", [] { textbook::Page::load(dir_with_fifo("p.md") / "book" / "p.md"); return true; }, RE,
        "p.md: cannot be read (not a regular file)");

    // --- issue 19: chapter records (JSON written by ChapterRecord::save).
    ok("a good record loads", [] { return load_record(record_with(block_with(good_comparison))); });
    err("record key twice (was: the last one kept)", [] { return load_record(record_with(block_with(good_comparison), "\"format\": 2, \"format\": 1")); }, RE,
        "r.json: malformed chapter record: duplicate key 'format'");
    err("record 'numbers' twice", [] {
        return load_record(record_with(block_with("\"result\": \"identical\", \"numbers\": 5, \"numbers\": 1, \"numbers_identical\": 1")));
    }, RE, "duplicate key 'numbers'");
    err("record numbers -1 (was: read as 2^64 - 1)", [] {
        return load_record(record_with(block_with("\"result\": \"identical\", \"numbers\": -1, \"numbers_identical\": 1")));
    }, RE, "blocks[0].comparisons[0].numbers: expected a non-negative integer, got -1");
    err("record numbers 2.5 (was: read as 2)", [] {
        return load_record(record_with(block_with("\"result\": \"identical\", \"numbers\": 2.5, \"numbers_identical\": 1")));
    }, RE, "blocks[0].comparisons[0].numbers: expected a non-negative integer, got 2.5");
    err("record numbers as a string names the field", [] {
        return load_record(record_with(block_with("\"result\": \"identical\", \"numbers\": \"3\", \"numbers_identical\": 1")));
    }, RE, "blocks[0].comparisons[0].numbers: expected a non-negative integer, got \"3\"");
    err("record block kind 'weird' (was: accepted)", [] { return load_record(record_with(block_with(good_comparison, "weird"))); }, RE,
        "blocks[0].kind: expected one of book, new, got 'weird'");
    err("record result 'maybe' (was: accepted)", [] {
        return load_record(record_with(block_with("\"result\": \"maybe\", \"numbers\": 1, \"numbers_identical\": 1")));
    }, RE, "blocks[0].comparisons[0].result: expected one of identical, within_ulp, differs");
    err("record format 1.0 (was: read as 1)", [] { return load_record(record_with(block_with(good_comparison), "\"format\": 1.0")); }, RE,
        "format: expected 1, got 1.0");
    err("record syntax error names line and column", [] { return load_record("{\"format\": 1,\n ]\n"); }, RE,
        "r.json: malformed chapter record: [json.exception.parse_error.101] parse error at line 2, column 2");
    err("record that is an array", [] { return load_record("[]\n"); }, RE, "the record: expected an object, got array");
    err("record nested 100,000 deep", [] { return load_record(std::string(100000, '[') + std::string(100000, ']')); }, RE,
        "malformed chapter record");
    err("record that is a directory (was: a parse error)", [] {
        const fs::path dir = fresh_dir();
        textbook::ChapterRecord::load(dir / "book");
        return true;
    }, RE, "book: cannot be read (not a regular file): cannot read the chapter's record");
    return table.cases;
}

}  // namespace

TEST_CASE("bad-input table (book): every case has its exact outcome") {
    run_table("book", book_cases());
}

}  // namespace test_bad_input_parsers
