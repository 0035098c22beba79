// Unit tests for attn/book.hpp: the manifest loader, its errors, and the comparisons.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "support.hpp"

#include "textbook/book.hpp"
#include "textbook/record.hpp"
#include "textbook/tally.hpp"
#include "attn/core/ulp.hpp"

namespace test_book {  // every test file is a namespace of its own (tests/meson.build)

namespace fs = std::filesystem;

namespace {
// A throw-away data dir holding one manifest and one block.
fs::path make_data(const std::string& manifest_body, const std::string& block = "tensor([1.])") {
    static int n = 0;
    const fs::path dir = fs::temp_directory_path() / ("attn_book_test_" + std::to_string(::getpid()) +
                                                      "_" + std::to_string(n++));
    fs::create_directories(dir / "book" / "002");
    std::ofstream(dir / "book" / "manifest.tsv")
        << "# id\tnotebook\tcell\tchapter\tstyle\tprecision\tcheck\tfile\twhat\n" << manifest_body;
    std::ofstream(dir / "book" / "002" / "a.txt") << block << "\n";
    return dir;
}

const char* good = "002-In01\t002_x.txt\tIn [1]\t2\ttorch\t4\texact\t002/a.txt\tsomething\n";
}  // namespace

TEST_CASE("the book loads a well-formed manifest") {
    const auto book = textbook::Book::load(make_data(good));
    REQUIRE(book.entries().size() == 1);
    const auto& e = book.at("002-In01");
    CHECK(e.cell == "In [1]");
    CHECK(e.chapter == "2");
    CHECK(e.precision == 4);
    CHECK(e.text == "tensor([1.])");
    CHECK(e.line == 2);
    CHECK_THROWS_AS(book.at("nope"), std::out_of_range);
}

TEST_CASE("a malformed manifest is an error naming the file and the line") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {std::string(good) + "002-In02\t002_x.txt\tIn [2]\t2\ttorch\t4\texact\n", "9 tab-separated"},
        {std::string(good) + "002-In02\t002_x.txt\tIn [2]\ttwo\ttorch\t4\texact\t002/a.txt\tx\n", "chapter"},
        {std::string(good) + "002-In02\t002_x.txt\tIn [2]\t2\tpandas\t4\texact\t002/a.txt\tx\n", "style"},
        {std::string(good) + "002-In02\t002_x.txt\tIn [2]\t2\ttorch\t4\tmaybe\t002/a.txt\tx\n", "check"},
        {std::string(good) + "002-In02\t002_x.txt\tIn [2]\t2\ttorch\t4\texact\t002/missing.txt\tx\n", "cannot read"},
        {std::string(good) + good, "duplicate id"},
        {std::string(good) + "002-In02\t\tIn [2]\t2\ttorch\t4\texact\t002/a.txt\tx\n", "empty"},
    };
    for (const auto& [body, why] : cases) {
        const fs::path dir = make_data(body);
        try {
            textbook::Book::load(dir);
            FAIL("no error for: " << why);
        } catch (const std::runtime_error& e) {
            const std::string what = e.what();
            INFO(what);
            CHECK(what.find((dir / "book" / "manifest.tsv").string() + ":3:") == 0);
            CHECK(what.find(why) != std::string::npos);
        }
    }
}

TEST_CASE("strip_grad_fn removes PyTorch's autograd suffix wherever it stands") {
    CHECK(textbook::strip_grad_fn("tensor([0.3061, 0.8210], grad_fn=<MmBackward0>)") ==
          "tensor([0.3061, 0.8210])");
    CHECK(textbook::strip_grad_fn("tensor([[0.1921],\n        [0.1510]],\n       grad_fn=<SoftmaxBackward0>)") ==
          "tensor([[0.1921],\n        [0.1510]])");
    CHECK(textbook::strip_grad_fn("tensor(4.54)") == "tensor(4.54)");
}

TEST_CASE("numbers_in finds the printed numbers, and the skeleton ignores padding") {
    std::string skel;
    const auto n = textbook::numbers_in(" [[0.2899089        -inf]\n [1.         0.        ]]", &skel);
    REQUIRE(n.size() == 4);
    CHECK(n[0].text == "0.2899089");
    CHECK(std::isinf(n[1].value));
    CHECK(n[1].value < 0);
    CHECK(n[2].text == "1.");
    CHECK(skel == "[[##]\n[##]]");
    CHECK(textbook::numbers_in("x_2 = tensor(1.4901e-08)")[0].value == Approx(1.4901e-08));
}

TEST_CASE("ulp_distance counts float32 steps; two NaNs are equal, a NaN and a number never close") {
    CHECK(attn::ulp_distance(1.0f, 1.0f) == 0);
    CHECK(attn::ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
    CHECK(attn::ulp_distance(-0.0f, 0.0f) == 0);
    CHECK(attn::ulp_distance(std::nextafter(0.0f, -1.0f), std::nextafter(0.0f, 1.0f)) == 2);
    const float max = std::numeric_limits<float>::max(), inf = std::numeric_limits<float>::infinity();
    CHECK(attn::ulp_distance(max, inf) == 1);
    CHECK(attn::ulp_distance(-inf, inf) == 2 * (std::int64_t{0x7f800000}));
    CHECK(attn::ulp_distance(NAN, NAN) == 0);
    CHECK(attn::ulp_distance(NAN, 1.0f) == std::numeric_limits<std::int64_t>::max());
    CHECK(attn::ulp_distance(-1.0f, NAN) == std::numeric_limits<std::int64_t>::max());
    CHECK(attn::max_ulp_distance(attn::tensor({1.0f, NAN}), attn::tensor({std::nextafter(1.0f, 2.0f), NAN})) == 1);
    CHECK_THROWS_AS(attn::max_ulp_distance(attn::tensor({1.0f}), attn::tensor({1.0f, 2.0f})), std::invalid_argument);
}

TEST_CASE("compare: exact needs identical text; ulp:N tolerates the last bits only") {
    textbook::Entry exact;
    exact.check = textbook::Check::parse("exact");
    exact.text = "tensor([0.3061, 0.8210], grad_fn=<MmBackward0>)";
    CHECK(textbook::compare(exact, "tensor([0.3061, 0.8210])").identical);
    const auto off = textbook::compare(exact, "tensor([0.3061, 0.8211])");
    CHECK_FALSE(off.match);
    REQUIRE(off.differences.size() == 1);

    textbook::Entry ulp;
    ulp.check = textbook::Check::parse("ulp:4");
    ulp.text = " [[-0.07389025  0.07128991]]";
    // Debian's torch prints 0.0712899 where the book has 0.07128991: 1 ulp apart.
    const auto near = textbook::compare(ulp, " [[-0.07389025  0.0712899 ]]");
    CHECK(near.match);
    CHECK_FALSE(near.identical);
    CHECK(near.numbers_identical == 1);
    CHECK(near.differences.size() == 1);
    CHECK_FALSE(textbook::compare(ulp, " [[-0.07389025  0.0713    ]]").match);
    CHECK_FALSE(textbook::compare(ulp, " [[-0.07389025]]").match);

    textbook::Entry rel;
    rel.check = textbook::Check::parse("relation:softmax_of_printed_logits");
    rel.text = "tensor([1.])";
    const auto r = textbook::compare(rel, "tensor([1.])");
    CHECK_FALSE(r.text_check);
    CHECK_FALSE(r.match);
}

TEST_CASE("a check is parsed once: kind, detail, and the manifest's spelling back") {
    const auto u = textbook::Check::parse("ulp:4");
    CHECK(u.kind == textbook::Check::Kind::ulp);
    CHECK(u.max_ulp == 4);
    CHECK(u.str() == "ulp:4");
    CHECK(u.compares_text());
    const auto r = textbook::Check::parse("relation:cached_equals_uncached");
    CHECK(r.kind == textbook::Check::Kind::relation);
    CHECK(r.detail == "cached_equals_uncached");
    CHECK_FALSE(r.compares_text());
    CHECK(textbook::Check::parse("exact").str() == "exact");
    for (const char* bad : {"", "ulp:", "ulp:x", "relation:", "unreproducible:", "Exact", "ulp:4 "})
        CHECK_THROWS_AS(textbook::Check::parse(bad), std::invalid_argument);
}

TEST_CASE("every block of data/book occurs verbatim in its notebook") {
    // The sources are part of the project (data/sources/, see its README): no skip.
    const auto book = textbook::Book::load(textbook::data_dir());
    const fs::path sources = textbook::data_dir() / "sources";
    std::size_t checked = 0;
    for (const auto& e : book.entries()) {
        const std::string folder = e.notebook.rfind("raschka", 0) == 0  ? "raschka"
                                   : e.notebook.rfind("oracle", 0) == 0 ? "oracle"
                                                                        : "seeds";
        const fs::path file = sources / folder / e.notebook;
        std::ifstream in(file);
        INFO(e.id << " (" << e.file << ") from " << file);
        REQUIRE(in);
        std::stringstream ss;
        ss << in.rdbuf();
        CHECK(ss.str().find(e.text) != std::string::npos);
        ++checked;
    }
    CHECK(checked == book.entries().size());
    CHECK(checked > 0);
}

TEST_CASE("a verdict names its source: the notebook, or the oracle run") {
    textbook::Entry e;
    e.check = textbook::Check::parse("exact");
    e.text = "tensor([1.])";
    e.notebook = "002_71906f06d162f7d6.txt";
    CHECK(textbook::compare(e, "tensor([1.])").summary() == "identical to the notebook");
    CHECK(textbook::compare(e, "tensor([2.])").summary() == "DIFFERS from the notebook");
    e.notebook = "oracle_19_gradients.txt";
    CHECK(textbook::source_noun(e) == "the oracle run");
    CHECK(textbook::compare(e, "tensor([1.])").summary() == "identical to the oracle run");
    CHECK(textbook::compare(e, "tensor([2.])").summary() == "DIFFERS from the oracle run");
    // An unreproducible entry's reason is read as words, once.
    e.check = textbook::Check::parse("unreproducible:torch_version_of_the_run");
    CHECK(textbook::compare(e, "x").summary() == "not reproducible: torch version of the run");
    // A relation: a notebook's values are unseeded; an oracle run's are seeded (its relation
    // stands for more than the chapter computes), and its verdict must not call them unseeded.
    e.check = textbook::Check::parse("relation:cached_ids_equal_recomputed");
    CHECK(textbook::compare(e, "x").summary().find("unseeded") == std::string::npos);
    e.notebook = "001_ed5ea164135fb843.txt";
    CHECK(textbook::compare(e, "x").summary().rfind("unseeded", 0) == 0);
}

TEST_CASE("wrap_line: the book's own lines fit 100 columns, continued under an indent") {
    const std::string line = ">>> " + std::string(60, 'a') + " " + std::string(30, 'b') + " " + std::string(20, 'c');
    CHECK(textbook::wrap_line(line, ">>>     ") ==
          ">>> " + std::string(60, 'a') + " " + std::string(30, 'b') + "\n>>>     " + std::string(20, 'c') + "\n");
    CHECK(textbook::wrap_line("short", "  ") == "short\n");
    CHECK(textbook::wrap_line(std::string(120, 'x'), "  ") == std::string(120, 'x') + "\n");  // one word
    CHECK(textbook::wrap_line(">>>   number 1: x", ">>>       ") == ">>>   number 1: x\n");  // indent kept
    // Columns, not bytes: 99 middle dots (2 bytes each) and a word fit on one line.
    std::string dots;
    for (int i = 0; i < 95; ++i) dots += "\u00b7";
    CHECK(textbook::wrap_line(dots + " abc", "") == dots + " abc\n");
}

TEST_CASE("a block's header and verdicts fit 100 columns, whatever the relation or reason") {
    const auto book = textbook::Book::load(textbook::data_dir());
    for (const auto& e : book.entries()) {
        textbook::BlockRecord b;
        b.kind = "book";
        b.label = "a label long enough to need a second line on a terminal of one hundred columns, as some are";
        b.sources = {e.id};
        b.text = e.text;
        b.comparisons.push_back(textbook::ComparisonRecord::of(e, textbook::compare(e, e.text + " ")));
        const std::string out = textbook::render_block(b, book, true);
        std::istringstream lines(out);
        std::size_t n = 0;
        for (std::string l; std::getline(lines, l); ++n) {
            if (l.rfind(">>> |", 0) == 0 || e.text.find(l) != std::string::npos) continue;  // printed text
            std::size_t columns = 0;
            for (const char c : l) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
            INFO(e.id << ": " << l);
            CHECK(columns <= textbook::kTerminalColumns);
        }
        CHECK(n > 2);
    }
}

TEST_CASE("the tally on the terminal fits 100 columns, long titles wrapped, counts aligned") {
    textbook::Tally t;
    textbook::TallyRow a, b;
    a.name = "Chapter 12 \u00b7 From three passes to one: online softmax and tiled attention, at length";
    a.identical = 134, a.fresh = 7;
    b.name = "Chapter 4 \u00b7 The -inf mask";
    b.relation = 20;
    t.chapters = {a, b};
    t.sources = {a, b};
    const std::string text = textbook::tally_text(t);
    std::istringstream lines(text);
    std::size_t n = 0, first_of_a = 0;
    std::vector<std::string> all;
    for (std::string l; std::getline(lines, l); ++n) {
        std::size_t columns = 0;
        for (const char c : l) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
        INFO(l);
        CHECK(columns <= textbook::kTerminalColumns);
        if (l.rfind("Chapter 12", 0) == 0 && first_of_a == 0) first_of_a = n;  // the chapters' table
        all.push_back(l);
    }
    REQUIRE(first_of_a > 0);
    CHECK(all[first_of_a].find(" 134") != std::string::npos);  // the counts on the first line
    CHECK(all[first_of_a + 1].rfind("  ", 0) == 0);              // the title continued, indented
    // The counts of both rows end in the same column as their header.
    const std::size_t header_end = all[2].find("identical") + std::string("identical").size();
    const auto ends = [](const std::string& l, const std::string& n) {  // in columns, not bytes
        const std::string upto = l.substr(0, l.find(n) + n.size());
        return static_cast<std::size_t>(std::count_if(upto.begin(), upto.end(), [](char c) {
            return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
    };
    CHECK(ends(all[first_of_a], "134") == header_end);
}

}  // namespace test_book
