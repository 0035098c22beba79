// make_figures: draws the generated book's pictures as SVG, at build time, from what the
// chapters recorded.
//
// Usage: make_figures <records directory> <output directory>
//
// The records directory holds each chapter's record (`<name>.json`, written by the chapter
// with --record when the pages are built, lib/textbook/record.hpp). Each picture draws what
// its chapter printed, or recorded with a block for it, or the recorded benchmarks
// (data/benchmarks/), so a picture can never show something the chapter did not. The figures
// are registered by docs/figures/<chapter>.cpp (figures.hpp). Writes two SVGs per figure, one
// at its own width for a window and `<name>.narrow.svg` for a phone (drawn under
// svg::MaxWidth(kPhoneWidth)), and `index.tsv` (chapter, step, file, status, caption) for docs/tools/bookpages.py:
//   ok      the figure was drawn;
//   absent  its data is not recorded yet: the SVG is a visible note;
//   failed  it could not be drawn (no record of its chapter, a block it reads is missing):
//           the SVG is a note with the error (the docs test fails on it).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "../figures/figures.hpp"
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

const textbook::BlockRecord& Data::block(const std::string& key) const {
    if (!record) throw std::runtime_error("no chapter record to read the block '" + key + "' from");
    const textbook::BlockRecord* found = nullptr;
    std::size_t matches = 0;
    for (const auto& b : record->blocks) {
        const bool source = std::find(b.sources.begin(), b.sources.end(), key) != b.sources.end();
        const bool label = b.label.size() >= key.size() && b.label.compare(b.label.size() - key.size(), key.size(), key) == 0;
        if (source || label) found = &b, ++matches;
    }
    if (matches != 1)
        throw std::runtime_error("chapter " + record->chapter + " printed " + (matches ? "several blocks" : "no block") +
                                 " named '" + key + "'");
    return *found;
}

namespace {

attn::Tensor of_shape(const std::vector<double>& values, const attn::Shape& shape, const std::string& what) {
    attn::Tensor t = attn::Tensor::from_shape(shape);
    if (values.size() < t.size())
        throw std::runtime_error(what + ": " + std::to_string(values.size()) + " values for " +
                                 std::to_string(t.size()) + " elements");
    std::copy(values.begin(), values.begin() + static_cast<long>(t.size()), t.begin());
    return t;
}

}  // namespace

attn::Tensor Data::printed(const std::string& key, const attn::Shape& shape, std::size_t skip) const {
    std::vector<double> values;
    for (const auto& n : textbook::numbers_in(block(key).text)) values.push_back(n.value);
    values.erase(values.begin(), values.begin() + static_cast<long>(std::min(skip, values.size())));
    return of_shape(values, shape, "the block '" + key + "' of chapter " + record->chapter);
}

attn::Tensor Data::printed_bools(const std::string& key, const attn::Shape& shape) const {
    static const std::regex word(R"(\b(True|False)\b)");
    const std::string& text = block(key).text;
    std::vector<double> values;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it)
        values.push_back((*it)[1] == "True" ? 1.0 : 0.0);
    return of_shape(values, shape, "the block '" + key + "' of chapter " + record->chapter);
}

attn::Tensor Data::tensor(const std::string& key, const std::string& name) const {
    for (const auto& t : block(key).tensors)
        if (t.name == name) return t.tensor();
    throw std::runtime_error("chapter " + record->chapter + " recorded no tensor '" + name + "' with the block '" +
                             key + "'");
}

std::pair<double, double> finite_range(const attn::Tensor& m) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const float v : m)
        if (std::isfinite(v)) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
    if (lo > hi) throw std::runtime_error("a figure's matrix holds no finite value");
    return {lo, hi};
}

std::vector<std::pair<std::string, std::string>> labelled(const std::string& text) {
    std::vector<std::pair<std::string, std::string>> rows;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t gap = line.find("  ");
        const std::size_t start = gap == std::string::npos ? gap : line.find_first_not_of(' ', gap);
        rows.emplace_back(line.substr(0, gap), start == std::string::npos ? "" : line.substr(start));
    }
    return rows;
}

std::string report_text(const std::string& report, const std::string& key) {
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string k = line.substr(0, colon);
        k.erase(k.find_last_not_of(' ') + 1);
        if (k == key) return line.substr(line.find_first_not_of(' ', colon + 1) == std::string::npos
                                             ? line.size() : line.find_first_not_of(' ', colon + 1));
    }
    throw std::runtime_error("the report has no line '" + key + "'");
}

double report_value(const std::string& report, const std::string& key) {
    std::string value = report_text(report, key);
    value.erase(std::remove(value.begin(), value.end(), ','), value.end());
    const auto numbers = textbook::numbers_in(value);
    if (numbers.empty()) throw std::runtime_error("the report's '" + key + "' is no number: " + value);
    return numbers.front().value;
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

// A phone's column: 358 CSS px in a 390-px Chromium window (docs/test_phone.py measures it;
// figurepages.NARROW_MAX_PX is the most a narrow figure may be), less a margin.
constexpr double kPhoneWidth = 340;

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
    if (argc != 3) {
        std::cerr << "usage: make_figures <records directory> <output directory>\n";
        return 2;
    }
    const fs::path records_dir = argv[1], out = argv[2];
    fs::create_directories(out);
    // Every chapter's record, by its manifest key (`3`, `A`).
    std::map<std::string, textbook::ChapterRecord> records;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(records_dir, error)) {
        if (entry.path().extension() != ".json") continue;
        try {
            auto record = textbook::ChapterRecord::load(entry.path());
            const std::string key = record.key;
            records.emplace(key, std::move(record));
        } catch (const std::exception& e) {
            std::cerr << "make_figures: " << e.what() << '\n';  // its figures fail below
        }
    }
    if (error) {
        std::cerr << "make_figures: cannot read " << records_dir << ": " << error.message() << '\n';
        return 1;
    }
    std::vector<figures::Figure> list = figures::all();
    std::stable_sort(list.begin(), list.end(), before);
    std::ofstream index(out / "index.tsv");
    index << "# chapter\tstep\tfile\tstatus\tcaption (written by docs/tools/make_figures)\n";
    for (const auto& fig : list) {
        std::string status = "ok", svg, narrow;
        figures::Data data{textbook::data_dir()};
        if (const auto r = records.find(fig.chapter); r != records.end()) data.record = &r->second;
        try {
            if (!data.record) throw std::runtime_error("no record of chapter " + fig.chapter + " in " + records_dir.string());
            svg = fig.draw(data);
            const textbook::svg::MaxWidth phone(kPhoneWidth);
            narrow = fig.draw(data);
        } catch (const figures::Absent& e) {
            status = "absent";
            svg = textbook::svg::note("Not drawn yet", e.what());
        } catch (const std::exception& e) {
            status = "failed";
            svg = textbook::svg::note("This figure could not be drawn", e.what());
            std::cerr << "make_figures: " << fig.file << ": " << e.what() << '\n';
        }
        textbook::svg::write_file(out / fig.file, svg);
        textbook::svg::write_file(out / fs::path(fig.file).replace_extension(".narrow.svg"), narrow.empty() ? svg : narrow);
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
