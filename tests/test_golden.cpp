// Golden tests: run every chapter program with --record, read the records (textbook/record.hpp)
// and compare each block that claims a book entry with the notebook's verbatim text
// (data/book/). Nothing here parses a chapter's human-readable output.
//
// The chapter programs come from $ATTN_CHAPTERS (colon-separated paths, in reading order);
// the book from $ATTN_DATA_DIR. Every exact/ulp entry must be printed by the chapter its
// manifest line names: nothing is skipped silently.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "support.hpp"
#include "textbook/record.hpp"

namespace test_golden {  // every test file is a namespace of its own (tests/meson.build)

namespace {

// Runs a shell command; returns what it printed on stdout and its wait status.
std::pair<std::string, int> capture(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    return {out, pclose(pipe)};
}

std::vector<std::string> chapter_programs() {
    std::vector<std::string> paths;
    const char* env = std::getenv("ATTN_CHAPTERS");
    REQUIRE(env != nullptr);
    std::stringstream ss(env);
    std::string p;
    while (std::getline(ss, p, ':'))
        if (!p.empty()) paths.push_back(p);
    REQUIRE_FALSE(paths.empty());
    return paths;
}

// Every chapter's record, by its manifest key (`3`, `A`), from one run each.
const std::map<std::string, textbook::ChapterRecord>& records() {
    static const std::map<std::string, textbook::ChapterRecord> all = [] {
        std::map<std::string, textbook::ChapterRecord> by_key;
        const auto dir = std::filesystem::temp_directory_path() /
                         ("attn_golden_" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        for (const auto& program : chapter_programs()) {
            const auto file = dir / (std::filesystem::path(program).filename().string() + ".json");
            const auto captured = capture("'" + program + "' --quick --record='" + file.string() + "'");
            const std::string& out = captured.first;
            const int status = captured.second;
            INFO(program << " exited with status " << status << " after printing:\n" << out);
            REQUIRE(status == 0);
            auto record = textbook::ChapterRecord::load(file);
            // A chapter whose whole run is too long for the tests ran --quick: the blocks it left
            // out come from the recording of its whole run (data/recordings/; the docs build
            // checks that the quick run agrees with it, CI runs it whole again).
            const auto recording = textbook::data_dir() / "recordings" /
                                   (std::filesystem::path(program).filename().string() + ".json");
            if (record.quick && std::filesystem::is_regular_file(recording))
                for (auto& b : textbook::ChapterRecord::load(recording).blocks) {
                    bool printed = false;
                    for (const auto& mine : record.blocks) printed = printed || mine.sources == b.sources;
                    if (!printed) record.blocks.push_back(std::move(b));
                }
            const std::string key = record.key;
            by_key.emplace(key, std::move(record));
        }
        std::filesystem::remove_all(dir);
        return by_key;
    }();
    return all;
}

}  // namespace

TEST_CASE("every chapter reprints its notebook blocks as the book printed them") {
    const auto& book = test::the_book();
    std::size_t compared = 0;
    for (const auto& entry : book.entries()) {
        if (!entry.check.compares_text()) continue;  // relations are checked by their own tests
        SECTION(entry.id) {
            INFO("entry " << entry.id << " (" << entry.what << "), manifest line " << entry.line);
            const auto chapter = records().find(entry.chapter);
            REQUIRE(chapter != records().end());
            const textbook::BlockRecord* block = nullptr;
            for (const auto& b : chapter->second.blocks)
                for (const auto& s : b.sources)
                    if (s == entry.id && !block) block = &b;
            INFO("chapter " << entry.chapter << " must print a block whose sources name it");
            REQUIRE(block != nullptr);
            const auto c = textbook::compare(entry, block->text);
            INFO("book:\n" << textbook::strip_grad_fn(entry.text) << "\nours:\n" << block->text);
            for (const auto& d : c.differences) INFO(d);
            // identical as compare() has it: byte for byte but the block's trailing whitespace,
            // which the exports lost (his `print(text_data[:99])` ends in a space)
            if (entry.check.kind == textbook::Check::Kind::exact) CHECK(c.identical);
            CHECK(c.match);
            // The record says what the comparison found, as the reader saw it.
            bool recorded = false;
            for (const auto& r : block->comparisons)
                if (r.entry == entry.id) {
                    recorded = true;
                    CHECK(r.result == (c.identical ? "identical" : "within_ulp"));
                }
            CHECK(recorded);
        }
        ++compared;
    }
    CHECK(compared > 0);
}

TEST_CASE("every block of every record names book entries that exist, or is new") {
    const auto& book = test::the_book();
    for (const auto& [key, record] : records()) {
        for (const auto& b : record.blocks) {
            INFO("chapter " << key << ", block '" << b.label << "'");
            CHECK_FALSE(b.label.empty());
            CHECK((b.kind == "new" || b.kind == "book"));
            CHECK(b.sources.size() == b.comparisons.size());
            CHECK((b.kind == "new") == b.sources.empty());
            for (const auto& s : b.sources) CHECK_NOTHROW(book.at(s));
            CHECK_FALSE(b.differs());
        }
    }
}

TEST_CASE("a chapter given an unknown flag prints its usage and exits with status 2") {
    for (const auto& program : chapter_programs()) {
        const auto captured = capture("'" + program + "' --no-such-flag 2>&1");
        const std::string& out = captured.first;
        const int status = captured.second;
        INFO(program << " printed:\n" << out);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 2);
        CHECK(out.find("Usage:") != std::string::npos);
        CHECK(out.find("--record") != std::string::npos);
    }
}

TEST_CASE("with another --seed, seeded blocks differ as expected and the chapter exits 0") {
    std::string program;
    for (const auto& p : chapter_programs())
        if (p.find("chapter_03_simple_mask") != std::string::npos) program = p;
    REQUIRE_FALSE(program.empty());
    const auto file = std::filesystem::temp_directory_path() /
                      ("attn_seed_" + std::to_string(::getpid()) + ".json");
    const auto captured = capture("'" + program + "' --seed=1 --record='" + file.string() + "'");
    const std::string& out = captured.first;
    const int status = captured.second;
    INFO("the chapter printed:\n" << out);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    const auto record = textbook::ChapterRecord::load(file);
    std::filesystem::remove(file);
    std::size_t expected = 0, identical = 0;
    for (const auto& b : record.blocks)
        for (const auto& c : b.comparisons) {
            expected += c.result == "differs_expected";
            identical += c.result == "identical";
            CHECK(c.result != "differs");
        }
    CHECK(expected > 0);   // the seeded weights changed
    CHECK(identical > 0);  // the mask and the shapes did not
}

TEST_CASE("a chapter whose data is missing says so in one line and exits with status 1") {
    const auto program = chapter_programs().front();
    const auto captured = capture("ATTN_DATA_DIR=/nonexistent '" + program + "' 2>&1 >/dev/null");
    const std::string& out = captured.first;
    const int status = captured.second;
    INFO(out);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    CHECK(out.find("/nonexistent") != std::string::npos);
    CHECK(out.find("terminate") == std::string::npos);
}

TEST_CASE("every relation of the book has a test named after it; unreproducible entries say why") {
    const auto& book = test::the_book();
    const char* tests_dir = std::getenv("ATTN_TESTS_DIR");
    REQUIRE(tests_dir != nullptr);
    std::string sources;
    for (const auto& f : std::filesystem::directory_iterator(tests_dir)) {
        if (f.path().extension() != ".cpp") continue;
        std::ifstream in(f.path());
        std::stringstream ss;
        ss << in.rdbuf();
        sources += ss.str();
    }
    for (const auto& entry : book.entries()) {
        INFO(entry.id << " (" << entry.what << "): " << entry.check.str());
        if (entry.check.kind == textbook::Check::Kind::relation) {
            CHECK(sources.find("TEST_CASE(\"" + entry.check.str()) != std::string::npos);
        } else if (entry.check.kind == textbook::Check::Kind::unreproducible) {
            // Visible in every test run, with its reason.
            WARN("not reproducible: " << entry.id << " (" << entry.what << "): " << entry.check.detail);
            CHECK_FALSE(entry.check.detail.empty());
        }
    }
}

namespace {

// The text of a chapter's block whose label starts with `label`.
std::string block_text(const std::string& chapter, const std::string& label) {
    const auto rec = records().find(chapter);
    REQUIRE(rec != records().end());
    for (const auto& b : rec->second.blocks)
        if (b.label.rfind(label, 0) == 0) return b.text;
    FAIL("chapter " << chapter << " has no block labelled '" << label << "...'");
    return {};
}

}  // namespace

TEST_CASE("chapter 12's tiled forward of the book's module prints as Raschka's In [36] (and as chapter 7)") {
    // The expected text is the book's: Raschka's printed MultiHeadAttention output.
    const std::string book = test::book_text("rch03-In36");
    CHECK(block_text("7", "(b) context_vecs = mha(batch)") == book);
    CHECK(block_text("12", "(b) context_vecs = mha(batch), tiled") == book);
    CHECK(block_text("11", "(b) context_vecs = mha(batch)") == book);
}

}  // namespace test_golden
