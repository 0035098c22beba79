// make_figures: draws the generated book's pictures as SVG, at build time, from the library.
//
// Usage: make_figures <output directory>
//
// Each picture is computed by the same library calls as its chapter (the same seeds, the same
// inputs), or read from the chapter's recorded data (data/benchmarks/), so a picture can never
// show something the code does not do. The figures are registered by docs/figures/<chapter>.cpp
// (figures.hpp). Writes one SVG per figure and `index.tsv` (chapter, step, file, status,
// caption) for docs/tools/bookpages.py:
//   ok      the figure was drawn;
//   absent  its data is not recorded yet: the SVG is a visible note;
//   failed  the library threw: the SVG is a note with the error (the docs test fails on it).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "../figures/figures.hpp"
#include "attn/modules/self_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "textbook/book.hpp"

namespace fs = std::filesystem;

namespace figures {

std::vector<Figure>& all() {
    static std::vector<Figure> registry;
    return registry;
}

Add::Add(std::initializer_list<Figure> figures) {
    for (const auto& f : figures) all().push_back(f);
}

const std::vector<std::string>& tokens() {
    static const std::vector<std::string> words = {"Your", "journey", "starts", "with", "one", "step"};
    return words;
}

svg::HeatmapStyle token_style(const std::string& title) {
    svg::HeatmapStyle style;
    style.title = title;
    style.row_labels = tokens();
    style.col_labels = tokens();
    return style;
}

attn::Tensor v2_scores() {
    const attn::Tensor inputs = textbook::inputs();
    attn::manual_seed(789);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    return attn::matmul(sa_v2.W_query(inputs), attn::T(sa_v2.W_key(inputs)));
}

nlohmann::json read_json(const fs::path& file) {
    std::ifstream in(file);
    if (!in) throw Absent("No results recorded: " + file.filename().string() + " is not in data/" +
                          file.parent_path().filename().string() + "/.");
    std::stringstream text;
    text << in.rdbuf();
    static const std::regex non_finite(R"(:\s*-?(NaN|nan|Infinity|inf)\b)");
    try {
        return nlohmann::json::parse(std::regex_replace(text.str(), non_finite, ": null"));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(file.string() + ": not JSON: " + e.what());
    }
}

}  // namespace figures

namespace {

// Chapters in reading order: numbered ones first, then the appendix and the exercises.
bool before(const figures::Figure& a, const figures::Figure& b) {
    auto key = [](const std::string& c) {
        const bool digits = !c.empty() && std::all_of(c.begin(), c.end(), ::isdigit);
        return std::pair{digits ? 0 : 1, digits ? std::stoi(c) : static_cast<int>(c[0])};
    };
    return key(a.chapter) < key(b.chapter);
}

// The index is tab-separated, one figure per line.
std::string one_line(std::string s) {
    std::replace(s.begin(), s.end(), '\t', ' ');
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: make_figures <output directory>\n";
        return 2;
    }
    const fs::path out = argv[1];
    fs::create_directories(out);
    const figures::Data data{textbook::data_dir()};
    std::vector<figures::Figure> list = figures::all();
    std::stable_sort(list.begin(), list.end(), before);
    std::ofstream index(out / "index.tsv");
    index << "# chapter\tstep\tfile\tstatus\tcaption (written by docs/tools/make_figures)\n";
    for (const auto& fig : list) {
        std::string status = "ok", svg;
        try {
            svg = fig.draw(data);
        } catch (const figures::Absent& e) {
            status = "absent";
            svg = textbook::svg::note("Not drawn yet", e.what());
        } catch (const std::exception& e) {
            status = "failed";
            svg = textbook::svg::note("This figure could not be drawn", std::string("The library threw: ") + e.what());
            std::cerr << "make_figures: " << fig.file << ": " << e.what() << '\n';
        }
        textbook::svg::write_file(out / fig.file, svg);
        index << fig.chapter << '\t' << fig.step << '\t' << fig.file << '\t' << status << '\t'
              << one_line(fig.caption) << '\n';
        std::cout << "make_figures: " << fig.file << ": " << status << '\n';
    }
    if (!index) {
        std::cerr << "make_figures: cannot write " << (out / "index.tsv") << '\n';
        return 1;
    }
    // A figure that fails is shown as a note on its page and fails the docs test, not the build.
    return 0;
}
