#include "textbook/record.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace textbook {

namespace {

using nlohmann::json;

json to_json(const ComparisonRecord& c) {
    return {{"entry", c.entry},
            {"check", {{"kind", c.check.kind_name()}, {"detail", c.check.detail}}},
            {"result", c.result},
            {"summary", c.summary},
            {"differences", c.differences},
            {"numbers", c.numbers},
            {"numbers_identical", c.numbers_identical}};
}

json to_json(const BlockRecord& b) {
    json comparisons = json::array();
    for (const auto& c : b.comparisons) comparisons.push_back(to_json(c));
    return {{"step", b.step},   {"label", b.label}, {"kind", b.kind},
            {"sources", b.sources}, {"style", b.style}, {"text", b.text},
            {"comparisons", comparisons}};
}

}  // namespace

ComparisonRecord ComparisonRecord::of(const Entry& entry, const Comparison& c) {
    ComparisonRecord r;
    r.entry = entry.id;
    r.check = entry.check;
    if (entry.check.kind == Check::Kind::relation) r.result = "relation";
    else if (entry.check.kind == Check::Kind::unreproducible) r.result = "unreproducible";
    else if (c.identical) r.result = "identical";
    else if (c.match) r.result = "within_ulp";
    else r.result = "differs";
    r.summary = c.summary();
    r.differences = c.differences;
    r.numbers = c.numbers;
    r.numbers_identical = c.numbers_identical;
    return r;
}

bool BlockRecord::differs() const {
    for (const auto& c : comparisons)
        if (c.result == "differs") return true;
    return false;
}

void ChapterRecord::save(const std::filesystem::path& file) const {
    json blocks_json = json::array();
    for (const auto& b : blocks) blocks_json.push_back(to_json(b));
    const json j = {{"format", format},
                    {"chapter", chapter},
                    {"key", key},
                    {"title", title},
                    {"options", {{"backend", backend}, {"compare", compare},
                                 {"seed", seed_option ? json(*seed_option) : json(nullptr)}}},
                    {"seeds", seeds},
                    {"blocks", blocks_json}};
    std::ofstream out(file);
    out << j.dump(2) << '\n';
    out.close();
    if (!out) throw std::runtime_error(file.string() + ": cannot write the chapter's record");
}

ChapterRecord ChapterRecord::load(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error(file.string() + ": cannot read the chapter's record");
    try {
        const json j = json::parse(in);
        ChapterRecord r;
        r.format = j.at("format").get<int>();
        if (r.format != 1)
            throw std::runtime_error("format " + std::to_string(r.format) + " is not 1");
        r.chapter = j.at("chapter").get<std::string>();
        r.key = j.at("key").get<std::string>();
        r.title = j.at("title").get<std::string>();
        r.backend = j.at("options").at("backend").get<std::string>();
        r.compare = j.at("options").at("compare").get<bool>();
        if (const auto& o = j.at("options"); o.contains("seed") && !o.at("seed").is_null())
            r.seed_option = o.at("seed").get<std::uint64_t>();
        if (j.contains("seeds")) r.seeds = j.at("seeds").get<std::vector<std::uint64_t>>();
        for (const auto& jb : j.at("blocks")) {
            BlockRecord b;
            b.step = jb.at("step").get<std::string>();
            b.label = jb.at("label").get<std::string>();
            b.kind = jb.at("kind").get<std::string>();
            b.sources = jb.at("sources").get<std::vector<std::string>>();
            b.style = jb.at("style").get<std::string>();
            b.text = jb.at("text").get<std::string>();
            for (const auto& jc : jb.at("comparisons")) {
                ComparisonRecord c;
                c.entry = jc.at("entry").get<std::string>();
                const auto& check = jc.at("check");
                const std::string kind = check.at("kind").get<std::string>();
                const std::string detail = check.at("detail").get<std::string>();
                c.check = Check::parse(kind == "exact" ? kind : kind + ":" + detail);
                c.result = jc.at("result").get<std::string>();
                c.summary = jc.at("summary").get<std::string>();
                c.differences = jc.at("differences").get<std::vector<std::string>>();
                c.numbers = jc.at("numbers").get<std::size_t>();
                c.numbers_identical = jc.at("numbers_identical").get<std::size_t>();
                b.comparisons.push_back(std::move(c));
            }
            r.blocks.push_back(std::move(b));
        }
        return r;
    } catch (const std::exception& e) {
        throw std::runtime_error(file.string() + ": malformed chapter record: " + e.what());
    }
}

std::string render_block(const BlockRecord& block, const Book& book, bool compare) {
    std::ostringstream out;
    out << "### ";
    if (block.kind == "new") out << "new";
    for (std::size_t i = 0; i < block.sources.size(); ++i) {
        const Entry& e = book.at(block.sources[i]);
        out << (i ? ", " : "") << source_name(e) << ' ' << e.cell;
    }
    out << " · " << block.label << '\n' << block.text << '\n';
    if (compare) {
        for (const auto& c : block.comparisons) {
            const Entry& e = book.at(c.entry);
            out << ">>> " << e.id << " (" << e.style << ", " << e.check.str()
                << "): " << c.summary << '\n';
            for (const auto& d : c.differences) out << ">>>   " << d << '\n';
            if (!e.check.compares_text()) {
                // Unseeded: show what the notebook printed, so the two can be set side by side.
                out << ">>> the notebook printed:\n";
                std::istringstream lines(strip_grad_fn(e.text));
                std::string l;
                while (std::getline(lines, l)) out << ">>> | " << l << '\n';
            }
        }
    }
    return out.str();
}

}  // namespace textbook
