#include "textbook/prose.hpp"

#include "attn/core/text_file.hpp"

#include <cstdlib>
#include <regex>
#include <set>
#include <utility>
#include <vector>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace textbook {

namespace {

constexpr std::size_t max_paragraph_bytes = 8192;

std::string trim_right(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string trim_left_newlines(std::string s) {
    std::size_t i = 0;
    while (i < s.size() && s[i] == '\n') ++i;
    return s.substr(i);
}

// TeX a terminal reader can read as it stands: common commands as their symbols.
std::string plain_math(std::string s) {
    static const std::vector<std::pair<std::regex, std::string>> table = [] {
        const std::vector<std::pair<const char*, const char*>> words = {
            {"dots", "..."}, {"ldots", "..."}, {"cdot", "·"}, {"times", "×"}, {"le", "≤"},
            {"leq", "≤"}, {"ge", "≥"}, {"geq", "≥"}, {"ne", "≠"}, {"in", "∈"}, {"odot", "⊙"},
            {"sum", "Σ"}, {"prod", "Π"}, {"infty", "∞"}, {"to", "→"}, {"approx", "≈"},
            {"alpha", "α"}, {"beta", "β"}, {"omega", "ω"}, {"Omega", "Ω"}, {"ell", "ℓ"},
            {"sqrt", "√"}, {"top", "ᵀ"}, {"qquad", "   "}, {"quad", "  "}, {"left", ""},
            {"right", ""}, {"mathbb", ""}, {"operatorname", ""}, {"text", ""}, {"mathrm", ""},
            {"tilde", "~"}, {"hat", "^"}, {"log", "log"}, {"exp", "exp"}, {"max", "max"}};
        std::vector<std::pair<std::regex, std::string>> t;
        for (const auto& [w, r] : words)
            t.emplace_back(std::regex(std::string("\\\\") + w + "(?![A-Za-z])"), r);
        t.emplace_back(std::regex(R"(\\[,!;:])"), " ");
        return t;
    }();
    for (const auto& [re, r] : table) s = std::regex_replace(s, re, r);
    return s;
}

// Inline markup a terminal cannot show: \f$x\f$ -> x, **b** -> b, [text](url) -> text,
// \ref label "text" -> text.
std::string plain_inline(std::string s) {
    static const std::regex formula(R"(\\f\$(.*?)\\f\$)");
    static const std::regex bold(R"(\*\*(.*?)\*\*)");
    static const std::regex link(R"(\[([^\]]*)\]\([^)]*\))");
    static const std::regex ref(R"(\\ref\s+\S+\s+"([^"]*)\")");
    std::string out;
    auto begin = std::sregex_iterator(s.begin(), s.end(), formula);
    std::size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
        out += s.substr(last, static_cast<std::size_t>(it->position()) - last) + plain_math((*it)[1]);
        last = static_cast<std::size_t>(it->position() + it->length());
    }
    s = out + s.substr(last);
    s = std::regex_replace(s, bold, "$1");
    s = std::regex_replace(s, link, "$1");
    s = std::regex_replace(s, ref, "$1");
    return s;
}

void wrap(std::ostringstream& out, const std::string& text, std::size_t width,
          const std::string& first_indent, const std::string& indent) {
    std::istringstream words(text);
    std::string word, line = first_indent;
    bool empty = true;
    while (words >> word) {
        if (!empty && line.size() + 1 + word.size() > width) {
            out << line << '\n';
            line = indent;
            empty = true;
        }
        line += (empty ? "" : " ") + word;
        empty = false;
    }
    if (!empty) out << line << '\n';
}

}  // namespace

Page Page::load(const std::filesystem::path& file) {
    std::string text;
    try {
        text = attn::read_data_file(file);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) + ": cannot read the chapter's page");
    }
    const auto lines = attn::data_lines(file, text);  // text in LF lines, not cut short
    static const std::regex title_re(R"(^# (.*?)\s*(\{#[A-Za-z0-9_-]+\})?\s*$)");
    static const std::regex section_re(R"(^## (.*?)\s*\{#ch[0-9A-Z]+-([A-Za-z0-9_-]+)\}\s*$)");
    Page page;
    page.file = file;
    std::set<std::string> seen;
    int number = 0;
    std::size_t paragraph = 0;  // bytes of the paragraph this line belongs to
    std::string* body = &page.intro;
    for (const std::string_view view : lines) {
        const std::string line(view);
        ++number;
        // The terminal view matches inline markup with std::regex, which recurses once per
        // character: a paragraph must stay far below what exhausts the stack.
        paragraph = line.empty() ? 0 : paragraph + line.size() + 1;
        if (paragraph > max_paragraph_bytes)
            attn::throw_at(file, number, "the paragraph is longer than " +
                                        std::to_string(max_paragraph_bytes) +
                                        " bytes: break it with a blank line");
        std::smatch m;
        if (page.title.empty()) {
            if (line.empty()) continue;
            if (!std::regex_match(line, m, title_re)) attn::throw_at(file, number, "expected '# Title'");
            page.title = m[1];
            continue;
        }
        if (line.rfind("## ", 0) == 0) {
            if (!std::regex_match(line, m, section_re))
                attn::throw_at(file, number, "a section heading needs a label: '## Title {#chNN-id}'");
            if (!seen.insert(m[2]).second)
                attn::throw_at(file, number, "the section id '" + std::string(m[2]) + "' repeats");
            page.sections.push_back({m[2], m[1], "", number});
            body = &page.sections.back().body;
            continue;
        }
        *body += line + "\n";
    }
    if (page.title.empty()) attn::throw_at(file, number, "the page has no '# Title' line");
    page.intro = trim_right(trim_left_newlines(page.intro));
    for (auto& s : page.sections) s.body = trim_right(trim_left_newlines(s.body));
    return page;
}

std::size_t Page::index_of(const std::string& id) const {
    for (std::size_t i = 0; i < sections.size(); ++i)
        if (sections[i].id == id) return i;
    throw std::out_of_range(file.string() + ": no section {#..-" + id + "}");
}

std::string terminal_text(const std::string& markdown) {
    std::ostringstream out;
    std::istringstream in(markdown);
    std::string line, paragraph, bullet;  // bullet: the list item's marker, if any
    bool in_math = false, in_code = false;
    auto flush = [&] {
        if (!paragraph.empty())
            wrap(out, plain_inline(paragraph), 80, bullet, std::string(bullet.size(), ' '));
        paragraph.clear();
        bullet.clear();
    };
    static const std::regex item_re(R"(^(\s*)([-*]|[0-9]+\.) (.*)$)");
    while (std::getline(in, line)) {
        if (in_code) {
            if (line.rfind("```", 0) == 0) in_code = false;
            else out << "    " << line << '\n';
            continue;
        }
        if (in_math) {
            if (line.find("\\f]") != std::string::npos) in_math = false;
            else {
                const std::size_t start = line.find_first_not_of(' ');
                out << "    " << plain_math(start == std::string::npos ? "" : line.substr(start)) << '\n';
            }
            continue;
        }
        std::smatch m;
        if (line.rfind("```", 0) == 0) {
            flush();
            in_code = true;
        } else if (line.find("\\f[") != std::string::npos) {
            paragraph += line.substr(0, line.find("\\f[")) + " ";
            flush();
            in_math = true;
        } else if (line.rfind("\\image", 0) == 0 || line.rfind("\\snippet", 0) == 0 ||
                   line.rfind("<!--", 0) == 0) {
            continue;
        } else if (line.find_first_not_of(' ') == std::string::npos) {
            flush();
            out << '\n';
        } else if (std::regex_match(line, m, item_re)) {
            flush();
            bullet = m[1].str() + m[2].str() + " ";
            paragraph = m[3].str() + " ";
        } else {
            // A paragraph's next line, or a list item's continuation: joined, then wrapped.
            paragraph += line + " ";
        }
    }
    flush();
    std::string text = out.str();
    // At most one blank line in a row, none at the ends.
    static const std::regex blanks("\n{3,}");
    text = std::regex_replace(text, blanks, "\n\n");
    return trim_right(trim_left_newlines(text));
}

std::filesystem::path prose_dir() {
    if (const char* env = std::getenv("ATTN_PROSE_DIR")) return env;
    return ATTN_PROSE_DIR;
}

}  // namespace textbook
