#include "textbook/prose.hpp"

#include <cstdlib>
#include <string>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "textbook/text_file.hpp"

namespace textbook {

Page Page::load(const std::filesystem::path& file) {
    std::string text;
    try {
        text = textbook::read_data_file(file);  // refuses a FIFO or a directory before opening it
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) +
                                 ": cannot read the chapter's prose; it is rendered from "
                                 "docs/chapters/ when the project is built (ninja -C build)");
    }
    // Each field must have the type terminal_pages.py writes; an error names its path.
    const auto string_at = [](const nlohmann::json& object, const char* key, const std::string& path) {
        if (!object.is_object()) throw std::runtime_error(path + ": expected an object");
        const auto it = object.find(key);
        if (it == object.end()) throw std::runtime_error(path + "." + key + ": missing");
        if (!it->is_string()) throw std::runtime_error(path + "." + key + ": expected a string, got " + it->dump());
        return it->get<std::string>();
    };
    Page page;
    page.file = file;
    try {
        const nlohmann::json j = nlohmann::json::parse(text);
        if (!j.is_object() || !j.contains("format") || j.at("format") != 1)
            throw std::runtime_error("format: expected 1");
        page.title = string_at(j, "title", "page");
        page.intro = string_at(j, "intro", "page");
        const auto sections = j.find("sections");
        if (sections == j.end() || !sections->is_array())
            throw std::runtime_error("page.sections: expected an array");
        for (std::size_t i = 0; i < sections->size(); ++i) {
            const std::string at = "page.sections[" + std::to_string(i) + "]";
            const auto& s = (*sections)[i];
            page.sections.push_back({string_at(s, "id", at), string_at(s, "title", at), string_at(s, "text", at)});
        }
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
