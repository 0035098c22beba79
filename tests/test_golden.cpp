// Golden tests: run every chapter program, cut its output into blocks, and compare each
// block that claims a book entry with the notebook's verbatim text (data/book/).
//
// The chapters run with their comparison lines on: the ">>> " footer ends each block.
// The chapter programs come from $ATTN_CHAPTERS (colon-separated paths, in order); the book
// from $ATTN_DATA_DIR. Every exact/ulp entry of a chapter that exists must be printed by it:
// nothing is skipped silently.
#include <array>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "textbook/book.hpp"

namespace {

struct Block {
    std::string header;
    std::string body;
    std::string footer;
};

// Runs a shell command; returns what it printed and its wait status.
std::pair<std::string, int> capture(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    return {out, pclose(pipe)};
}

std::string run(const std::string& command) {
    auto [out, status] = capture(command);
    INFO(command << " exited with status " << status);
    REQUIRE(status == 0);
    return out;
}

// Blocks are "### header", body lines, then one or more ">>> " lines.
std::vector<Block> blocks_of(const std::string& output) {
    std::vector<Block> blocks;
    std::istringstream in(output);
    std::string line;
    Block* current = nullptr;
    bool in_footer = false;
    while (std::getline(in, line)) {
        if (line.rfind("### ", 0) == 0) {
            blocks.push_back({line.substr(4), "", ""});
            current = &blocks.back();
            in_footer = false;
        } else if (current && line.rfind(">>> ", 0) == 0) {
            current->footer += line + "\n";
            in_footer = true;
        } else if (current && !in_footer) {
            current->body += line + "\n";
        } else {
            current = nullptr;
        }
    }
    for (auto& b : blocks)
        if (!b.body.empty()) b.body.pop_back();
    return blocks;
}

std::vector<std::string> chapter_programs() {
    std::vector<std::string> paths;
    const char* env = std::getenv("ATTN_CHAPTERS");
    REQUIRE(env != nullptr);
    std::stringstream ss(env);
    std::string p;
    while (std::getline(ss, p, ':'))
        if (!p.empty()) paths.push_back(p);
    return paths;
}

int chapter_number(const std::string& path) {
    static const std::regex re(R"(chapter_(\d+)_)");
    std::smatch m;
    REQUIRE(std::regex_search(path, m, re));
    return std::stoi(m[1]);
}

}  // namespace

TEST_CASE("every chapter reprints its notebook blocks as the book printed them", "[golden]") {
    const auto book = textbook::Book::load(textbook::data_dir());
    // Catch2 re-enters the test case once per SECTION: run the chapters only the first time.
    static const std::map<int, std::vector<Block>> printed = [] {
        std::map<int, std::vector<Block>> out;
        for (const auto& program : chapter_programs())
            out[chapter_number(program)] = blocks_of(run("'" + program + "'"));
        return out;
    }();

    std::size_t compared = 0, pending = 0;
    for (const auto& entry : book.entries()) {
        const bool text_check = entry.check == "exact" || entry.check.rfind("ulp:", 0) == 0;
        if (!text_check) continue;  // relation entries are checked by their own tests
        const auto chapter = printed.find(entry.chapter);
        if (chapter == printed.end()) {
            ++pending;
            WARN("not reproduced yet: " << entry.id << " (" << entry.what << "): chapter "
                                        << entry.chapter << " is not written");
            continue;
        }
        // The block whose header names this entry's notebook and cell, in manifest order.
        const std::string want = entry.notebook.substr(0, 3) + " " + entry.cell + " · ";
        std::vector<const Block*> candidates;
        for (const auto& b : chapter->second)
            if (b.header.rfind(want, 0) == 0) candidates.push_back(&b);
        SECTION(entry.id) {
            INFO("entry " << entry.id << " (" << entry.what << "), manifest line " << entry.line);
            REQUIRE_FALSE(candidates.empty());
            // Cells with several outputs (-1, -2, ...) are printed in order.
            std::size_t k = 0;
            static const std::regex suffix(R"(-(\d+)$)");
            std::smatch m;
            if (std::regex_search(entry.id, m, suffix) && entry.id.size() > 9) k = std::stoul(m[1]) - 1;
            REQUIRE(k < candidates.size());
            const std::string& ours = candidates[k]->body;
            const auto c = textbook::compare(entry, ours);
            INFO("book:\n" << textbook::strip_grad_fn(entry.text) << "\nours:\n" << ours);
            for (const auto& d : c.differences) INFO(d);
            if (entry.check == "exact") CHECK(ours == textbook::strip_grad_fn(entry.text));
            CHECK(c.match);
        }
        ++compared;
    }
    INFO(compared << " entries compared, " << pending << " pending");
    CHECK(compared > 0);
}

TEST_CASE("a chapter given an unknown flag prints its usage and exits with status 2") {
    for (const auto& program : chapter_programs()) {
        const auto [out, status] = capture("'" + program + "' --no-such-flag 2>&1");
        INFO(program << " printed:\n" << out);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 2);
        CHECK(out.find("Usage:") != std::string::npos);
        CHECK(out.find("--dropout-backend") != std::string::npos);
    }
}

TEST_CASE("every relation of the book has a test named after it; unreproducible entries say why") {
    const auto book = textbook::Book::load(textbook::data_dir());
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
        INFO(entry.id << " (" << entry.what << "): " << entry.check);
        if (entry.check.rfind("relation:", 0) == 0) {
            CHECK(sources.find("TEST_CASE(\"" + entry.check) != std::string::npos);
        } else if (entry.check.rfind("unreproducible:", 0) == 0) {
            // Visible in every test run, with its reason.
            WARN("not reproducible: " << entry.id << " (" << entry.what << "): "
                                      << entry.check.substr(15));
            CHECK(entry.check.size() > 15);
        }
    }
}
