#include "textbook/book.hpp"

#include "attn/attention/self_attention.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "attn/core/text_file.hpp"
#include "attn/core/ulp.hpp"

namespace textbook {

using namespace attn;

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab - start));
        if (tab == std::string::npos) break;
        start = tab + 1;
    }
    return fields;
}

int parse_int(const std::filesystem::path& file, int line, const std::string& field,
              const std::string& what) {
    std::size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(field, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != field.size() || value < 0)
        attn::throw_at(file, line, what + " must be a non-negative integer, got '" + field + "'");
    return value;
}


}  // namespace

Book Book::load(const std::filesystem::path& data_dir) {
    const std::filesystem::path manifest = data_dir / "book" / "manifest.tsv";
    std::ifstream in(manifest);
    if (!in) throw std::runtime_error(manifest.string() + ": cannot open the book's manifest");
    Book book;
    std::set<std::string> ids;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        attn::require_utf8(manifest, static_cast<std::size_t>(number), line);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        const auto f = split_tabs(line);
        if (f.size() != 9)
            attn::throw_at(manifest, number,
                      "expected 9 tab-separated fields (id notebook cell chapter style precision "
                      "check file what), got " + std::to_string(f.size()));
        for (std::size_t i = 0; i < f.size(); ++i)
            if (f[i].empty()) attn::throw_at(manifest, number, "field " + std::to_string(i + 1) + " is empty");
        Entry e;
        e.line = number;
        e.id = f[0];
        e.notebook = f[1];
        e.cell = f[2];
        e.chapter = f[3];
        static const std::regex chapter_key("[1-9][0-9]*|[A-Z]");
        if (!std::regex_match(e.chapter, chapter_key))
            attn::throw_at(manifest, number, "chapter must be a number or a capital letter, got '" +
                                            e.chapter + "'");
        e.style = f[4];
        if (e.style != "torch" && e.style != "numpy" && e.style != "text")
            attn::throw_at(manifest, number, "style must be torch, numpy or text, got '" + e.style + "'");
        e.precision = f[5] == "-" ? 0 : parse_int(manifest, number, f[5], "precision");
        try {
            e.check = Check::parse(f[6]);
        } catch (const std::invalid_argument& err) {
            attn::throw_at(manifest, number, err.what());
        }
        e.file = f[7];
        e.what = f[8];
        if (!ids.insert(e.id).second) attn::throw_at(manifest, number, "duplicate id '" + e.id + "'");
        const std::filesystem::path block = data_dir / "book" / e.file;
        std::ifstream bin(block, std::ios::binary);
        if (!bin) attn::throw_at(manifest, number, "cannot read block file " + block.string());
        std::ostringstream text;
        text << bin.rdbuf();
        e.text = text.str();
        // A bad byte in a block names the block's own line, not the manifest's.
        attn::require_utf8_lines(block, e.text);
        while (!e.text.empty() && (e.text.back() == '\n' || e.text.back() == '\r'))
            e.text.pop_back();
        if (e.text.empty()) attn::throw_at(manifest, number, "block file " + block.string() + " is empty");
        book.entries_.push_back(std::move(e));
    }
    if (in.bad()) throw std::runtime_error(manifest.string() + ": cannot read the book's manifest");
    if (book.entries_.empty())
        attn::throw_at(manifest, number, "no entries by the end of the file");
    // The sources' titles (file, name, title, about), when the data directory has them.
    const std::filesystem::path titles = data_dir / "sources" / "titles.tsv";
    if (std::ifstream tin{titles}) {
        int n = 0;
        while (std::getline(tin, line)) {
            ++n;
            if (line.empty() || line[0] == '#') continue;
            std::vector<std::string> f;
            std::stringstream ss(line);
            for (std::string field; std::getline(ss, field, '\t');) f.push_back(field);
            if (f.size() != 4) attn::throw_at(titles, n, "expected 4 tab-separated fields (file, name, title, about)");
            book.titles_.emplace_back(f[0], f[1] + " \u00b7 " + f[2]);
        }
    }
    return book;
}

std::string Book::source_title(const std::string& notebook) const {
    for (const auto& [file, title] : titles_)
        if (file == notebook) return title;
    return notebook;
}

const Entry& Book::at(const std::string& id) const {
    for (const auto& e : entries_)
        if (e.id == id) return e;
    throw std::out_of_range("book: no entry with id '" + id + "' in data/book/manifest.tsv");
}

std::string source_name(const Entry& entry) {
    if (entry.notebook == "raschka_ch03.txt") return "Raschka 3";
    if (entry.notebook == "raschka_ch03_exercises.txt") return "Raschka 3 ex.";
    return entry.notebook.substr(0, 3);
}

attn::Tensor inputs() {
    return attn::tensor({{0.43f, 0.15f, 0.89f},   // Your     (x^1)
                         {0.55f, 0.87f, 0.66f},   // journey  (x^2)
                         {0.57f, 0.85f, 0.64f},   // starts   (x^3)
                         {0.22f, 0.58f, 0.33f},   // with     (x^4)
                         {0.77f, 0.25f, 0.10f},   // one      (x^5)
                         {0.05f, 0.80f, 0.55f}});  // step     (x^6)
}

attn::Tensor causal_attention_weights(std::uint64_t seed) {
    const attn::Tensor x = inputs();
    attn::manual_seed(seed);
    const attn::SelfAttention_v2 sa_v2(3, 2);
    const attn::Tensor keys = sa_v2.W_key(x);
    const attn::Tensor attn_scores = attn::matmul(sa_v2.W_query(x), attn::T(keys));
    const std::size_t T = attn_scores.shape()[0];
    const attn::BoolTensor causal_mask = attn::to_bool(attn::triu(attn::ones({T, T}), 1));
    const float d_k = static_cast<float>(keys.shape().back());
    return attn::softmax(attn::Tensor(attn::masked_fill(attn_scores, causal_mask,
                                                        -std::numeric_limits<float>::infinity()) /
                                      std::sqrt(d_k)),
                         -1);
}

std::filesystem::path data_dir() {
    if (const char* env = std::getenv("ATTN_DATA_DIR"); env && *env) return env;
#ifdef ATTN_DATA_DIR
    return ATTN_DATA_DIR;
#else
    return "data";
#endif
}

std::string strip_grad_fn(const std::string& text) {
    // `, grad_fn=<...>` either follows on the same line or wraps onto its own indented line.
    static const std::regex grad_fn(R"(,\s*grad_fn=<[A-Za-z0-9_]+>)");
    return std::regex_replace(text, grad_fn, "");
}

std::vector<Number> numbers_in(const std::string& text, std::string* skeleton) {
    static const std::regex token(
        R"(-?inf|nan|-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)");
    std::vector<Number> out;
    std::string skel;
    auto begin = std::sregex_iterator(text.begin(), text.end(), token);
    std::size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
        const auto& m = *it;
        const std::size_t pos = static_cast<std::size_t>(m.position());
        // A token glued to a letter or underscore is part of a word (e.g. `x_2`, `In`).
        if (pos > 0 && (std::isalpha(static_cast<unsigned char>(text[pos - 1])) || text[pos - 1] == '_'))
            continue;
        skel += text.substr(last, pos - last) + "#";
        last = pos + static_cast<std::size_t>(m.length());
        const std::string s = m.str();
        double v;
        if (s == "inf") v = std::numeric_limits<double>::infinity();
        else if (s == "-inf") v = -std::numeric_limits<double>::infinity();
        else if (s == "nan") v = std::numeric_limits<double>::quiet_NaN();
        else v = std::strtod(s.c_str(), nullptr);
        out.push_back({s, v});
    }
    skel += text.substr(last);
    if (skeleton) {
        // Column padding depends on digit counts, so spaces are not part of the skeleton.
        std::string collapsed;
        for (char c : skel)
            if (c != ' ') collapsed += c;
        *skeleton = collapsed;
    }
    return out;
}

attn::Tensor printed_matrix(const Entry& entry, std::size_t rows, std::size_t cols) {
    const auto numbers = numbers_in(strip_grad_fn(entry.text));
    if (numbers.size() < rows * cols)
        throw std::invalid_argument("book entry " + entry.id + ": expected at least " +
                                    std::to_string(rows * cols) + " printed numbers, got " +
                                    std::to_string(numbers.size()));
    attn::Tensor m = xt::zeros<float>(attn::Shape{rows, cols});
    for (std::size_t i = 0; i < rows * cols; ++i) m.data()[i] = static_cast<float>(numbers[i].value);
    return m;
}

Check Check::parse(const std::string& text) {
    Check c;
    static const std::regex ulp("ulp:([0-9]{1,9})");
    std::smatch m;
    auto with_detail = [&](const char* prefix, Kind kind) {
        const std::size_t n = std::strlen(prefix);
        if (text.rfind(prefix, 0) != 0 || text.size() == n) return false;
        c.kind = kind;
        c.detail = text.substr(n);
        return true;
    };
    if (text == "exact") c.kind = Kind::exact;
    else if (std::regex_match(text, m, ulp)) {
        c.kind = Kind::ulp;
        c.detail = m[1];
        c.max_ulp = std::stoll(c.detail);
    } else if (!with_detail("relation:", Kind::relation) &&
               !with_detail("unreproducible:", Kind::unreproducible))
        throw std::invalid_argument(
            "check must be exact, ulp:N, relation:<name> or unreproducible:<why>, got '" + text + "'");
    return c;
}

std::string Check::kind_name() const {
    switch (kind) {
        case Kind::exact: return "exact";
        case Kind::ulp: return "ulp";
        case Kind::relation: return "relation";
        case Kind::unreproducible: return "unreproducible";
    }
    return "exact";
}

std::string Check::str() const { return kind == Kind::exact ? "exact" : kind_name() + ":" + detail; }

std::string Comparison::summary() const {
    std::ostringstream out;
    if (!text_check && unreproducible_reason.empty())
        out << "not compared as text (the notebook's values are not reproducible; "
               "checked through the relation)";
    else if (!text_check)
        out << "not reproducible: " << unreproducible_reason;
    else if (identical) out << "identical to the notebook";
    else if (match)
        out << numbers_identical << " of " << numbers
            << " printed numbers identical, the rest within tolerance";
    else out << "DIFFERS from the notebook";
    return out.str();
}

Comparison compare(const Entry& entry, const std::string& ours) {
    Comparison c;
    const std::string book = strip_grad_fn(entry.text);
    std::string mine = ours;
    while (!mine.empty() && mine.back() == '\n') mine.pop_back();
    c.identical = book == mine;
    std::string skel_book, skel_mine;
    const auto nb = numbers_in(book, &skel_book);
    const auto nm = numbers_in(mine, &skel_mine);
    c.numbers = nb.size();
    c.text_check = entry.check.compares_text();
    if (entry.check.kind == Check::Kind::unreproducible) c.unreproducible_reason = entry.check.detail;
    if (entry.check.kind == Check::Kind::exact) {
        c.match = c.identical;
        if (!c.identical) {
            // Point at the first differing line so the reader sees where.
            std::istringstream a(book), b(mine);
            std::string la, lb;
            int line = 1;
            while (true) {
                const bool ha = static_cast<bool>(std::getline(a, la));
                const bool hb = static_cast<bool>(std::getline(b, lb));
                if (!ha && !hb) break;
                if (!ha || !hb || la != lb) {
                    c.differences.push_back("line " + std::to_string(line) + ": book '" +
                                            (ha ? la : "<end>") + "', ours '" +
                                            (hb ? lb : "<end>") + "'");
                    break;
                }
                ++line;
            }
        }
        for (std::size_t i = 0; i < std::min(nb.size(), nm.size()); ++i)
            if (nb[i].text == nm[i].text) ++c.numbers_identical;
        return c;
    }
    if (entry.check.kind == Check::Kind::ulp) {
        const long long max_ulp = entry.check.max_ulp;
        if (skel_book != skel_mine || nb.size() != nm.size()) {
            c.differences.push_back("the printed layout differs from the book's (" +
                                    std::to_string(nb.size()) + " numbers in the book, " +
                                    std::to_string(nm.size()) + " in ours)");
            return c;
        }
        c.match = true;
        for (std::size_t i = 0; i < nb.size(); ++i) {
            if (nb[i].text == nm[i].text) {
                ++c.numbers_identical;
                continue;
            }
            const float fb = static_cast<float>(nb[i].value), fm = static_cast<float>(nm[i].value);
            const long long d = attn::ulp_distance(fb, fm);
            const double abs_diff = std::abs(nb[i].value - nm[i].value);
            const bool ok = d <= max_ulp || abs_diff <= 1e-7;
            if (!ok) c.match = false;
            std::ostringstream line;
            line << "number " << (i + 1) << ": ours " << nm[i].text << ", book " << nb[i].text
                 << " (" << d << " ulp" << (ok ? "" : ", over the tolerance") << ")";
            c.differences.push_back(line.str());
        }
        return c;
    }
    // relation:/unreproducible: entries are unseeded or otherwise not comparable as text;
    // the named relation is checked by the tests instead.
    return c;
}

}  // namespace textbook
