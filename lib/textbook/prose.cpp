#include "textbook/prose.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace textbook {

Page Page::load(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in)
        throw std::runtime_error(file.string() +
                                 ": cannot read the chapter's prose; it is rendered from "
                                 "docs/chapters/ when the project is built (ninja -C build)");
    Page page;
    page.file = file;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        if (j.at("format").get<int>() != 1) throw std::runtime_error("format is not 1");
        page.title = j.at("title").get<std::string>();
        page.intro = j.at("intro").get<std::string>();
        for (const auto& s : j.at("sections"))
            page.sections.push_back({s.at("id").get<std::string>(), s.at("title").get<std::string>(),
                                     s.at("text").get<std::string>()});
    } catch (const std::exception& e) {
        throw std::runtime_error(file.string() + ": malformed rendered page: " + e.what());
    }
    return page;
}

std::size_t Page::index_of(const std::string& id) const {
    for (std::size_t i = 0; i < sections.size(); ++i)
        if (sections[i].id == id) return i;
    throw std::out_of_range(file.string() + ": no section {#..-" + id + "}");
}

std::filesystem::path prose_dir() {
    if (const char* env = std::getenv("ATTN_PROSE_DIR")) return env;
    return ATTN_PROSE_DIR;
}

}  // namespace textbook
